import Foundation

/// A location's values, as `CLLocation` keeps them and as the library stores them (the last
/// location cache, a keyed archive). The library's own type, so `CLLocation` itself is not
/// `Codable` (Apple's is not): an app's own `Encodable` extension of it is the one used.
struct LocationValues: Sendable, Equatable {
    var coordinate: CLLocationCoordinate2D
    var altitude: CLLocationDistance
    var ellipsoidalAltitude: CLLocationDistance
    var horizontalAccuracy: CLLocationAccuracy
    var verticalAccuracy: CLLocationAccuracy
    var course: CLLocationDirection
    var courseAccuracy: CLLocationDirectionAccuracy
    var speed: CLLocationSpeed
    var speedAccuracy: CLLocationSpeedAccuracy
    var timestamp: Date
    var gnss: GNSSDetails?
    var sourceInformation: CLLocationSourceInformation?

    /// Every value; `ellipsoidalAltitude` (nil: the altitude's) is 0 without a valid altitude.
    init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance,
        ellipsoidalAltitude: CLLocationDistance? = nil,
        horizontalAccuracy: CLLocationAccuracy, verticalAccuracy: CLLocationAccuracy, course: CLLocationDirection,
        courseAccuracy: CLLocationDirectionAccuracy, speed: CLLocationSpeed, speedAccuracy: CLLocationSpeedAccuracy,
        timestamp: Date, gnss: GNSSDetails? = nil, sourceInformation: CLLocationSourceInformation? = nil
    ) {
        self.coordinate = coordinate
        self.altitude = altitude
        self.ellipsoidalAltitude = verticalAccuracy > 0 ? ellipsoidalAltitude ?? altitude : 0
        self.horizontalAccuracy = horizontalAccuracy
        self.verticalAccuracy = verticalAccuracy
        self.course = course
        self.courseAccuracy = courseAccuracy
        self.speed = speed
        self.speedAccuracy = speedAccuracy
        self.timestamp = timestamp
        self.gnss = gnss
        self.sourceInformation = sourceInformation
    }

    /// Apple's `init(latitude:longitude:)`: accuracy 0, no altitude, speed or course, now.
    init(latitude: CLLocationDegrees, longitude: CLLocationDegrees) {
        self.init(
            coordinate: CLLocationCoordinate2D(latitude: latitude, longitude: longitude), altitude: 0,
            horizontalAccuracy: 0, verticalAccuracy: -1, course: -1, courseAccuracy: -1, speed: -1, speedAccuracy: -1,
            timestamp: Date())
    }

    /// What `location` reports (through a subclass's overrides, if it has them).
    init(_ location: CLLocation) {
        self.init(
            coordinate: location.coordinate, altitude: location.altitude,
            ellipsoidalAltitude: location.ellipsoidalAltitude, horizontalAccuracy: location.horizontalAccuracy,
            verticalAccuracy: location.verticalAccuracy, course: location.course,
            courseAccuracy: location.courseAccuracy, speed: location.speed, speedAccuracy: location.speedAccuracy,
            timestamp: location.timestamp, gnss: location.gnss, sourceInformation: location.sourceInformation)
    }

    static func == (a: LocationValues, b: LocationValues) -> Bool {
        a.coordinate.latitude == b.coordinate.latitude && a.coordinate.longitude == b.coordinate.longitude
            && a.altitude == b.altitude && a.ellipsoidalAltitude == b.ellipsoidalAltitude
            && a.horizontalAccuracy == b.horizontalAccuracy && a.verticalAccuracy == b.verticalAccuracy
            && a.course == b.course && a.courseAccuracy == b.courseAccuracy && a.speed == b.speed
            && a.speedAccuracy == b.speedAccuracy && a.timestamp == b.timestamp && a.gnss == b.gnss
            && a.sourceInformation == b.sourceInformation
    }
}

extension LocationValues: Codable {
    /// The names, in the cache file and in a keyed archive.
    enum Keys: String, CodingKey, CaseIterable {
        case latitude, longitude, altitude, ellipsoidalAltitude, horizontalAccuracy, verticalAccuracy, course
        case courseAccuracy, speed, speedAccuracy, timestamp, fixMode, quality, accuracyClass, reduced, device
        case simulated, accessory
    }

    /// The numbers every location has, by name (dates as seconds since 1970).
    private var numbers: [(Keys, Double)] {
        [
            (.latitude, coordinate.latitude), (.longitude, coordinate.longitude), (.altitude, altitude),
            (.ellipsoidalAltitude, ellipsoidalAltitude), (.horizontalAccuracy, horizontalAccuracy),
            (.verticalAccuracy, verticalAccuracy), (.course, course), (.courseAccuracy, courseAccuracy),
            (.speed, speed), (.speedAccuracy, speedAccuracy), (.timestamp, timestamp.timeIntervalSince1970),
        ]
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        for (key, value) in numbers { try container.encode(value, forKey: key) }
        if let gnss {
            try container.encode(gnss.fixMode.rawValue, forKey: .fixMode)
            try container.encode(gnss.quality.rawValue, forKey: .quality)
            try container.encode(gnss.accuracyClass.description, forKey: .accuracyClass)
            try container.encode(gnss.reduced, forKey: .reduced)
            try container.encodeIfPresent(gnss.device, forKey: .device)
        }
        if let sourceInformation {
            try container.encode(sourceInformation.isSimulatedBySoftware, forKey: .simulated)
            try container.encode(sourceInformation.isProducedByAccessory, forKey: .accessory)
        }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        var numbers: [Keys: Double] = [:]
        for key in Keys.allCases[...Keys.allCases.firstIndex(of: .timestamp)!] {
            numbers[key] = try container.decode(Double.self, forKey: key)
        }
        var gnss: GNSSDetails?
        if let mode = try container.decodeIfPresent(Int.self, forKey: .fixMode).flatMap(FixMode.init(rawValue:)) {
            gnss = GNSSDetails(
                fixMode: mode,
                quality: try container.decodeIfPresent(Int.self, forKey: .quality).flatMap(FixQuality.init(rawValue:))
                    ?? .unknown,
                accuracyClass: Self.accuracyClass(
                    named: try container.decodeIfPresent(String.self, forKey: .accuracyClass)),
                reduced: try container.decodeIfPresent(Bool.self, forKey: .reduced) ?? false,
                device: try container.decodeIfPresent(String.self, forKey: .device))
        }
        let source = try container.decodeIfPresent(Bool.self, forKey: .simulated).map {
            CLLocationSourceInformation(
                softwareSimulationState: $0,
                andExternalAccessoryState: try container.decodeIfPresent(Bool.self, forKey: .accessory) ?? false)
        }
        guard let values = Self(numbers: numbers, gnss: gnss, sourceInformation: source) else {
            throw DecodingError.dataCorruptedError(
                forKey: .latitude, in: container,
                debugDescription: "a value is not finite or the coordinate is out of range")
        }
        self = values
    }

    /// A location from its numbers; nil when one is missing or not finite, or the coordinate is
    /// out of range.
    private init?(numbers: [Keys: Double], gnss: GNSSDetails?, sourceInformation: CLLocationSourceInformation?) {
        func number(_ key: Keys) -> Double? { numbers[key].flatMap { $0.isFinite ? $0 : nil } }
        guard let latitude = number(.latitude), let longitude = number(.longitude), abs(latitude) <= 90,
            abs(longitude) <= 180, let altitude = number(.altitude),
            let ellipsoidalAltitude = number(.ellipsoidalAltitude),
            let horizontalAccuracy = number(.horizontalAccuracy), let verticalAccuracy = number(.verticalAccuracy),
            let course = number(.course), let courseAccuracy = number(.courseAccuracy), let speed = number(.speed),
            let speedAccuracy = number(.speedAccuracy), let seconds = number(.timestamp)
        else { return nil }
        self.init(
            coordinate: CLLocationCoordinate2D(latitude: latitude, longitude: longitude), altitude: altitude,
            ellipsoidalAltitude: ellipsoidalAltitude, horizontalAccuracy: horizontalAccuracy,
            verticalAccuracy: verticalAccuracy, course: course, courseAccuracy: courseAccuracy, speed: speed,
            speedAccuracy: speedAccuracy, timestamp: Date(timeIntervalSince1970: seconds), gnss: gnss,
            sourceInformation: sourceInformation)
    }

    private static func accuracyClass(named name: String?) -> AccuracyClass {
        AccuracyClass.allCases.first { $0.description == name } ?? .coarse
    }
}

// A keyed archive (`NSSecureCoding`): every value under its own key, the names above.
extension LocationValues {
    /// The key 0.7.1 and earlier wrote: the whole location as the cache's JSON.
    private static let formerArchiveKey = "GPSLocation.location"

    func encode(with coder: NSCoder) {
        for (key, value) in numbers { coder.encode(value, forKey: key.rawValue) }
        if let gnss {
            coder.encode(gnss.fixMode.rawValue, forKey: Keys.fixMode.rawValue)
            coder.encode(gnss.quality.rawValue, forKey: Keys.quality.rawValue)
            coder.encode(gnss.accuracyClass.description as NSString, forKey: Keys.accuracyClass.rawValue)
            coder.encode(gnss.reduced, forKey: Keys.reduced.rawValue)
            if let device = gnss.device { coder.encode(device as NSString, forKey: Keys.device.rawValue) }
        }
        if let sourceInformation {
            coder.encode(sourceInformation.isSimulatedBySoftware, forKey: Keys.simulated.rawValue)
            coder.encode(sourceInformation.isProducedByAccessory, forKey: Keys.accessory.rawValue)
        }
    }

    /// What `encode(with:)` wrote (or an earlier version's archive); nil when a value is
    /// missing, of the wrong type or out of range.
    init?(coder: NSCoder) {
        // Only a key that is there: swift-corelibs' decoder fails the whole archive on a missing one.
        if coder.containsValue(forKey: Self.formerArchiveKey) {
            guard let data = coder.decodeObject(of: NSData.self, forKey: Self.formerArchiveKey) as Data? else {
                return nil
            }
            guard let values = try? JSONDecoder().decode(LocationValues.self, from: data) else { return nil }
            self = values
            return
        }
        var numbers: [Keys: Double] = [:]
        for key in Keys.allCases[...Keys.allCases.firstIndex(of: .timestamp)!]
        where coder.containsValue(forKey: key.rawValue) {
            numbers[key] = coder.decodeDouble(forKey: key.rawValue)
        }
        var gnss: GNSSDetails?
        if coder.containsValue(forKey: Keys.fixMode.rawValue),
            let mode = FixMode(rawValue: coder.decodeInteger(forKey: Keys.fixMode.rawValue))
        {
            gnss = GNSSDetails(
                fixMode: mode,
                quality: FixQuality(rawValue: coder.decodeInteger(forKey: Keys.quality.rawValue)) ?? .unknown,
                accuracyClass: Self.accuracyClass(
                    named: coder.containsValue(forKey: Keys.accuracyClass.rawValue)
                        ? coder.decodeObject(of: NSString.self, forKey: Keys.accuracyClass.rawValue) as String? : nil),
                reduced: coder.decodeBool(forKey: Keys.reduced.rawValue),
                device: coder.containsValue(forKey: Keys.device.rawValue)
                    ? coder.decodeObject(of: NSString.self, forKey: Keys.device.rawValue) as String? : nil)
        }
        let source =
            coder.containsValue(forKey: Keys.simulated.rawValue)
            ? CLLocationSourceInformation(
                softwareSimulationState: coder.decodeBool(forKey: Keys.simulated.rawValue),
                andExternalAccessoryState: coder.decodeBool(forKey: Keys.accessory.rawValue)) : nil
        self.init(numbers: numbers, gnss: gnss, sourceInformation: source)
    }
}
