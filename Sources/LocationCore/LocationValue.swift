import FoundationEssentials
import GNSSCore

// The value the rules core delivers, and the GNSS vocabulary it carries. `CLLocation` (in
// GPSLocation) is one of these behind Apple's class; gpsloc and gpslocd use it directly.

/// The accuracy tier a location meets: the best `kCLLocationAccuracy*` level its
/// `horizontalAccuracy` (68 %) satisfies. Thresholds, in metres: bestForNavigation ≤ 3 (and a
/// 3D fix), best ≤ 5, nearestTenMeters ≤ 10, hundredMeters ≤ 100, kilometer ≤ 1000,
/// threeKilometers ≤ 3000; anything worse, or unknown, is `coarse`.
public enum AccuracyClass: Int, Sendable, Comparable, CaseIterable, CustomStringConvertible {
    /// ≤ 3 m, with a 3D fix.
    case bestForNavigation = 0
    /// ≤ 5 m.
    case best
    /// ≤ 10 m.
    case nearestTenMeters
    /// ≤ 100 m.
    case hundredMeters
    /// ≤ 1 km.
    case kilometer
    /// ≤ 3 km.
    case threeKilometers
    /// Worse than 3 km, or unknown.
    case coarse

    /// Lower is better.
    public static func < (lhs: AccuracyClass, rhs: AccuracyClass) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The tier a `desiredAccuracy` value names: −2 → bestForNavigation, −1 → best, otherwise
    /// the first tier whose threshold is at least the value (10 → nearestTenMeters, 1000 → kilometer).
    public init(desiredAccuracy: CLLocationAccuracy) {
        switch desiredAccuracy {
        case ..<(-1.5): self = .bestForNavigation
        case ..<0: self = .best
        case ...10: self = .nearestTenMeters
        case ...100: self = .hundredMeters
        case ...1000: self = .kilometer
        case ...3000: self = .threeKilometers
        default: self = .coarse
        }
    }

    /// The tier a horizontal accuracy (metres, 68 %) meets; `bestForNavigation` only with a 3D
    /// fix; unknown (nil, negative, not finite) is `coarse`. The one rule for every location.
    public init(horizontalAccuracy: Double?, mode: FixMode) {
        self = .coarse
        guard let h = horizontalAccuracy, h.isFinite, h >= 0 else { return }
        for tier in AccuracyClass.allCases where h <= tier.threshold {
            if tier == .bestForNavigation && mode != .threeDimensional { continue }
            self = tier
            return
        }
    }

    /// The largest `horizontalAccuracy` (metres, 68 %) of the tier; infinity for coarse.
    public var threshold: CLLocationAccuracy {
        switch self {
        case .bestForNavigation: 3
        case .best: 5
        case .nearestTenMeters: 10
        case .hundredMeters: 100
        case .kilometer: 1000
        case .threeKilometers: 3000
        case .coarse: .infinity
        }
    }

    /// The `kCLLocationAccuracy*` name without its prefix (`nearestTenMeters`), or `coarse`.
    public var description: String { literal.description }

    /// The name as a literal: the NDJSON writer copies its bytes with no String in between.
    public var literal: StaticString {
        switch self {
        case .bestForNavigation: "bestForNavigation"
        case .best: "best"
        case .nearestTenMeters: "nearestTenMeters"
        case .hundredMeters: "hundredMeters"
        case .kilometer: "kilometer"
        case .threeKilometers: "threeKilometers"
        case .coarse: "coarse"
        }
    }
}

/// What GPSLocation knows about a location beyond Apple's fields.
public struct GNSSDetails: Sendable, Equatable {
    /// `.twoDimensional` or `.threeDimensional`.
    public var fixMode: FixMode
    /// What kind of fix: autonomous, differential, RTK fixed or float, dead reckoning.
    public var quality: FixQuality
    /// The accuracy tier `horizontalAccuracy` meets (see `AccuracyClass`).
    public var accuracyClass: AccuracyClass
    /// True when the authorization gate reduced this location's accuracy.
    public var reduced: Bool
    /// The receiver, when known.
    public var device: String? {
        get { DeviceNames.name(deviceNumber) }
        set { deviceNumber = DeviceNames.number(newValue) }
    }
    /// `device`'s number in `DeviceNames`: a location is plain data, copied without the runtime's
    /// generic value witnesses (as `Fix`).
    /// (The accuracy stage sets it from the fix's own, without a look-up of the path.)
    var deviceNumber: UInt32 = 0
    /// The engine judged the device stationary at this location (`StationaryDetector`: it has
    /// stayed within twice its accuracy for 10 s): what `CLLocationUpdate.isStationary` says.
    public package(set) var isStationary = false

    /// Details of a GNSS location.
    public init(
        fixMode: FixMode, quality: FixQuality = .unknown, accuracyClass: AccuracyClass, reduced: Bool = false,
        device: String? = nil
    ) {
        self.fixMode = fixMode
        self.quality = quality
        self.accuracyClass = accuracyClass
        self.reduced = reduced
        self.device = device
    }

    /// Details whose device is `deviceNumber` in `DeviceNames` (a fix's, passed on as it is).
    init(fixMode: FixMode, quality: FixQuality, accuracyClass: AccuracyClass, deviceNumber: UInt32) {
        self.fixMode = fixMode
        self.quality = quality
        self.accuracyClass = accuracyClass
        reduced = false
        self.deviceNumber = deviceNumber
    }
}

/// A delivered location, as the rules core makes it: Apple's fields with their invalid markers
/// (negative accuracy: invalid; `verticalAccuracy` ≤ 0: no altitude; negative speed, course and
/// their accuracies: unknown), GPSLocation's GNSS details, and where it came from.
///
/// Every face maps it: `CLLocation` keeps one (and so is not `Codable` itself, as Apple's is not),
/// `gpsloc` prints it, gpslocd sends it. `Codable` here is the library's storage form (the last
/// location cache): each value under its own name, dates as seconds since 1970.
public struct LocationValue: Sendable, Equatable {
    /// Latitude and longitude, WGS 84.
    public var coordinate: CLLocationCoordinate2D
    /// Metres above mean sea level; valid when `verticalAccuracy` > 0.
    public var altitude: CLLocationDistance
    /// Metres above the WGS 84 ellipsoid; 0 without a valid altitude.
    public var ellipsoidalAltitude: CLLocationDistance
    /// Metres, 68 %; negative: the coordinate is invalid.
    public var horizontalAccuracy: CLLocationAccuracy
    /// Metres, 68 %; 0 or negative: no valid altitude.
    public var verticalAccuracy: CLLocationAccuracy
    /// Degrees clockwise from true north; negative: unknown.
    public var course: CLLocationDirection
    /// Degrees, 68 %; negative: unknown.
    public var courseAccuracy: CLLocationDirectionAccuracy
    /// Metres per second over ground; negative: unknown.
    public var speed: CLLocationSpeed
    /// Metres per second, 68 %; negative: unknown.
    public var speedAccuracy: CLLocationSpeedAccuracy
    /// When the receiver made the fix (its own clock, UTC).
    public var timestamp: Date
    /// Fix mode, quality, accuracy tier, reduction and receiver; nil for a location made by hand.
    public var gnss: GNSSDetails?
    /// Simulated by software or produced by a receiver; nil when not known.
    public var origin: LocationOrigin?

    /// Every value; `ellipsoidalAltitude` (nil: the altitude's) is 0 without a valid altitude.
    public init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance,
        ellipsoidalAltitude: CLLocationDistance? = nil,
        horizontalAccuracy: CLLocationAccuracy, verticalAccuracy: CLLocationAccuracy, course: CLLocationDirection,
        courseAccuracy: CLLocationDirectionAccuracy, speed: CLLocationSpeed, speedAccuracy: CLLocationSpeedAccuracy,
        timestamp: Date, gnss: GNSSDetails? = nil, origin: LocationOrigin? = nil
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
        self.origin = origin
    }

    /// Apple's `init(latitude:longitude:)`: accuracy 0, no altitude, speed or course, now.
    public init(latitude: CLLocationDegrees, longitude: CLLocationDegrees) {
        self.init(
            coordinate: CLLocationCoordinate2D(latitude: latitude, longitude: longitude), altitude: 0,
            horizontalAccuracy: 0, verticalAccuracy: -1, course: -1, courseAccuracy: -1, speed: -1, speedAccuracy: -1,
            timestamp: Date())
    }

    /// Every value equal.
    public static func == (a: LocationValue, b: LocationValue) -> Bool {
        a.coordinate.latitude == b.coordinate.latitude && a.coordinate.longitude == b.coordinate.longitude
            && a.altitude == b.altitude && a.ellipsoidalAltitude == b.ellipsoidalAltitude
            && a.horizontalAccuracy == b.horizontalAccuracy && a.verticalAccuracy == b.verticalAccuracy
            && a.course == b.course && a.courseAccuracy == b.courseAccuracy && a.speed == b.speed
            && a.speedAccuracy == b.speedAccuracy && a.timestamp == b.timestamp && a.gnss == b.gnss
            && a.origin == b.origin
    }
}

extension LocationValue: Codable {
    /// The names, in the cache file and in a keyed archive.
    public enum Keys: String, CodingKey, CaseIterable {
        /// The stored fields, by name.
        case latitude, longitude, altitude, ellipsoidalAltitude, horizontalAccuracy, verticalAccuracy, course
        /// The stored fields, by name.
        case courseAccuracy, speed, speedAccuracy, timestamp, fixMode, quality, accuracyClass, reduced, device
        /// The stored fields, by name.
        case simulated, accessory
    }

    /// The numbers every location has, by name (dates as seconds since 1970).
    public var numbers: [(Keys, Double)] {
        [
            (.latitude, coordinate.latitude), (.longitude, coordinate.longitude), (.altitude, altitude),
            (.ellipsoidalAltitude, ellipsoidalAltitude), (.horizontalAccuracy, horizontalAccuracy),
            (.verticalAccuracy, verticalAccuracy), (.course, course), (.courseAccuracy, courseAccuracy),
            (.speed, speed), (.speedAccuracy, speedAccuracy), (.timestamp, timestamp.timeIntervalSince1970),
        ]
    }

    /// Each value under its own name (the last-location cache's form).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        for (key, value) in numbers { try container.encode(value, forKey: key) }
        if let gnss {
            try container.encode(gnss.fixMode.rawValue, forKey: .fixMode)
            try container.encode(gnss.quality.rawValue, forKey: .quality)
            try container.encode(gnss.accuracyClass.description, forKey: .accuracyClass)
            try container.encode(gnss.reduced, forKey: .reduced)
            try container.encodeIfPresent(gnss.device, forKey: .device)
        }
        if let origin {
            try container.encode(origin.isSimulatedBySoftware, forKey: .simulated)
            try container.encode(origin.isProducedByAccessory, forKey: .accessory)
        }
    }

    /// What `encode(to:)` wrote; fails on a missing or non-finite value or an out-of-range coordinate.
    public init(from decoder: any Decoder) throws {
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
                accuracyClass: Self.accuracyClassNamed(
                    try container.decodeIfPresent(String.self, forKey: .accuracyClass)),
                reduced: try container.decodeIfPresent(Bool.self, forKey: .reduced) ?? false,
                device: try container.decodeIfPresent(String.self, forKey: .device))
        }
        let origin = try container.decodeIfPresent(Bool.self, forKey: .simulated).map {
            LocationOrigin(
                isSimulatedBySoftware: $0,
                isProducedByAccessory: try container.decodeIfPresent(Bool.self, forKey: .accessory) ?? false)
        }
        guard let values = Self(numbers: numbers, gnss: gnss, origin: origin) else {
            throw DecodingError.dataCorruptedError(
                forKey: .latitude, in: container,
                debugDescription: "a value is not finite or the coordinate is out of range")
        }
        self = values
    }

    /// A location from its numbers; nil when one is missing or not finite, or the coordinate is
    /// out of range.
    public init?(numbers: [Keys: Double], gnss: GNSSDetails?, origin: LocationOrigin?) {
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
            origin: origin)
    }

    /// The accuracy class with this name (`coarse` for an unknown one).
    public static func accuracyClassNamed(_ name: String?) -> AccuracyClass {
        AccuracyClass.allCases.first { $0.description == name } ?? .coarse
    }
}

/// Where a location came from: software (a replayed recording, a list of fixes, gpsd fed by
/// gpsfake) or a receiver behind gpsd. Apple's `CLLocationSourceInformation`'s two flags, as a value.
public struct LocationOrigin: Sendable, Hashable {
    /// Recorded or made-up data played back.
    public var isSimulatedBySoftware: Bool
    /// An external receiver (a GNSS receiver that gpsd reads).
    public var isProducedByAccessory: Bool

    /// The two flags.
    public init(isSimulatedBySoftware: Bool, isProducedByAccessory: Bool) {
        self.isSimulatedBySoftware = isSimulatedBySoftware
        self.isProducedByAccessory = isProducedByAccessory
    }

    /// Software: a replay, a list of fixes, gpsfake.
    public static let simulated = LocationOrigin(isSimulatedBySoftware: true, isProducedByAccessory: false)
    /// A receiver behind gpsd.
    public static let receiver = LocationOrigin(isSimulatedBySoftware: false, isProducedByAccessory: true)
}

extension LocationValue {
    /// The geodesic distance on the WGS 84 ellipsoid (Karney's method), in metres, ignoring
    /// altitude — Apple's `CLLocation.distance(from:)`.
    public func distance(from other: LocationValue) -> CLLocationDistance {
        Geodesic.wgs84.distance(
            latitude1: coordinate.latitude, longitude1: coordinate.longitude, latitude2: other.coordinate.latitude,
            longitude2: other.coordinate.longitude)
    }

    /// The accuracy tier: the one the engine gave a GNSS location; for another (made by hand,
    /// read back), its `horizontalAccuracy`'s, as a 3D fix when it has a valid altitude.
    public var accuracyClass: AccuracyClass {
        gnss?.accuracyClass
            ?? AccuracyClass(
                horizontalAccuracy: horizontalAccuracy, mode: verticalAccuracy > 0 ? .threeDimensional : .twoDimensional
            )
    }

    /// This location with other GNSS details (the engine's marks).
    public func with(gnss: GNSSDetails?) -> LocationValue {
        var changed = self
        changed.gnss = gnss
        return changed
    }
}

/// A delivered heading, as the rules core makes it: degrees from magnetic and true north
/// (0–359.9; −1 when it cannot be known), its accuracy (0: GNSS heading reports carry none;
/// negative: invalid) and the receiver's time. `CLHeading` keeps one for the CoreLocation face.
public struct HeadingValue: Sendable, Hashable {
    /// Degrees from magnetic north; −1 when no variation is known yet (no position).
    public var magneticHeading: CLLocationDirection
    /// Degrees from true north; −1 when it cannot be known.
    public var trueHeading: CLLocationDirection
    /// Degrees; 0: not reported, negative: invalid.
    public var headingAccuracy: CLLocationDirectionAccuracy
    /// When the receiver reported it (the source's clock).
    public var timestamp: Date

    /// A heading from its parts.
    public init(
        magneticHeading: CLLocationDirection, trueHeading: CLLocationDirection,
        headingAccuracy: CLLocationDirectionAccuracy, timestamp: Date
    ) {
        self.magneticHeading = magneticHeading
        self.trueHeading = trueHeading
        self.headingAccuracy = headingAccuracy
        self.timestamp = timestamp
    }
}
