import GNSSCore

/// One line being written: fields in order, JSON-escaped, into one buffer of UTF-8 (appending
/// each piece there costs about half what a string interpolation a field did: gpslocd writes a
/// FIX line of some twenty numbers every receiver cycle for every program).
public struct BrokerLine: Sendable {
    private var bytes: [UInt8] = []

    /// A line of class `messageClass` with no other field yet.
    public init(_ messageClass: String) {
        bytes.reserveCapacity(320)
        bytes.append(contentsOf: #"{"class":"#.utf8)
        appendJSONString(messageClass, to: &bytes)
    }

    /// `,"key":` before a value.
    private mutating func key(_ key: String) {
        bytes.append(UInt8(ascii: ","))
        appendJSONString(key, to: &bytes)
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
        appendJSONString(value, to: &bytes)
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
}
