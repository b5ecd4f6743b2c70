import Foundation
import GNSSCore
import Testing

@testable import LocationCore

/// The broker's compact reader (`CompactJSON`) against Foundation's `JSONDecoder`, which it stands
/// in front of: whatever it accepts it must read as the decoder does, it must accept every line
/// the protocol writes (or it saves nothing), and `BrokerMessage` must answer as the decoder alone
/// would for every input, accepted or not.
@Suite("the broker's compact JSON reader reads as JSONDecoder does")
struct CompactJSONTests {
    private static func decoded(_ bytes: [UInt8]) -> [String: JSONValue]? {
        try? JSONDecoder().decode([String: JSONValue].self, from: Data(bytes))
    }
    private static func compact(_ bytes: [UInt8]) -> [String: JSONValue]? {
        bytes.withUnsafeBufferPointer(CompactJSON.object)
    }

    /// Equal as values, numbers bit for bit (-0 is not 0).
    private static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.number(let x), .number(let y)): x.bitPattern == y.bitPattern
        case (.string(let x), .string(let y)): x == y
        case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy(same)
        case (.object(let x), .object(let y)): same(x, y)
        default: false
        }
    }
    private static func same(_ a: [String: JSONValue], _ b: [String: JSONValue]) -> Bool {
        a.count == b.count && a.allSatisfy { key, value in b[key].map { same(value, $0) } ?? false }
    }

    /// Every kind of line the protocol writes from gpsd's reports.
    private static var protocolLines: [String] {
        let fix = Fix(
            mode: .threeDimensional, quality: .dgps, time: Date(timeIntervalSince1970: 1_781_510_719.6),
            latitude: 51.445684703, longitude: -2.541508123, altitudeHAE: 108.3, altitudeMSL: 60.1,
            geoidSeparation: 48.2,
            errors: FixErrors(
                time: 0.005, longitude: 6.797, latitude: 8.767, horizontal: 18.05, vertical: 27.6, speed: 175.34,
                course: nil, climb: 552),
            speed: 11.58, course: 108.38, climb: -21, magneticVariation: -1, device: "/dev/ttyACM0")
        let sky = SkyView(
            time: Date(timeIntervalSince1970: 1_781_510_719),
            satellites: (1...40).map { prn in
                Satellite(
                    prn: prn, constellation: .gps, satelliteID: prn, signalToNoise: Double(prn) + 0.5,
                    elevation: Double(prn * 2), azimuth: Double(prn * 9), used: prn % 3 == 0)
            },
            dilution: DilutionOfPrecision(
                x: 0.8, y: 0.9, position: 1.6, horizontal: 0.95, vertical: 1.3, time: 0.7, geometric: 1.9))
        let events: [LocationSourceEvent] = [
            .fix(fix), .fix(Fix(mode: .noFix)),
            .errorEstimate(
                ReceiverErrorEstimate(
                    time: Date(timeIntervalSince1970: 1_781_510_719.6), latitude: 1.5, longitude: 1.4, altitude: 2.8)),
            .sky(sky),
            .heading(
                HeadingReading(
                    trueHeading: 359.9, magneticHeading: 1.2, magneticVariation: -1.5, device: "/dev/ttyUSB0")),
            .device(DeviceEvent(path: "/dev/ttyACM0", driver: "u-blox", activated: true, baudRate: 38400, cycle: 1)),
            .device(DeviceEvent(path: "/dev/tty \"quoted\" \\ é", driver: nil, activated: false)),
            .problem(
                CLError(.locationUnknown, message: "gpsd at 127.0.0.1:2947 is not reachable — start it"),
                terminal: false),
        ]
        return events.map { BrokerProtocol.line(for: $0, words: .said) }.map { String($0.dropLast()) }
    }

    @Test("the protocol's own lines are read without the decoder, and as the decoder reads them")
    func protocolLinesAreCompact() throws {
        for line in Self.protocolLines {
            let bytes = Array(line.utf8)
            let expected = try #require(Self.decoded(bytes), "\(line)")
            if line.contains("\\") {
                // A string with an escape goes to the decoder.
                #expect(Self.compact(bytes) == nil)
            } else {
                let compact = try #require(Self.compact(bytes), "not compact: \(line)")
                #expect(Self.same(compact, expected), "\(line)")
            }
        }
    }

    @Test("hand-made edges: accepted only as the decoder reads them; BrokerMessage answers as the decoder")
    func edges() {
        let lines = [
            #"{"class":"X"}"#, #"{}"#, #"{"class":"X","a":[]}"#, #"{"class":"X","a":{}}"#,
            #"{"class":"X","n":0}"#, #"{"class":"X","n":-0}"#, #"{"class":"X","n":-0.0}"#, #"{"class":"X","n":1e5}"#,
            #"{"class":"X","n":1E-5}"#, #"{"class":"X","n":2.5e+3}"#, #"{"class":"X","n":0.1}"#,
            #"{"class":"X","n":123456789012345678901234567890}"#, #"{"class":"X","n":1e400}"#,
            #"{"class":"X","n":-1e400}"#,
            #"{"class":"X","n":4.9e-324}"#, #"{"class":"X","n":1e-400}"#, #"{"class":"X","n":0e-400}"#,
            #"{"class":"X","n":-0.000e5}"#, #"{"class":"X","n":1234567890123456789012345678901234567890.5}"#,
            #"{"class":"X","n":2e-324}"#, #"{"class":"X","n":3e-324}"#,
            #"{"class":"X","n":01}"#,
            #"{"class":"X","n":1.}"#, #"{"class":"X","n":.5}"#, #"{"class":"X","n":-}"#, #"{"class":"X","n":+1}"#,
            #"{"class":"X","n":1e}"#, #"{"class":"X","n":0x10}"#, #"{"class":"X","n":NaN}"#,
            #"{"class":"X","n":Infinity}"#,
            #"{"class":"X","b":true,"c":false,"d":null}"#, #"{"class":"X","b":tru}"#, #"{"class":"X","b":truex}"#,
            #"{"class":"X","s":"é ✓ 𝄞"}"#, #"{"class":"X","s":"a\"b"}"#, #"{"class":"X","s":"\u00e9"}"#,
            #"{"class":"X","a":1,"a":2}"#, #"{"class":"X" ,"a":1}"#, #"{ "class":"X"}"#, #"{"class":"X"} "#,
            #"{"class":"X"}x"#, #"{"class":"X""#, #"{"class":"X","#, #"{"class":"X",}"#, #"{"class":"X","a":[1,]}"#,
            #"{"class":"X","a":[1,2,[3,[4,{"b":[true]}]]]}"#, #"[1,2]"#, #""class""#, "", "{",
            #"{"class":1}"#, #"{"class":"X","k\"":1}"#, #"{"class":"X","a":"#,
            #"{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":1}}}}}}}}"#,
            #"{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}}}}}}}}}"#,
            String(repeating: "[", count: 40) + String(repeating: "]", count: 40),
        ]
        var inputs = lines.map { Array($0.utf8) }
        inputs.append(Array(#"{"class":"X","s":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8))  // invalid UTF-8
        inputs.append(Array(#"{"class":"X","s":""#.utf8) + [0x01] + Array(#""}"#.utf8))  // a control character
        inputs.append(Array(#"{"class":"X","s":""#.utf8) + [0xC3] + Array(#""}"#.utf8))  // a cut sequence
        for bytes in inputs { Self.check(bytes) }
        // The deepest this reader goes is read here; one level more goes to the decoder.
        #expect(Self.compact(Array(lines[lines.count - 3].utf8)) != nil)
        #expect(Self.compact(Array(lines[lines.count - 2].utf8)) == nil)
        #expect(BrokerMessage(line: Array(#"{"class":"X","n":-0}"#.utf8))?.double("n")?.sign == .minus)
        // A number longer than any the protocol writes goes to the decoder.
        #expect(Self.compact(Array(#"{"class":"X","n":1234567890123456789012345678901234567890.5}"#.utf8)) == nil)
    }

    @Test("every protocol line with one byte changed, inserted or cut: the same answers as the decoder")
    func mutated() {
        var generator = SplitMix64(seed: 50)
        let alphabet = Array(#"{}[]",:0123456789.eE+-tfnulrsa\ "#.utf8) + [0x00, 0x1F, 0x80, 0xC3, 0xFF]
        var accepted = 0
        for line in Self.protocolLines {
            let original = Array(line.utf8)
            for _ in 0..<300 {
                var bytes = original
                let position = Int(generator.next() % UInt64(bytes.count))
                let byte = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                switch generator.next() % 3 {
                case 0: bytes[position] = byte
                case 1: bytes.insert(byte, at: position)
                default: bytes.removeSubrange(position..<min(bytes.count, position + 1 + Int(generator.next() % 4)))
                }
                if Self.check(bytes) { accepted += 1 }
            }
        }
        // Most changes (a digit for a digit, a letter in a string) still read compactly.
        #expect(accepted > 500)
    }

    /// The compact reader agrees with the decoder where it answers, and `BrokerMessage` with the
    /// decoder always. True when the compact reader answered.
    @discardableResult private static func check(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation)
        -> Bool
    {
        let expected = decoded(bytes)
        let text = String(decoding: bytes, as: UTF8.self)
        let compact = compact(bytes)
        if let compact {
            #expect(
                expected.map { same(compact, $0) } == true, "compact read differs: \(text)",
                sourceLocation: sourceLocation)
        }
        let message = BrokerMessage(line: bytes)
        let expectedMessage: [String: JSONValue]? =
            if let expected, case .string = expected["class"] { expected } else { nil }
        #expect(
            (message?.fields).map { fields in expectedMessage.map { same(fields, $0) } ?? false }
                ?? (expectedMessage == nil),
            "BrokerMessage differs: \(text)", sourceLocation: sourceLocation)
        return compact != nil
    }
}

/// `BrokerLine` writes into a byte buffer since 0.13.5; every line is byte for byte what the
/// string interpolation it replaced wrote (kept here as the reference).
@Suite("BrokerLine: the same bytes as before")
struct BrokerLineTests {
    /// The writer before 0.13.5, verbatim in behaviour.
    struct Reference {
        var text: String
        init(_ messageClass: String) { text = "{\"class\":\"\(messageClass)\"" }
        mutating func add(_ key: String, _ value: String?) {
            guard let value else { return }
            text += ",\"\(key)\":\""
            for scalar in value.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\r": text += "\\r"
                case "\t": text += "\\t"
                case _ where scalar.value < 0x20:
                    text += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
                default: text.unicodeScalars.append(scalar)
                }
            }
            text += "\""
        }
        mutating func add(_ key: String, _ value: Double?) {
            guard let value, value.isFinite else { return }
            text += ",\"\(key)\":\(value)"
        }
        mutating func add(_ key: String, _ value: Int?) {
            guard let value else { return }
            text += ",\"\(key)\":\(value)"
        }
        mutating func add(_ key: String, _ value: Bool?) {
            guard let value else { return }
            text += ",\"\(key)\":\(value)"
        }
        mutating func addRaw(_ key: String, _ json: String) { text += ",\"\(key)\":\(json)" }
        var line: String { text + "}\n" }
        var object: String { text + "}" }
    }

    @Test("numbers, integers, booleans, raw values and strings of every kind, 3,000 random lines")
    func sameBytes() {
        var generator = SplitMix64(seed: 40)
        let strings = [
            "", "plain", "quote\"d", "back\\slash", "new\nline", "cr\rtab\t", "café", "日本", "👩‍👩‍👧", "e\u{301}",
            "\u{0}\u{1}\u{8}\u{b}\u{c}\u{e}\u{f}\u{10}\u{1f}\u{7f}", "/dev/ttyACM0", "\u{2028}\u{feff}",
        ]
        let doubles: [Double?] = [
            nil, 0, -0.0, 1, -1, 0.1, 51.4540941, -2.5963451, 1_781_510_405.1, 1e-7, .leastNonzeroMagnitude,
            1.7976931348623157e308,
            .infinity, -.infinity, .nan, 123_456_789_012_345_680, 0.000_001,
        ]
        for round in 0..<3_000 {
            var line = BrokerLine("FIX")
            var reference = Reference("FIX")
            for field in 0..<Int.random(in: 0...24, using: &generator) {
                let key = "k\(field)"
                switch Int.random(in: 0..<6, using: &generator) {
                case 0:
                    let value =
                        Bool.random(using: &generator)
                        ? doubles.randomElement(using: &generator)!
                        : Double(bitPattern: generator.next())
                    line.add(key, value)
                    reference.add(key, value)
                case 1:
                    let value: Int? = Bool.random(using: &generator) ? Int(truncatingIfNeeded: generator.next()) : nil
                    line.add(key, value)
                    reference.add(key, value)
                case 2:
                    let value: Bool? = [true, false, nil].randomElement(using: &generator)!
                    line.add(key, value)
                    reference.add(key, value)
                case 3:
                    line.addRaw(key, "[{\"a\":1},{}]")
                    reference.addRaw(key, "[{\"a\":1},{}]")
                default:
                    let value = (0..<Int.random(in: 0...3, using: &generator)).map { _ in
                        strings.randomElement(using: &generator)!
                    }.joined()
                    line.add(key, value)
                    reference.add(key, value)
                }
            }
            #expect(Array(line.line.utf8) == Array(reference.line.utf8), "round \(round)")
            #expect(Array(line.object.utf8) == Array(reference.object.utf8), "round \(round)")
        }
        // Every control character, alone.
        for value in 0..<0x20 {
            var line = BrokerLine("X")
            var reference = Reference("X")
            let text = String(UnicodeScalar(UInt8(value)))
            line.add("s", text)
            reference.add("s", text)
            #expect(line.line == reference.line, "\(value)")
        }
    }
}
