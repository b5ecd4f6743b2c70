import FoundationEssentials

/// A JSON value as read (Foundation's decoder tells booleans from numbers; `JSONSerialization`
/// on Linux does not).
public enum JSONValue: Decodable, Sendable {
    /// JSON `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object.
    case object([String: JSONValue])

    /// Reads whichever kind of value the decoder holds.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }
}

/// A line as read: its fields.
public struct BrokerMessage: Sendable {
    let fields: [String: JSONValue]
    /// The line's `class` (empty if it has none).
    public var messageClass: String { string("class") ?? "" }

    private static let decoder = JSONDecoder()

    /// Parses one line; nil when it is not a JSON object with a `class`.
    public init?(line: some Collection<UInt8>) {
        // The compact lines gpslocd and its programs write are read directly; anything else
        // (spaces, escapes, what a hostile program sends) by Foundation's decoder.
        let compact =
            line.withContiguousStorageIfAvailable(CompactJSON.object)
            ?? Array(line).withUnsafeBufferPointer(CompactJSON.object)
        guard let object = compact ?? (try? Self.decoder.decode([String: JSONValue].self, from: Data(line))),
            case .string = object["class"]
        else { return nil }
        fields = object
    }
    /// A message with these fields.
    public init(fields: [String: JSONValue]) { self.fields = fields }

    /// The string under `key`, if it is one.
    public func string(_ key: String) -> String? {
        if case .string(let value) = fields[key] { value } else { nil }
    }
    /// The number under `key`, if it is one.
    public func double(_ key: String) -> Double? {
        if case .number(let value) = fields[key] { value } else { nil }
    }
    /// The whole number under `key`, if it is one.
    public func int(_ key: String) -> Int? {
        guard let value = double(key), value == value.rounded(), abs(value) < 1e15 else { return nil }
        return Int(value)
    }
    /// The boolean under `key`, if it is one.
    public func bool(_ key: String) -> Bool? {
        if case .bool(let value) = fields[key] { value } else { nil }
    }
    func object(_ key: String) -> BrokerMessage? {
        if case .object(let fields) = fields[key] { BrokerMessage(fields: fields) } else { nil }
    }
    /// The objects in the array under `key` (empty if none).
    public func objects(_ key: String) -> [BrokerMessage] {
        guard case .array(let values) = fields[key] else { return [] }
        return values.compactMap { value in
            if case .object(let fields) = value { BrokerMessage(fields: fields) } else { nil }
        }
    }
}
