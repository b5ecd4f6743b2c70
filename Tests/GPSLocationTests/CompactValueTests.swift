import Foundation
import GNSSCore
import Testing

@testable import GPSLocCLI
@testable import LocationCore

/// The compact forms the hot path uses (#35's replay speed) keep every value as it was: a fix's
/// eight-byte optional values, and NDJSON's numbers written two digits at a time from the right.
@Suite("compact values: a fix's packed fields and NDJSON's numbers mean what they did")
struct CompactValueTests {
    static let samples: [Double?] = [
        nil, 0, -0.0, 1.5, -2.597445118, 51.4538936, 1e300, -1e-300, .infinity, -.infinity,
        .nan, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude,
    ]

    @Test("every field of a Fix and its FixErrors keeps nil, NaN, infinities and -0 as given")
    func fixFieldsRoundTrip() {
        let paths: [WritableKeyPath<Fix, Double?>] = [
            \.latitude, \.longitude, \.altitudeHAE, \.altitudeMSL, \.geoidSeparation, \.speed, \.course,
            \.climb, \.magneticVariation, \.errors.time, \.errors.longitude, \.errors.latitude,
            \.errors.horizontal, \.errors.vertical, \.errors.speed, \.errors.course, \.errors.climb,
        ]
        for path in paths {
            for sample in Self.samples {
                var fix = Fix(mode: .threeDimensional)
                #expect(fix[keyPath: path] == nil)
                fix[keyPath: path] = sample
                let read = fix[keyPath: path]
                switch sample {
                case nil: #expect(read == nil)
                case let value? where value.isNaN: #expect(read?.isNaN == true, "NaN is a value, not nil")
                case let value?:
                    #expect(
                        read?.bitPattern == value.bitPattern,
                        "\(path): \(value) came back as \(String(describing: read))")
                }
                // Every other field stays unknown.
                for other in paths where other != path { #expect(fix[keyPath: other] == nil) }
            }
        }
        let date = Date(timeIntervalSince1970: 1_781_510_400.1)
        var fix = Fix(mode: .twoDimensional, time: date)
        #expect(fix.time == date)
        fix.time = nil
        #expect(fix.time == nil)
    }

    @Test("equality is Double?'s: nil equals nil, NaN equals nothing, 0 equals -0")
    func equality() {
        #expect(Fix(mode: .noFix) == Fix(mode: .noFix))
        #expect(Fix(mode: .threeDimensional, latitude: 0) == Fix(mode: .threeDimensional, latitude: -0.0))
        #expect(Fix(mode: .threeDimensional, latitude: .nan) != Fix(mode: .threeDimensional, latitude: .nan))
        #expect(Fix(mode: .threeDimensional, speed: 1) != Fix(mode: .threeDimensional))
        #expect(FixErrors(horizontal: 3) == FixErrors(horizontal: 3))
        #expect(FixErrors(horizontal: 3) != FixErrors(vertical: 3))
        #expect(Fix(mode: .twoDimensional, device: "/dev/ttyACM0") != Fix(mode: .twoDimensional))
    }

    @Test("a fix describes itself by the values it has")
    func description() {
        let fix = Fix(
            mode: .threeDimensional, latitude: 51.5, longitude: -2.5, errors: FixErrors(horizontal: 4.5),
            device: "/dev/ttyACM0")
        #expect(
            fix.description
                == "Fix(3d, latitude: 51.5, longitude: -2.5, device: /dev/ttyACM0, errors: FixErrors(eph: 4.5))")
        #expect(Fix(mode: .noFix).description == "Fix(nofix, errors: FixErrors())")
    }

    /// The digit-at-a-time writer `putFixed` replaced: the reference for what it must write.
    static func reference(_ value: Double, _ decimals: Int) -> String {
        let scale = [1, 10, 100, 1000, 10_000, 100_000, 1e6, 1e7, 1e8, 1e9][decimals]
        guard value.isFinite, abs(value) * scale < 9e18 else { return "null" }
        var scaled = Int64((abs(value) * scale).rounded())
        let negative = value < 0 && scaled != 0
        var reversed: [UInt8] = []
        for _ in 0..<decimals {
            reversed.append(UInt8(scaled % 10) + 48)
            scaled /= 10
        }
        if decimals > 0 { reversed.append(UInt8(ascii: ".")) }
        repeat {
            reversed.append(UInt8(scaled % 10) + 48)
            scaled /= 10
        } while scaled > 0
        if negative { reversed.append(UInt8(ascii: "-")) }
        return String(decoding: reversed.reversed(), as: UTF8.self)
    }

    static func written(_ value: Double, _ decimals: Int) -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: ByteCursor.fixedCapacity) { scratch in
            var cursor = ByteCursor(scratch.baseAddress!)
            cursor.putFixed(value, decimals: decimals)
            return String(
                decoding: UnsafeBufferPointer(start: scratch.baseAddress!, count: cursor.count), as: UTF8.self)
        }
    }

    @Test("NDJSON numbers: rounding half away from zero, no -0, null beyond 9e18, every width")
    func fixedNumbers() {
        let cases: [(Double, Int, String)] = [
            (51.4538936, 9, "51.453893600"), (-2.597445118, 9, "-2.597445118"), (0, 3, "0.000"),
            (-0.0, 3, "0.000"), (-0.0004, 3, "0.000"), (-0.0005, 3, "-0.001"), (9.5, 0, "10"),
            (99.99, 1, "100.0"), (0.05, 1, "0.1"), (123, 0, "123"), (7, 2, "7.00"), (.nan, 2, "null"),
            (.infinity, 0, "null"), (1e19, 0, "null"), (9e9, 9, "null"), (8.9e9, 9, "8900000000.000000000"),
        ]
        for (value, decimals, expected) in cases {
            #expect(Self.written(value, decimals) == expected, "\(value) to \(decimals) places")
        }
        // Powers of ten and their neighbours at every width, and a spread of magnitudes.
        var values: [Double] = []
        for exponent in -10...18 {
            let power = pow(10, Double(exponent))
            values += [power, power.nextDown, power.nextUp, power * 0.5, power * 9.99, -power]
        }
        var generator = SplitMix64(seed: 35)
        for _ in 0..<5_000 {
            values.append(Double.random(in: -1e6...1e6, using: &generator))
            values.append(Double.random(in: -200...200, using: &generator))
        }
        // Compared without an expectation each (one per value made the test slow enough to matter
        // on a busy machine): the first mismatches are reported.
        var mismatches: [String] = []
        for value in values {
            for decimals in 0...9 where mismatches.count < 10 {
                let written = Self.written(value, decimals)
                let expected = Self.reference(value, decimals)
                if written != expected { mismatches.append("\(value) to \(decimals): \(written), not \(expected)") }
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
    }

    /// `fixedDecimal` replaces `String(format: "%.Nf")` where the light binaries cannot have
    /// Foundation's formatter: the same text for the values this package prints.
    @Test("fixedDecimal prints what %.Nf prints")
    func fixedDecimalMatchesPrintf() {
        var generator = SystemRandomNumberGenerator()
        var values: [Double] = [
            0, -0.0, 0.05, 0.15, 0.25, 1.5, -1.5, 2.5, 9.95, 99.99, 51.4538936, -2.597445118, 123456.789,
        ]
        for _ in 0..<2000 {
            let magnitude = [1.0, 100, 10_000, 1e7][Int.random(in: 0..<4, using: &generator)]
            values.append(Double.random(in: -magnitude...magnitude, using: &generator))
        }
        for value in values {
            for decimals in [0, 1, 2, 3, 6] {
                let ours = fixedDecimal(value, decimals: decimals)
                let theirs = String(format: "%.\(decimals)f", value)
                // printf rounds the binary value half to even; ours rounds the scaled double: they
                // may differ only on a tie that the scaling itself made (one unit in the last place).
                if ours != theirs {
                    let a = Double(ours) ?? .nan
                    let b = Double(theirs) ?? .nan
                    var unit = 1.0
                    for _ in 0..<decimals { unit /= 10 }
                    // (and, far from zero, the double's own precision: 1e7 to six places is 1e13 units)
                    #expect(
                        abs(a - b) <= unit * 1.0001 + abs(value) * 8 * .ulpOfOne,
                        "\(value) to \(decimals): \(ours) against \(theirs)")
                }
            }
        }
        #expect(fixedDecimal(.nan, decimals: 1) == "nan" && fixedDecimal(-.infinity, decimals: 1) == "-inf")
        // A negative value that rounds to zero prints without its sign (printf keeps it: "-0.0").
        #expect(fixedDecimal(-0.04, decimals: 1) == "0.0")
    }

    /// `significantDecimal` replaces `String(format: "%g")` in the engine's messages (values out
    /// of physical ranges): the same text, exponent form included.
    @Test("significantDecimal prints what %g prints")
    func significantDecimalMatchesPrintf() {
        var generator = SystemRandomNumberGenerator()
        var values: [Double] = [0, 1, -1, 720, 5e9, 1e7, 999_999, 1_000_000, 0.0001, 0.00001234, 513.4, 12.5, 1e-7]
        for _ in 0..<2000 {
            let exponent = Double.random(in: -6...12, using: &generator)
            var magnitude = 1.0
            for _ in 0..<Int(exponent.magnitude) { magnitude = exponent < 0 ? magnitude / 10 : magnitude * 10 }
            values.append(Double.random(in: -magnitude...magnitude, using: &generator))
        }
        var mismatches: [String] = []
        for value in values {
            let ours = significantDecimal(value)
            let theirs = String(format: "%g", value)
            // Rounding may differ on a tie the scaling made: the same number to six digits.
            if ours != theirs, let a = Double(ours), let b = Double(theirs), abs(a - b) > abs(b) * 1.1e-5 {
                mismatches.append("\(value): \(ours) against \(theirs)")
            } else if ours != theirs && (Double(ours) == nil || ours.contains("e") != theirs.contains("e")) {
                mismatches.append("\(value): \(ours) against \(theirs)")
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(10))")
        #expect(significantDecimal(5e9) == "5e+09" && significantDecimal(720) == "720")
    }

    /// The path and text helpers gpslocd uses instead of `NSString` and `CharacterSet`: the same
    /// answers as Foundation's for the paths and lines they see.
    @Test("parentFolder, lastPathComponent and trimmingWhitespace answer as NSString and CharacterSet")
    func pathHelpersMatchFoundation() {
        let paths = [
            "/run/gpslocd/socket", "/socket", "socket", "/", "", "/run/gpslocd/", "a/b", "//x", "/usr/sbin/gpsd",
            "relative/dir/", "/a//b",
        ]
        for path in paths {
            #expect(parentFolder(of: path) == (path as NSString).deletingLastPathComponent, "\(path)")
            #expect(lastPathComponent(of: path) == (path as NSString).lastPathComponent, "\(path)")
        }
        for line in ["  name=org.x  ", "\tname=a\t", "", "   ", "[Application]", " a b "] {
            #expect(line.trimmingWhitespace() == line.trimmingCharacters(in: .whitespaces), "\(line)")
        }
    }

    /// A monitor's file name decodes as `removingPercentEncoding` decodes it (gpsloc lists them
    /// without Foundation).
    @Test("monitor file names decode as removingPercentEncoding")
    func monitorNamesDecode() {
        for name in ["fences", "caf%C3%A9", "a%20b", "%", "%4", "%ZZ", "%FF", "x%2Fy", "", "%e2%82%ac"] {
            #expect(MonitorStore.percentDecoded(Substring(name)) == name.removingPercentEncoding, "\(name)")
        }
    }
}
