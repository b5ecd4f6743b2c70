/// One line being written: fields in order, JSON-escaped, into one buffer of UTF-8 (appending
/// each piece there costs about half what a string interpolation a field did: gpslocd writes a
/// FIX line of some twenty numbers every receiver cycle for every program).
public struct BrokerLine: Sendable {
    private var bytes: [UInt8] = []

    /// A line of class `messageClass` with no other field yet.
    public init(_ messageClass: String) {
        bytes.reserveCapacity(320)
        bytes.append(contentsOf: #"{"class":"#.utf8)
        Self.appendQuoted(messageClass, to: &bytes)
    }

    /// `,"key":` before a value.
    private mutating func key(_ key: String) {
        bytes.append(UInt8(ascii: ","))
        Self.appendQuoted(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Appends `text`'s UTF-8 as it is.
    private mutating func append(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Adds a string field (nothing when nil).
    public mutating func add(_ key: String, _ value: String?) {
        guard let value else { return }
        self.key(key)
        Self.appendQuoted(value, to: &bytes)
    }
    /// Adds a number field (nothing when nil or not finite).
    public mutating func add(_ key: String, _ value: Double?) {
        guard let value, value.isFinite else { return }
        self.key(key)
        append(value.description)
    }
    /// Adds an integer field (nothing when nil).
    public mutating func add(_ key: String, _ value: Int?) {
        guard let value else { return }
        self.key(key)
        append(value.description)
    }
    /// Adds a boolean field (nothing when nil).
    public mutating func add(_ key: String, _ value: Bool?) {
        guard let value else { return }
        self.key(key)
        append(value ? "true" : "false")
    }
    /// A value already written as JSON (an array of objects).
    public mutating func addRaw(_ key: String, _ json: String) {
        self.key(key)
        append(json)
    }

    /// The finished line, newline included.
    public var line: String { finished("}\n") }
    /// The finished object, without the newline (for arrays).
    public var object: String { finished("}") }

    private func finished(_ end: StaticString) -> String {
        String(unsafeUninitializedCapacity: bytes.count + end.utf8CodeUnitCount) { buffer in
            let count = bytes.count
            _ = buffer.initialize(fromContentsOf: bytes)
            end.withUTF8Buffer { tail in
                for (index, byte) in tail.enumerated() { buffer[count + index] = byte }
            }
            return count + end.utf8CodeUnitCount
        }
    }

    /// `value` as a JSON string: quoted, with `"`, `\\` and the control characters escaped. Only
    /// ASCII bytes are ever escaped, and no byte of a multi-byte UTF-8 sequence is ASCII, so the
    /// rest is copied as it is.
    static func appendQuoted(_ value: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: #"\\"#.utf8)
            case UInt8(ascii: "\n"): bytes.append(contentsOf: #"\n"#.utf8)
            case UInt8(ascii: "\r"): bytes.append(contentsOf: #"\r"#.utf8)
            case UInt8(ascii: "\t"): bytes.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(hex[Int(byte >> 4)])
                bytes.append(hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
