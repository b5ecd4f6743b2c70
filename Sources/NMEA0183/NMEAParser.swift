import Foundation
import GNSSCore

/// Counts of what the NMEA parser met and skipped. Nothing here ever produces a position.
public struct NMEAStatistics: Sendable, Equatable {
    /// Sentences decoded: with a valid checksum, or complete without one (`withoutChecksum`).
    public var sentences = 0
    /// Sentences whose `*hh` checksum did not match.
    public var badChecksum = 0
    /// Lines cut off: no `*hh` and not a complete, well-formed sentence (a line cut off
    /// mid-field, the last line of a recording without its line feed, a sentence followed
    /// by another `$` on the same line).
    public var missingChecksum = 0
    /// Complete sentences accepted without a `*hh` checksum, as gpsd accepts them: the line
    /// ends in a line feed, the type is one we decode, and the field count and every field's
    /// syntax are what that type requires. Some timing and older receivers send only these.
    public var withoutChecksum = 0
    /// Satellite lists (GSV) without a checksum: skipped, as gpsd skips them — a GSV's length
    /// varies with its satellites, so a cut-off one cannot be told from a whole one.
    public var satellitesWithoutChecksum = 0
    /// Lines longer than `NMEAParser.maximumLineLength`.
    public var tooLong = 0
    /// Lines with no `$` or `!` start (noise, binary data, comments are not counted here).
    public var noise = 0
    /// Well-formed sentences of a type we do not use (TXT, GBS, proprietary, …).
    public var ignored = 0
    /// Sentences of a known type whose fields made no sense (skipped whole).
    public var malformed = 0
    /// `#` comment lines (gpsfake headers).
    public var comments = 0

    public init() {}
}

/// A calendar date from RMC (`year` has two digits) or ZDA (four digits).
public struct NMEADate: Sendable, Equatable {
    public var day: Int
    public var month: Int
    public var year: Int
}

/// One satellite of a GSV sentence.
public struct NMEASatellite: Sendable, Equatable {
    public var prn: Int
    public var elevation: Double?
    public var azimuth: Double?
    public var signalToNoise: Double?
}

/// One decoded sentence, with the values GPSLocation uses. Numbers are nil when the field is empty.
public enum NMEASentence: Sendable, Equatable {
    /// RMC. `valid`: status A.
    case rmc(
        time: Double?, valid: Bool, latitude: Double?, longitude: Double?, speedKnots: Double?, course: Double?,
        date: NMEADate?, modeIndicator: UInt8?)
    /// GGA / GNS: quality 0 means no fix.
    case gga(
        time: Double?, latitude: Double?, longitude: Double?, quality: Int, satellites: Int?, hdop: Double?,
        altitude: Double?, geoidSeparation: Double?)
    /// GLL: `valid`: status A and mode indicator not N.
    case gll(time: Double?, latitude: Double?, longitude: Double?, valid: Bool)
    /// GSA: fix mode 1–3, DOPs, the satellites used and the NMEA 4.10 system id.
    case gsa(mode: Int?, pdop: Double?, hdop: Double?, vdop: Double?, used: [Int], systemID: Int?, talker: UInt16)
    /// One GSV part.
    case gsv(talker: UInt16, total: Int, part: Int, inView: Int, satellites: [NMEASatellite])
    /// VTG: course true and speed.
    case vtg(course: Double?, speedKnots: Double?, valid: Bool)
    /// GST: 1-σ errors in metres.
    case gst(time: Double?, latitudeError: Double?, longitudeError: Double?, altitudeError: Double?)
    /// ZDA: full date.
    case zda(time: Double?, day: Int, month: Int, year: Int)
    /// Garmin PGRME: estimated horizontal and vertical position errors, metres.
    case pgrme(horizontal: Double?, vertical: Double?)
}

/// A byte-level NMEA 0183 parser: framing (`$`/`!` to LF, CR optional), `*hh` checksums, talker
/// ids and the sentences that carry fixes. Incremental: feed any chunking of the input and the
/// same sentences come out. Bad checksums, missing checksums, over-long lines, noise and NUL
/// bytes are counted and skipped without disturbing the sentences around them. When a line
/// holds two starts (a sentence cut off by the next one), the last start wins.
public struct NMEAParser: Sendable {
    /// NMEA allows 82 characters; real receivers exceed it (gpsd accepts up to about 100).
    public static let maximumLineLength = 120
    /// A raw line (noise before the sentence included) longer than this is dropped whole.
    public static let maximumRawLineLength = 4 * maximumLineLength
    public private(set) var statistics = NMEAStatistics()
    /// When false, GSV satellites and GSA satellite lists are not collected (faster when only
    /// fixes are wanted).
    public var collectsSatellites: Bool
    /// The partial line carried between `feed` calls.
    private var carry: [UInt8] = []
    private var overflowed = false

    public init(collectsSatellites: Bool = true) {
        self.collectsSatellites = collectsSatellites
        carry.reserveCapacity(Self.maximumLineLength + 2)
    }

    /// Parses `bytes`, calling `handle` for each decoded sentence in order.
    public mutating func feed(_ bytes: UnsafeBufferPointer<UInt8>, _ handle: (NMEASentence) -> Void) {
        var lineStart = 0
        let count = bytes.count
        var index = 0
        while index < count {
            // memchr for the next line feed.
            guard let base = bytes.baseAddress,
                let found = memchr(base + index, 0x0A, count - index)
            else { break }
            let end = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
            if carry.isEmpty && !overflowed {
                line(UnsafeBufferPointer(rebasing: bytes[lineStart..<end]), terminated: true, handle)
            } else {
                appendCarry(UnsafeBufferPointer(rebasing: bytes[lineStart..<end]))
                let carried = carry
                let wasOverflowed = overflowed
                carry.removeAll(keepingCapacity: true)
                overflowed = false
                if wasOverflowed {
                    statistics.tooLong += 1
                } else {
                    carried.withUnsafeBufferPointer { line($0, terminated: true, handle) }
                }
            }
            index = end + 1
            lineStart = index
        }
        if lineStart < count { appendCarry(UnsafeBufferPointer(rebasing: bytes[lineStart..<count])) }
    }

    public mutating func feed(_ data: Data, _ handle: (NMEASentence) -> Void) {
        data.withUnsafeBytes { raw in feed(raw.bindMemory(to: UInt8.self), handle) }
    }

    /// Parses what is left (a last line without a line feed).
    public mutating func finish(_ handle: (NMEASentence) -> Void) {
        if overflowed {
            statistics.tooLong += 1
        } else if !carry.isEmpty {
            let carried = carry
            carried.withUnsafeBufferPointer { line($0, terminated: false, handle) }
        }
        carry.removeAll(keepingCapacity: true)
        overflowed = false
    }

    private mutating func appendCarry(_ bytes: UnsafeBufferPointer<UInt8>) {
        if overflowed { return }
        if carry.count + bytes.count > Self.maximumRawLineLength {
            overflowed = true
            carry.removeAll(keepingCapacity: true)
            return
        }
        carry.append(contentsOf: bytes)
    }

    /// One line without its LF (`terminated`: it had one; false for a last line at the end).
    private mutating func line(
        _ raw: UnsafeBufferPointer<UInt8>, terminated: Bool, _ handle: (NMEASentence) -> Void
    ) {
        if raw.count > Self.maximumRawLineLength {
            statistics.tooLong += 1
            return
        }
        var end = raw.count
        while end > 0 && (raw[end - 1] == 0x0D || raw[end - 1] == 0x20) { end -= 1 }
        if end == 0 { return }
        if raw[0] == UInt8(ascii: "#") {
            statistics.comments += 1
            return
        }
        // The last `$` or `!` starts the sentence (garbage before it, or a cut-off sentence).
        var start = -1
        var scan = end - 1
        while scan >= 0 {
            let byte = raw[scan]
            if byte == UInt8(ascii: "$") || byte == UInt8(ascii: "!") {
                start = scan
                break
            }
            scan -= 1
        }
        guard start >= 0 else {
            statistics.noise += 1
            return
        }
        // Another start before this one: a sentence cut off by the next.
        var cutOff = false
        while scan > 0 && !cutOff {
            scan -= 1
            cutOff = raw[scan] == UInt8(ascii: "$") || raw[scan] == UInt8(ascii: "!")
        }
        if end - start > Self.maximumLineLength {
            statistics.tooLong += 1
            return
        }
        // Checksum: XOR of the bytes between the start and `*`.
        var checksum: UInt8 = 0
        var star = -1
        var position = start + 1
        while position < end {
            let byte = raw[position]
            if byte == UInt8(ascii: "*") {
                star = position
                break
            }
            if byte < 0x20 || byte > 0x7E {
                statistics.noise += 1
                return
            }
            checksum ^= byte
            position += 1
        }
        let body: UnsafeBufferPointer<UInt8>
        if star >= 0 {
            guard star + 2 < end, let high = Self.hex(raw[star + 1]), let low = Self.hex(raw[star + 2]) else {
                statistics.missingChecksum += 1
                return
            }
            guard high << 4 | low == checksum else {
                statistics.badChecksum += 1
                return
            }
            body = UnsafeBufferPointer(rebasing: raw[(start + 1)..<star])
        } else {
            // No checksum at all: only a complete line may be a sentence (decode checks the rest).
            guard terminated else {
                statistics.missingChecksum += 1
                return
            }
            body = UnsafeBufferPointer(rebasing: raw[(start + 1)..<end])
        }
        if let sentence = decode(body, checksummed: star >= 0) {
            statistics.sentences += 1
            if star < 0 { statistics.withoutChecksum += 1 }
            if cutOff { statistics.missingChecksum += 1 }
            handle(sentence)
        }
    }

    @inline(__always) private static func hex(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    // MARK: - Sentences

    /// `body` is the text between `$` and `*` (or the line's end, when `checksummed` is false:
    /// then only a well-formed sentence of a known type counts, anything else is cut off).
    private mutating func decode(_ body: UnsafeBufferPointer<UInt8>, checksummed: Bool) -> NMEASentence? {
        let fields = Fields(body)
        let tag = fields.tag
        if !checksummed && !Self.isWellFormed(fields) {
            if tag.count == 5 && tag[2] == UInt8(ascii: "G") && tag[3] == UInt8(ascii: "S")
                && tag[4] == UInt8(ascii: "V")
            {
                statistics.satellitesWithoutChecksum += 1
            } else {
                statistics.missingChecksum += 1
            }
            return nil
        }
        guard tag.count >= 3 else {
            statistics.malformed += 1
            return nil
        }
        // Proprietary sentences start with P; standard ones have a two-letter talker.
        if tag[0] == UInt8(ascii: "P") {
            if tag.count == 5 && tag[1] == UInt8(ascii: "G") && tag[2] == UInt8(ascii: "R")
                && tag[3] == UInt8(ascii: "M")
                && tag[4] == UInt8(ascii: "E")
            {
                return .pgrme(horizontal: fields.double(1), vertical: fields.double(3))
            }
            statistics.ignored += 1
            return nil
        }
        guard tag.count == 5 else {
            statistics.ignored += 1
            return nil
        }
        let talker = UInt16(tag[0]) << 8 | UInt16(tag[1])
        let type = UInt32(tag[2]) << 16 | UInt32(tag[3]) << 8 | UInt32(tag[4])
        let sentence: NMEASentence?
        switch type {
        case Self.code("RMC"): sentence = rmc(fields)
        case Self.code("GGA"): sentence = gga(fields)
        case Self.code("GNS"): sentence = gns(fields)
        case Self.code("GLL"): sentence = gll(fields)
        case Self.code("GSA"): sentence = gsa(fields, talker: talker)
        case Self.code("GSV"): sentence = gsv(fields, talker: talker)
        case Self.code("VTG"): sentence = vtg(fields)
        case Self.code("GST"): sentence = gst(fields)
        case Self.code("ZDA"): sentence = zda(fields)
        default:
            statistics.ignored += 1
            return nil
        }
        if sentence == nil { statistics.malformed += 1 }
        return sentence
    }

    /// The field syntax of each decoded type, for sentences without a checksum: one character
    /// per field after the tag (`n` a number, `a` letters; either may be empty), and the field
    /// counts the type comes in (NMEA 2.0 to 4.11 versions). GSV is absent: its length varies
    /// with the satellites it lists, so a cut-off GSV cannot be told from a whole one, and gpsd
    /// 3.22 drops GSV without a checksum too (measured: no SKY reports from such a recording).
    private static let syntax: [UInt32: (pattern: [UInt8], counts: [Int])] = [
        code("RMC"): (Array("nananannnnaaa".utf8), [11, 12, 13]),
        code("GGA"): (Array("nnanannnnanann".utf8), [14]),
        code("GNS"): (Array("nnanaannnnnna".utf8), [12, 13]),
        code("GLL"): (Array("nananaa".utf8), [6, 7]),
        code("GSA"): (Array(("a" + String(repeating: "n", count: 17)).utf8), [17, 18]),
        code("VTG"): (Array("nanananaa".utf8), [8, 9]),
        code("GST"): (Array("nnnnnnnn".utf8), [8]),
        code("ZDA"): (Array("nnnnnn".utf8), [6]),
    ]
    private static let pgrmeSyntax = (pattern: Array("nanana".utf8), counts: [6])

    /// True when `fields` is a complete sentence of a type we decode: its field count is one the
    /// type comes in and every field has the syntax its position requires.
    private static func isWellFormed(_ fields: Fields) -> Bool {
        let tag = fields.tag
        let rule: (pattern: [UInt8], counts: [Int])?
        if tag.count == 5 && tag.elementsEqual("PGRME".utf8) {
            rule = pgrmeSyntax
        } else if tag.count == 5 && tag[0] != UInt8(ascii: "P") {
            rule = syntax[UInt32(tag[2]) << 16 | UInt32(tag[3]) << 8 | UInt32(tag[4])]
        } else {
            rule = nil
        }
        guard let rule, rule.counts.contains(fields.count - 1) else { return false }
        for index in 1..<fields.count {
            let field = fields.bytes(index)
            if field.isEmpty { continue }
            if rule.pattern[index - 1] == UInt8(ascii: "a") {
                guard field.allSatisfy({ ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A }) else { return false }
            } else {
                var digits = 0
                var points = 0
                for (offset, byte) in field.enumerated() {
                    if byte >= 0x30 && byte <= 0x39 {
                        digits += 1
                    } else if byte == UInt8(ascii: ".") {
                        points += 1
                    } else if !(offset == 0 && byte == UInt8(ascii: "-")) {
                        return false
                    }
                }
                guard digits > 0 && points <= 1 else { return false }
            }
        }
        return true
    }

    private static func code(_ text: StaticString) -> UInt32 {
        let bytes = text.utf8Start
        return UInt32(bytes[0]) << 16 | UInt32(bytes[1]) << 8 | UInt32(bytes[2])
    }

    private func rmc(_ f: Fields) -> NMEASentence? {
        guard f.count >= 10 else { return nil }
        let status = f.byte(2)
        guard status == UInt8(ascii: "A") || status == UInt8(ascii: "V") else { return nil }
        let position = f.position(3)
        return .rmc(
            time: f.time(1), valid: status == UInt8(ascii: "A"), latitude: position?.0, longitude: position?.1,
            speedKnots: f.double(7), course: f.double(8), date: f.ddmmyy(9),
            modeIndicator: f.count > 12 ? f.byte(12) : nil)
    }

    private func gga(_ f: Fields) -> NMEASentence? {
        guard f.count >= 10 else { return nil }
        let position = f.position(2)
        let quality = f.integer(6) ?? 0
        return .gga(
            time: f.time(1), latitude: position?.0, longitude: position?.1, quality: quality, satellites: f.integer(7),
            hdop: f.double(8), altitude: f.double(9), geoidSeparation: f.count > 11 ? f.double(11) : nil)
    }

    /// GNS: like GGA, with a mode string per constellation instead of a quality number.
    private func gns(_ f: Fields) -> NMEASentence? {
        guard f.count >= 10 else { return nil }
        let position = f.position(2)
        var quality = 0
        for byte in f.bytes(6) {
            switch byte {
            case UInt8(ascii: "A"): quality = max(quality, 1)
            case UInt8(ascii: "D"), UInt8(ascii: "P"): quality = max(quality, 2)
            case UInt8(ascii: "R"): quality = max(quality, 4)
            case UInt8(ascii: "F"): quality = max(quality, 5)
            case UInt8(ascii: "E"): quality = max(quality, 6)
            default: break
            }
        }
        return .gga(
            time: f.time(1), latitude: position?.0, longitude: position?.1, quality: quality, satellites: f.integer(7),
            hdop: f.double(8), altitude: f.double(9), geoidSeparation: f.double(10))
    }

    private func gll(_ f: Fields) -> NMEASentence? {
        guard f.count >= 7 else { return nil }
        let position = f.position(1)
        let valid = f.byte(6) == UInt8(ascii: "A") && (f.count < 8 || f.byte(7) != UInt8(ascii: "N"))
        return .gll(time: f.time(5), latitude: position?.0, longitude: position?.1, valid: valid)
    }

    private func gsa(_ f: Fields, talker: UInt16) -> NMEASentence? {
        guard f.count >= 18 else { return nil }
        var used: [Int] = []
        if collectsSatellites {
            for index in 3...14 {
                if let prn = f.integer(index), prn > 0 { used.append(prn) }
            }
        }
        return .gsa(
            mode: f.integer(2), pdop: f.double(15), hdop: f.double(16), vdop: f.double(17), used: used,
            systemID: f.count > 18 ? f.integer(18) : nil, talker: talker)
    }

    private func gsv(_ f: Fields, talker: UInt16) -> NMEASentence? {
        guard f.count >= 4, let total = f.integer(1), let part = f.integer(2) else { return nil }
        var satellites: [NMEASatellite] = []
        var index = collectsSatellites ? 4 : f.count
        while index < f.count {
            if let prn = f.integer(index), prn > 0 {
                satellites.append(
                    NMEASatellite(
                        prn: prn, elevation: f.double(index + 1), azimuth: f.double(index + 2),
                        signalToNoise: f.double(index + 3)))
            }
            index += 4
        }
        return .gsv(
            talker: talker, total: total, part: part, inView: f.integer(3) ?? satellites.count, satellites: satellites)
    }

    private func vtg(_ f: Fields) -> NMEASentence? {
        guard f.count >= 8 else { return nil }
        let mode = f.count > 9 ? f.byte(9) : nil
        let valid = mode != UInt8(ascii: "N") && mode != UInt8(ascii: "E")
        return .vtg(course: f.double(1), speedKnots: f.double(5), valid: valid)
    }

    private func gst(_ f: Fields) -> NMEASentence? {
        guard f.count >= 9 else { return nil }
        return .gst(
            time: f.time(1), latitudeError: f.double(6), longitudeError: f.double(7), altitudeError: f.double(8))
    }

    private func zda(_ f: Fields) -> NMEASentence? {
        guard f.count >= 5, let day = f.integer(2), let month = f.integer(3), let year = f.integer(4),
            (1...31).contains(day), (1...12).contains(month), year > 1900
        else { return nil }
        return .zda(time: f.time(1), day: day, month: month, year: year)
    }
}

/// Field access over a sentence body without copying: up to 48 comma-separated fields.
struct Fields {
    private let body: UnsafeBufferPointer<UInt8>
    /// starts[i] ..< ends[i] is field i (field 0 is the tag).
    private var starts:
        (
            Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16,
            Int16,
            Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16,
            Int16,
            Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16, Int16,
            Int16,
            Int16
        ) = (
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            0, 0, 0,
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0
        )
    private(set) var count = 0
    static let capacity = 48

    init(_ body: UnsafeBufferPointer<UInt8>) {
        self.body = body
        withUnsafeMutableBytes(of: &starts) { raw in
            let table = raw.bindMemory(to: Int16.self)
            var fieldCount = 0
            table[0] = 0
            for index in 0..<body.count where body[index] == UInt8(ascii: ",") {
                if fieldCount + 1 >= Self.capacity { break }
                fieldCount += 1
                table[fieldCount] = Int16(index + 1)
            }
            table[fieldCount + 1] = Int16(body.count + 1)
            count = fieldCount + 1
        }
    }

    @inline(__always) private func range(_ index: Int) -> Range<Int> {
        withUnsafeBytes(of: starts) { raw in
            let table = raw.bindMemory(to: Int16.self)
            return Int(table[index])..<(Int(table[index + 1]) - 1)
        }
    }

    var tag: UnsafeBufferPointer<UInt8> { bytes(0) }

    func bytes(_ index: Int) -> UnsafeBufferPointer<UInt8> {
        guard index < count else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(rebasing: body[range(index)])
    }

    func byte(_ index: Int) -> UInt8? {
        let field = bytes(index)
        return field.isEmpty ? nil : field[0]
    }

    func integer(_ index: Int) -> Int? {
        let field = bytes(index)
        guard !field.isEmpty else { return nil }
        var value = 0
        var negative = false
        for (offset, byte) in field.enumerated() {
            if offset == 0 && byte == UInt8(ascii: "-") {
                negative = true
                continue
            }
            guard byte >= 0x30 && byte <= 0x39 else {
                if byte == UInt8(ascii: ".") { break }
                return nil
            }
            value = value &* 10 &+ Int(byte - 0x30)
            if value > 1_000_000_000 { return nil }
        }
        return negative ? -value : value
    }

    /// A decimal number: optional sign, digits, optional fraction. Nil when empty or not a number.
    func double(_ index: Int) -> Double? {
        let field = bytes(index)
        guard !field.isEmpty else { return nil }
        return Self.parseDecimal(field)?.value
    }

    /// (value, integer part, fractional digits as a value in [0,1)): exact enough for coordinates.
    static func parseDecimal(_ field: UnsafeBufferPointer<UInt8>) -> (value: Double, integer: Int, fraction: Double)? {
        var integer = 0
        var fractionDigits: UInt64 = 0
        var fractionScale: Double = 1
        var negative = false
        var seenDigit = false
        var inFraction = false
        for (offset, byte) in field.enumerated() {
            switch byte {
            case 0x30...0x39:
                seenDigit = true
                if inFraction {
                    if fractionScale < 1e17 {
                        fractionDigits = fractionDigits * 10 + UInt64(byte - 0x30)
                        fractionScale *= 10
                    }
                } else {
                    integer = integer &* 10 &+ Int(byte - 0x30)
                    if integer > 100_000_000_000 { return nil }
                }
            case UInt8(ascii: "."):
                if inFraction { return nil }
                inFraction = true
            case UInt8(ascii: "-") where offset == 0:
                negative = true
            case UInt8(ascii: "+") where offset == 0:
                break
            default:
                return nil
            }
        }
        guard seenDigit else { return nil }
        let fraction = Double(fractionDigits) / fractionScale
        let value = Double(integer) + fraction
        return (negative ? -value : value, negative ? -integer : integer, negative ? -fraction : fraction)
    }

    /// `hhmmss[.ss]` as seconds of the day.
    func time(_ index: Int) -> Double? {
        let field = bytes(index)
        guard field.count >= 6 else { return nil }
        for offset in 0..<6 where field[offset] < 0x30 || field[offset] > 0x39 { return nil }
        let hours = Int(field[0] - 0x30) * 10 + Int(field[1] - 0x30)
        let minutes = Int(field[2] - 0x30) * 10 + Int(field[3] - 0x30)
        let seconds = Int(field[4] - 0x30) * 10 + Int(field[5] - 0x30)
        guard hours < 24, minutes < 60, seconds < 61 else { return nil }
        var fraction = 0.0
        if field.count > 6 {
            guard field[6] == UInt8(ascii: "."),
                let parsed = Self.parseDecimal(UnsafeBufferPointer(rebasing: field[6...]))
            else {
                return nil
            }
            fraction = parsed.value
        }
        return Double(hours * 3600 + minutes * 60 + seconds) + fraction
    }

    /// `ddmmyy` (the year has two digits).
    func ddmmyy(_ index: Int) -> NMEADate? {
        let field = bytes(index)
        guard field.count == 6, field.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let day = Int(field[0] - 0x30) * 10 + Int(field[1] - 0x30)
        let month = Int(field[2] - 0x30) * 10 + Int(field[3] - 0x30)
        let year = Int(field[4] - 0x30) * 10 + Int(field[5] - 0x30)
        guard (1...31).contains(day), (1...12).contains(month) else { return nil }
        return NMEADate(day: day, month: month, year: year)
    }

    /// `ddmm.mmmm,N,dddmm.mmmm,E` starting at `index`, in degrees; nil when incomplete or invalid.
    func position(_ index: Int) -> (Double, Double)? {
        guard index + 3 < count,
            let latitude = Self.degrees(bytes(index)), let longitude = Self.degrees(bytes(index + 2))
        else { return nil }
        let north = byte(index + 1)
        let east = byte(index + 3)
        guard north == UInt8(ascii: "N") || north == UInt8(ascii: "S"),
            east == UInt8(ascii: "E") || east == UInt8(ascii: "W"),
            latitude <= 90, longitude <= 180
        else { return nil }
        return (north == UInt8(ascii: "S") ? -latitude : latitude, east == UInt8(ascii: "W") ? -longitude : longitude)
    }

    /// NMEA `dddmm.mmmm` to degrees, splitting the integer part exactly.
    static func degrees(_ field: UnsafeBufferPointer<UInt8>) -> Double? {
        guard !field.isEmpty, let parsed = parseDecimal(field), parsed.integer >= 0 else { return nil }
        let degrees = parsed.integer / 100
        let minutes = Double(parsed.integer % 100) + parsed.fraction
        guard minutes < 60 else { return nil }
        return Double(degrees) + minutes / 60
    }
}
