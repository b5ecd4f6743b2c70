import Foundation

// Archiving a heading or a visit as apps cache them (`NSKeyedArchiver` with secure coding, or
// `Codable`), like `CLLocation`, `CLRegion` and `CLPlacemark`.

/// The codings of a type whose fields are numbers named by `Key` (dates as seconds since 1970):
/// one implementation for `CLHeading` and `CLVisit`.
private enum NumberFields<Key: CodingKey & CaseIterable & Hashable & RawRepresentable> where Key.RawValue == String {
    static func encode(_ values: [Key: Double], with coder: NSCoder) {
        for (key, value) in values { coder.encode(value, forKey: key.rawValue) }
    }

    /// The fields the archive has (a missing one is absent, for the caller to require or default).
    static func decode(_ coder: NSCoder) -> [Key: Double] {
        var values: [Key: Double] = [:]
        for key in Key.allCases where coder.containsValue(forKey: key.rawValue) {
            values[key] = coder.decodeDouble(forKey: key.rawValue)
        }
        return values
    }

    static func encode(_ values: [Key: Double], to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        for key in Key.allCases { try container.encode(values[key] ?? 0, forKey: key) }
    }

    /// Every field; a missing one is a decoding error.
    static func decode(_ decoder: any Decoder) throws -> [Key: Double] {
        let container = try decoder.container(keyedBy: Key.self)
        var values: [Key: Double] = [:]
        for key in Key.allCases { values[key] = try container.decode(Double.self, forKey: key) }
        return values
    }
}

extension CLHeading: NSSecureCoding, Codable {
    /// True: archives with `requiringSecureCoding: true` take it.
    public static var supportsSecureCoding: Bool { true }

    private enum Key: String, CodingKey, CaseIterable {
        case magneticHeading, trueHeading, headingAccuracy, timestamp, x, y, z
    }

    private var values: [Key: Double] {
        [
            .magneticHeading: magneticHeading, .trueHeading: trueHeading, .headingAccuracy: headingAccuracy,
            .timestamp: timestamp.timeIntervalSince1970, .x: x, .y: y, .z: z,
        ]
    }

    private convenience init(_ values: [Key: Double]) {
        self.init(
            magneticHeading: values[.magneticHeading] ?? -1, trueHeading: values[.trueHeading] ?? -1,
            headingAccuracy: values[.headingAccuracy] ?? -1,
            timestamp: Date(timeIntervalSince1970: values[.timestamp] ?? 0), x: values[.x] ?? 0, y: values[.y] ?? 0,
            z: values[.z] ?? 0)
    }

    /// Writes every field to a keyed archive.
    public func encode(with coder: NSCoder) {
        NumberFields.encode(values, with: coder)
    }

    /// Reads what `encode(with:)` wrote; nil when the archive lacks the required fields.
    public convenience init?(coder: NSCoder) {
        let values = NumberFields<Key>.decode(coder)
        guard values[.timestamp] != nil else { return nil }
        self.init(values)
    }

    /// Every field, as numbers (dates as seconds since 1970).
    public func encode(to encoder: any Encoder) throws {
        try NumberFields.encode(values, to: encoder)
    }

    /// Reads what `encode(to:)` wrote.
    public convenience init(from decoder: any Decoder) throws {
        self.init(try NumberFields<Key>.decode(decoder))
    }
}

extension CLVisit {
    /// True: archives with `requiringSecureCoding: true` take it.
    public static var supportsSecureCoding: Bool { true }

    enum Key: String, CodingKey, CaseIterable {
        case arrivalDate, departureDate, latitude, longitude, horizontalAccuracy
    }

    private var values: [Key: Double] {
        [
            .arrivalDate: arrivalDate.timeIntervalSince1970, .departureDate: departureDate.timeIntervalSince1970,
            .latitude: coordinate.latitude, .longitude: coordinate.longitude, .horizontalAccuracy: horizontalAccuracy,
        ]
    }

    convenience init(_ values: [Key: Double]) {
        self.init(
            arrivalDate: Date(timeIntervalSince1970: values[.arrivalDate] ?? 0),
            departureDate: Date(
                timeIntervalSince1970: values[.departureDate] ?? Date.distantFuture.timeIntervalSince1970),
            coordinate: CLLocationCoordinate2D(latitude: values[.latitude] ?? 0, longitude: values[.longitude] ?? 0),
            horizontalAccuracy: values[.horizontalAccuracy] ?? -1)
    }

    /// The fields of a keyed archive; nil when it lacks the required ones.
    static func decodedValues(_ coder: NSCoder) -> [Key: Double]? {
        let values = NumberFields<Key>.decode(coder)
        guard values[.arrivalDate] != nil, values[.latitude] != nil, values[.longitude] != nil else { return nil }
        return values
    }

    static func decodedValues(_ decoder: any Decoder) throws -> [Key: Double] {
        try NumberFields<Key>.decode(decoder)
    }

    /// Writes every field to a keyed archive.
    public func encode(with coder: NSCoder) {
        NumberFields.encode(values, with: coder)
    }

    /// Every field, as numbers (dates as seconds since 1970).
    public func encode(to encoder: any Encoder) throws {
        try NumberFields.encode(values, to: encoder)
    }
}
