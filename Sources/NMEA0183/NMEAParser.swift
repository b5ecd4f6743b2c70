import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

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
    /// What the stream held so far.
    public private(set) var statistics = NMEAStatistics()
    /// When false, GSV satellites and GSA satellite lists are not collected (faster when only
    /// fixes are wanted).
    public var collectsSatellites: Bool
    /// Scan eight bytes at a time where a line allows (false: byte by byte, the reference the
    /// tests compare with).
    var scansWords = true
    /// The partial line carried between `feed` calls.
    private var carry: [UInt8] = []
    private var overflowed = false

    /// A parser at the start of a stream.
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

    /// As `feed(_:_:)` for the bytes of `data`.
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
        _ raw: UnsafeBufferPointer<UInt8>, terminated: Bool, _ handle: (NMEASentence) -> Void,
        cutOff cutBefore: Bool = false
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
        // The fields' start offsets live on the stack for the line's lifetime.
        withUnsafeTemporaryAllocation(of: Int16.self, capacity: Fields.capacity + 1) { table in
            sentence(raw, end: end, terminated: terminated, handle, cutOff: cutBefore, table: table.baseAddress!)
        }
    }

    /// The sentence in a line (`raw[..<end]`, trimmed, not a comment); `table` holds the
    /// fields' offsets while it is decoded.
    private mutating func sentence(
        _ raw: UnsafeBufferPointer<UInt8>, end: Int, terminated: Bool, _ handle: (NMEASentence) -> Void,
        cutOff cutBefore: Bool, table offsets: UnsafeMutablePointer<Int16>
    ) {
        // One pass over the line: the last `$` or `!` starts the sentence (garbage before it, or
        // a sentence cut off by the next, is dropped); from there up to `*` every byte must be
        // printable, goes into the checksum (their XOR), and each comma starts a field.
        var start = -1
        var star = -1
        var checksum: UInt8 = 0
        var unprintable: UInt8 = 0
        var cutOff = false
        var commas = 0
        let bytes = raw.baseAddress!
        var position = 0
        // Before the start: anything.
        while position < end && bytes[position] != UInt8(ascii: "$") && bytes[position] != UInt8(ascii: "!") {
            position += 1
        }
        if position < end {
            start = position
            position += 1
        }
        scan: do {
            // Eight bytes at a time while no second start appears (the usual line).
            if start >= 0, scansWords,
                let scanned = Self.scanWords(bytes, from: position, to: end, start: start, offsets: offsets)
            {
                position = scanned.position
                star = scanned.star
                checksum = scanned.checksum
                unprintable = scanned.printable ? 0 : 1
                commas = scanned.commas
                if star >= 0 { break scan }
            }
            while position < end {
                let byte = bytes[position]
                if byte == UInt8(ascii: ",") {
                    if commas < Fields.capacity - 1 {
                        commas += 1
                        offsets[commas] = Int16(position - start)
                    }
                } else if byte == UInt8(ascii: "*") {
                    star = position
                    break
                } else if byte == UInt8(ascii: "$") || byte == UInt8(ascii: "!") {
                    // A new start: what came before was cut off.
                    cutOff = true
                    start = position
                    checksum = 0
                    unprintable = 0
                    commas = 0
                    position += 1
                    continue
                }
                // Bytes below 0x20 or above 0x7E wrap to above 0x5E here.
                unprintable |= (byte &- 0x20) > 0x5E ? 1 : 0
                checksum ^= byte
                position += 1
            }
        }
        // After the checksum: a later start would begin a new sentence there.
        if star >= 0 {
            var scan = star + 1
            while scan < end {
                if bytes[scan] == UInt8(ascii: "$") || bytes[scan] == UInt8(ascii: "!") {
                    // Rare (a sentence glued to the next): parse from that start alone.
                    return line(
                        UnsafeBufferPointer(rebasing: raw[scan..<raw.count]), terminated: terminated, handle,
                        cutOff: true)
                }
                scan += 1
            }
        }
        let printable = unprintable == 0
        guard start >= 0 else {
            statistics.noise += 1
            return
        }
        if end - start > Self.maximumLineLength {
            statistics.tooLong += 1
            return
        }
        guard printable else {
            statistics.noise += 1
            return
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
        let fields = Fields(body: body, starts: offsets, count: commas + 1)
        decode(fields, checksummed: star >= 0, cutOff: cutOff || cutBefore, handle)
    }

    /// Counts a sentence its decoder made (and handed on), or a malformed one.
    @inline(__always)
    private mutating func tally(decoded: Bool, checksummed: Bool, cutOff: Bool) {
        guard decoded else {
            statistics.malformed += 1
            return
        }
        statistics.sentences += 1
        if !checksummed { statistics.withoutChecksum += 1 }
        if cutOff { statistics.missingChecksum += 1 }
    }

    /// The checksum scan eight bytes at a time (SWAR): from `position` up to `*` or `end`,
    /// XOR of the bytes, whether all are printable, and the commas' offsets from `start`. Nil
    /// when a `$` or `!` may appear (a second start), or a space or `%`: the byte-wise scan
    /// handles those lines. Stops with fewer than eight bytes left (`star` -1): the byte-wise
    /// scan finishes from `position`.
    @inline(__always)
    private static func scanWords(
        _ bytes: UnsafePointer<UInt8>, from first: Int, to end: Int, start: Int,
        offsets: UnsafeMutablePointer<Int16>
    ) -> (position: Int, star: Int, checksum: UInt8, printable: Bool, commas: Int)? {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
        // 0x80 in each byte of `word` equal to `byte`, exactly (no false positives).
        @inline(__always) func equal(_ word: UInt64, _ byte: UInt8) -> UInt64 {
            let x = word ^ (ones &* UInt64(byte))
            return ~(((x & low7) &+ low7) | x | low7)
        }
        // 0x80 in each byte outside 0x20…0x7E: its own high bit, or, of its low seven bits t,
        // t + 1 reaching 0x80 (t = 0x7F) or t + 0x60 not reaching it (t < 0x20). Neither sum
        // carries into the next byte.
        @inline(__always) func unprintable(_ word: UInt64) -> UInt64 {
            let low = word & low7
            return (word | (low &+ ones) | ~(low &+ ones &* 0x60)) & highs
        }
        // 0x80 in each byte that may be `$` or `!`: 0x20, 0x21, 0x24 or 0x25 (a space and `%`
        // too, rare in a sentence: a word with one takes the byte-wise scan, which tells them
        // apart). One test for both starts.
        @inline(__always) func mayStart(_ word: UInt64) -> UInt64 {
            let y = (word ^ (ones &* 0x20)) & (ones &* 0xFA)
            return ~(((y & low7) &+ low7) | y | low7)
        }
        var position = first
        var folded: UInt64 = 0
        var bad: UInt64 = 0
        var commas = 0
        var star = -1
        while position + 8 <= end {
            var word = UInt64(littleEndian: UnsafeRawPointer(bytes + position).loadUnaligned(as: UInt64.self))
            if mayStart(word) != 0 { return nil }
            var comma = equal(word, UInt8(ascii: ","))
            let stars = equal(word, UInt8(ascii: "*"))
            if stars == 0 {
                bad |= unprintable(word)
            } else {
                // The word with the checksum's `*` (once a line): only the bytes before it count.
                let length = stars.trailingZeroBitCount >> 3
                let valid = length == 0 ? 0 : UInt64.max >> (64 - 8 * length)
                word &= valid
                comma &= valid
                bad |= unprintable(word) & valid
                star = position + length
            }
            folded ^= word
            // Offsets from `start` (wrapping arithmetic: a line longer than an Int16 offset is
            // refused as too long before its fields are read).
            let offset = position &- start
            if commas < Fields.capacity - 9 {
                // Room for all eight a word may hold: no check a comma.
                while comma != 0 {
                    commas &+= 1
                    offsets[commas] = Int16(truncatingIfNeeded: offset &+ (comma.trailingZeroBitCount &>> 3))
                    comma &= comma &- 1
                }
            } else {
                while comma != 0 {
                    if commas < Fields.capacity - 1 {
                        commas &+= 1
                        offsets[commas] = Int16(truncatingIfNeeded: offset &+ (comma.trailingZeroBitCount &>> 3))
                    }
                    comma &= comma &- 1
                }
            }
            if star >= 0 { return (star, star, fold(folded), bad == 0, commas) }
            position += 8
        }
        return (position, -1, fold(folded), bad == 0, commas)
    }

    @inline(__always) private static func fold(_ word: UInt64) -> UInt8 {
        var x = word
        x ^= x >> 32
        x ^= x >> 16
        x ^= x >> 8
        return UInt8(truncatingIfNeeded: x)
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
    private mutating func decode(
        _ fields: Fields, checksummed: Bool, cutOff: Bool, _ handle: (NMEASentence) -> Void
    ) {
        let tag = fields.tag
        if !checksummed && !Self.isWellFormed(fields) {
            if tag.count == 5 && tag[2] == UInt8(ascii: "G") && tag[3] == UInt8(ascii: "S")
                && tag[4] == UInt8(ascii: "V")
            {
                statistics.satellitesWithoutChecksum += 1
            } else {
                statistics.missingChecksum += 1
            }
            return
        }
        guard tag.count >= 3 else {
            statistics.malformed += 1
            return
        }
        // Proprietary sentences start with P; standard ones have a two-letter talker.
        if tag[0] == UInt8(ascii: "P") {
            if tag.count == 5 && tag[1] == UInt8(ascii: "G") && tag[2] == UInt8(ascii: "R")
                && tag[3] == UInt8(ascii: "M")
            {
                if tag[4] == UInt8(ascii: "E") {
                    handle(.pgrme(horizontal: fields.double(1), vertical: fields.double(3)))
                    return tally(decoded: true, checksummed: checksummed, cutOff: cutOff)
                }
                if tag[4] == UInt8(ascii: "Z") && fields.count >= 4 {
                    handle(Self.pgrmz(fields))
                    return tally(decoded: true, checksummed: checksummed, cutOff: cutOff)
                }
            }
            statistics.ignored += 1
            return
        }
        guard tag.count == 5 else {
            statistics.ignored += 1
            return
        }
        let talker = UInt16(tag[0]) << 8 | UInt16(tag[1])
        let type = UInt32(tag[2]) << 16 | UInt32(tag[3]) << 8 | UInt32(tag[4])
        // Each decoder hands its sentence to `handle` as it makes it (not returned, copied and
        // handed on: a copy read back just after its parts were stored stalls the processor), and
        // says whether the fields made one.
        let decoded: Bool
        switch type {
        case Self.code("RMC"): decoded = rmc(fields, handle)
        case Self.code("GGA"): decoded = gga(fields, talker: talker, handle)
        case Self.code("GNS"): decoded = gns(fields, handle)
        case Self.code("GLL"): decoded = gll(fields, handle)
        case Self.code("GSA"): decoded = gsa(fields, talker: talker, handle)
        case Self.code("GSV"): decoded = gsv(fields, talker: talker, handle)
        case Self.code("VTG"): decoded = vtg(fields, handle)
        case Self.code("GST"): decoded = gst(fields, handle)
        case Self.code("GBS"): decoded = gbs(fields, handle)
        case Self.code("ZDA"): decoded = zda(fields, handle)
        case Self.code("HDT"): decoded = hdt(fields, handle)
        case Self.code("THS"): decoded = ths(fields, handle)
        case Self.code("HDG"): decoded = hdg(fields, handle)
        default:
            statistics.ignored += 1
            return
        }
        tally(decoded: decoded, checksummed: checksummed, cutOff: cutOff)
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
        code("GBS"): (Array("nnnnnnnnnn".utf8), [8, 10]),
        code("ZDA"): (Array("nnnnnn".utf8), [6]),
        code("HDT"): (Array("na".utf8), [2]),
        code("THS"): (Array("na".utf8), [2]),
        code("HDG"): (Array("nnana".utf8), [5]),
    ]
    private static let pgrmeSyntax = (pattern: Array("nanana".utf8), counts: [6])
    private static let pgrmzSyntax = (pattern: Array("nan".utf8), counts: [3])

    /// True when `fields` is a complete sentence of a type we decode: its field count is one the
    /// type comes in and every field has the syntax its position requires.
    private static func isWellFormed(_ fields: Fields) -> Bool {
        let tag = fields.tag
        let rule: (pattern: [UInt8], counts: [Int])?
        if tag.count == 5 && tag.elementsEqual("PGRME".utf8) {
            rule = pgrmeSyntax
        } else if tag.count == 5 && tag.elementsEqual("PGRMZ".utf8) {
            rule = pgrmzSyntax
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
                    } else if !(offset == 0 && (byte == UInt8(ascii: "-") || byte == UInt8(ascii: "+"))) {
                        // A sign may lead (ZDA's local zone hours are "+00" to "+13" on receivers
                        // that write it: an HP 58534A in gpsd's corpus, whose undated fixes
                        // this rejection left without any date).
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
}
