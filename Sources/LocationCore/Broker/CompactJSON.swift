/// Reads the compact JSON objects the broker protocol writes (`BrokerLine`: no spaces, keys
/// without escapes, numbers as Swift prints them) without Foundation's `JSONDecoder`, whose
/// `Decodable` path cost a program behind gpslocd 450 k instructions a receiver cycle (a thrown
/// and discarded error for every value that is not a boolean).
///
/// It accepts a strict subset of JSON and answers nil for anything outside it — whitespace, an
/// escape in a string, a number longer than 40 bytes or one that would not read back as written
/// (out of range, or not zero read as zero), a repeated key, nesting deeper than `depthLimit`,
/// invalid UTF-8 — so `BrokerMessage` hands such a line to `JSONDecoder`, which decides. What it
/// accepts it reads as `JSONDecoder` does (the suite compares the two).
enum CompactJSON {
    static let depthLimit = 8

    /// The object `bytes` holds, or nil when it is not one this reader accepts.
    static func object(_ bytes: UnsafeBufferPointer<UInt8>) -> [String: JSONValue]? {
        var reader = Reader(bytes: bytes)
        guard case .object(let fields)? = reader.value(depth: 0), reader.index == bytes.count else { return nil }
        return fields
    }

    private struct Reader {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        private var next: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func value(depth: Int) -> JSONValue? {
            guard let byte = next else { return nil }
            switch byte {
            case UInt8(ascii: "{"): return depth < CompactJSON.depthLimit ? object(depth: depth + 1) : nil
            case UInt8(ascii: "["): return depth < CompactJSON.depthLimit ? array(depth: depth + 1) : nil
            case UInt8(ascii: "\""): return string().map(JSONValue.string)
            case UInt8(ascii: "t"): return literal("true", .bool(true))
            case UInt8(ascii: "f"): return literal("false", .bool(false))
            case UInt8(ascii: "n"): return literal("null", .null)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return number()
            default: return nil
            }
        }

        private mutating func object(depth: Int) -> JSONValue? {
            index += 1
            var fields: [String: JSONValue] = [:]
            // Room for a line's fields at once (a FIX has some twenty-five; growing 1 → 2 → … → 32
            // rehashed every key five times: 13 k instructions a line). Only for the line itself:
            // room reserved for each nested object would let a line of empty ones (`[{},{},…]`,
            // some 20,000 within the 64 KiB line limit) cost megabytes.
            if depth == 1 { fields.reserveCapacity(32) }
            if next == UInt8(ascii: "}") {
                index += 1
                return .object(fields)
            }
            while true {
                guard next == UInt8(ascii: "\""), let key = string(), next == UInt8(ascii: ":") else { return nil }
                index += 1
                guard let value = value(depth: depth), fields.updateValue(value, forKey: key) == nil else { return nil }
                switch next {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    return .object(fields)
                default: return nil
                }
            }
        }

        private mutating func array(depth: Int) -> JSONValue? {
            index += 1
            var values: [JSONValue] = []
            if next == UInt8(ascii: "]") {
                index += 1
                return .array(values)
            }
            while true {
                guard let value = value(depth: depth) else { return nil }
                values.append(value)
                switch next {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    return .array(values)
                default: return nil
                }
            }
        }

        /// A string with no escape and no control character, valid UTF-8 (else nil).
        private mutating func string() -> String? {
            index += 1
            let start = index
            var ascii = true
            while let byte = next {
                if byte == UInt8(ascii: "\"") {
                    let span = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    // ASCII is valid UTF-8 as it stands; anything else is validated.
                    let text = ascii ? String(decoding: span, as: UTF8.self) : String(validating: span, as: UTF8.self)
                    index += 1
                    return text
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { return nil }
                ascii = ascii && byte < 0x80
                index += 1
            }
            return nil
        }

        private mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { return nil }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return nil }
            index += count
            return value
        }

        /// A number in JSON's grammar (`-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`), finite,
        /// read by Swift's `Double(_:)` (correctly rounded, whatever the C locale says).
        private mutating func number() -> JSONValue? {
            let start = index
            if next == UInt8(ascii: "-") { index += 1 }
            guard let first = next, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return nil }
            index += 1
            if first != UInt8(ascii: "0") { skipDigits() }
            if next == UInt8(ascii: ".") {
                index += 1
                guard skipDigits() > 0 else { return nil }
            }
            // A mantissa that is not zero read as zero (1e-400) is left to the decoder, which
            // refuses it.
            let mantissaIsZero = bytes[start..<index].allSatisfy {
                $0 == UInt8(ascii: "0") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
            }
            if next == UInt8(ascii: "e") || next == UInt8(ascii: "E") {
                index += 1
                if next == UInt8(ascii: "+") || next == UInt8(ascii: "-") { index += 1 }
                guard skipDigits() > 0 else { return nil }
            }
            // Longer than any number the protocol writes: the decoder's (a hostile program's
            // 60,000 digits cost strtod what they cost before, not more).
            guard index - start <= 40 else { return nil }
            // Up to 15 bytes the text is a small string (no allocation).
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let value = Double(text), value.isFinite, value != 0 || mantissaIsZero else { return nil }
            return .number(value)
        }

        @discardableResult private mutating func skipDigits() -> Int {
            let start = index
            while let byte = next, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) { index += 1 }
            return index - start
        }
    }
}
