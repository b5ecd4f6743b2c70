import Foundation

// Archiving a heading or a visit as apps cache them (`NSKeyedArchiver` with secure coding), like
// `CLLocation`, `CLRegion` and `CLPlacemark`. Not `Codable`: Apple's are not, and an app's own
// `Encodable` extension must be the one `JSONEncoder` uses.

/// The keyed-archive coding of a type whose fields are numbers named by `Key` (dates as seconds
/// since 1970): one implementation for `CLHeading` and `CLVisit`.
private enum NumberFields<Key: CaseIterable & Hashable & RawRepresentable> where Key.RawValue == String {
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
}

extension CLHeading {
    /// True: archives with `requiringSecureCoding: true` take it.
    public static var supportsSecureCoding: Bool { true }

    enum Key: String, CaseIterable {
        case magneticHeading, trueHeading, headingAccuracy, timestamp, x, y, z
    }

    private var values: [Key: Double] {
        [
            .magneticHeading: magneticHeading, .trueHeading: trueHeading, .headingAccuracy: headingAccuracy,
            .timestamp: timestamp.timeIntervalSince1970, .x: x, .y: y, .z: z,
        ]
    }

    convenience init(_ values: [Key: Double]) {
        self.init(
            magneticHeading: values[.magneticHeading] ?? -1, trueHeading: values[.trueHeading] ?? -1,
            headingAccuracy: values[.headingAccuracy] ?? -1,
            timestamp: Date(timeIntervalSince1970: values[.timestamp] ?? 0), x: values[.x] ?? 0, y: values[.y] ?? 0,
            z: values[.z] ?? 0)
    }

    /// The fields of a keyed archive; nil when it lacks the required ones.
    static func decodedValues(_ coder: NSCoder) -> [Key: Double]? {
        let values = NumberFields<Key>.decode(coder)
        return values[.timestamp] == nil ? nil : values
    }

    /// Writes every field to a keyed archive (what this heading reports, a subclass's overrides
    /// included).
    func encodeFields(with coder: NSCoder) {
        NumberFields.encode(values, with: coder)
    }
}

extension CLVisit {
    /// True: archives with `requiringSecureCoding: true` take it.
    public static var supportsSecureCoding: Bool { true }

    enum Key: String, CaseIterable {
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

    /// Writes every field to a keyed archive.
    func encodeFields(with coder: NSCoder) {
        NumberFields.encode(values, with: coder)
    }
}
