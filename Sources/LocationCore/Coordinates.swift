import FoundationEssentials

// CoreLocation's units and coordinate, with Apple's names: the vocabulary the rules are written
// in, so they live in the core (`import GPSLocation` re-exports them unchanged).

/// Degrees, WGS 84.
public typealias CLLocationDegrees = Double
/// Metres; negative means invalid.
public typealias CLLocationAccuracy = Double
/// Metres per second; negative means invalid.
public typealias CLLocationSpeed = Double
/// Metres per second; negative means invalid.
public typealias CLLocationSpeedAccuracy = Double
/// Degrees clockwise from true north; negative means invalid.
public typealias CLLocationDirection = Double
/// Degrees; negative means invalid.
public typealias CLLocationDirectionAccuracy = Double
/// Metres.
public typealias CLLocationDistance = Double

/// A latitude/longitude pair in degrees (WGS 84). Neither `Equatable` nor `Hashable`, as Apple's
/// is not (apps declare those themselves, and a second declaration would not compile); compare
/// with `isSame(as:)`.
public struct CLLocationCoordinate2D: Sendable {
    /// Degrees north of the equator (negative: south), −90…90.
    public var latitude: CLLocationDegrees
    /// Degrees east of Greenwich (negative: west), −180…180.
    public var longitude: CLLocationDegrees
    /// (0, 0).
    public init() {
        latitude = 0
        longitude = 0
    }
    /// A coordinate from its two angles, in degrees; not checked (see `CLLocationCoordinate2DIsValid`).
    public init(latitude: CLLocationDegrees, longitude: CLLocationDegrees) {
        self.latitude = latitude
        self.longitude = longitude
    }
}

extension CLLocationCoordinate2D {
    /// True when both angles are equal (a GPSLocation addition, in place of the `==` Apple
    /// does not declare).
    public func isSame(as other: CLLocationCoordinate2D) -> Bool {
        latitude == other.latitude && longitude == other.longitude
    }
}

/// (−180, −180): fails `CLLocationCoordinate2DIsValid`.
public let kCLLocationCoordinate2DInvalid = CLLocationCoordinate2D(latitude: -180, longitude: -180)

/// Apple's rule: latitude in [−90, 90] and longitude in [−180, 180], bounds included.
/// NaN and infinities are invalid too.
public func CLLocationCoordinate2DIsValid(_ coordinate: CLLocationCoordinate2D) -> Bool {
    coordinate.latitude.isFinite && coordinate.longitude.isFinite && abs(coordinate.latitude) <= 90
        && abs(coordinate.longitude) <= 180
}

/// Apple's C-style constructor: the same as `CLLocationCoordinate2D(latitude:longitude:)`.
public func CLLocationCoordinate2DMake(_ latitude: CLLocationDegrees, _ longitude: CLLocationDegrees)
    -> CLLocationCoordinate2D
{
    CLLocationCoordinate2D(latitude: latitude, longitude: longitude)
}

// Apple's constants for accuracy and distance, and the activity type that sets how long a stop
// lasts before live updates pause: the engine's configuration is written in them.

/// The best the receiver gives, for navigation (−2, Apple's value): every fix qualifies.
public let kCLLocationAccuracyBestForNavigation: CLLocationAccuracy = -2
/// The best the receiver gives (−1, Apple's value): every fix qualifies.
public let kCLLocationAccuracyBest: CLLocationAccuracy = -1
/// Within 10 m.
public let kCLLocationAccuracyNearestTenMeters: CLLocationAccuracy = 10
/// Within 100 m.
public let kCLLocationAccuracyHundredMeters: CLLocationAccuracy = 100
/// Within 1 km.
public let kCLLocationAccuracyKilometer: CLLocationAccuracy = 1000
/// Within 3 km.
public let kCLLocationAccuracyThreeKilometers: CLLocationAccuracy = 3000
/// Approximate locations: as `desiredAccuracy`, a manager with full accuracy authorization is
/// served as if it had reduced accuracy (Apple's documented use). Apple documents no number;
/// its value there is 6,380,000 (about the Earth's radius), distinct from every tier, and so
/// here. Compare it by value with this constant only.
public let kCLLocationAccuracyReduced: CLLocationAccuracy = 6_380_000
/// Deliver every location, however little it moved.
public let kCLDistanceFilterNone: CLLocationDistance = -1
/// The largest distance: a region or filter that never triggers.
public let CLLocationDistanceMax: CLLocationDistance = .greatestFiniteMagnitude
/// The largest time interval: a deferral that never times out.
public let CLTimeIntervalMax: TimeInterval = .greatestFiniteMagnitude

/// What the device is doing: decides how long a stop lasts before live updates pause
/// (Apple's raw values).
public enum CLActivityType: Int, Sendable {
    /// No particular activity (the default).
    case other = 1
    /// Driving: pauses only after a longer stop.
    case automotiveNavigation = 2
    /// Walking, running, cycling.
    case fitness = 3
    /// Other vehicles: boats, trains.
    case otherNavigation = 4
    /// Flying: never paused automatically.
    case airborne = 5
}

/// Apple's `kCLHeadingFilterNone`: every heading change.
public let kCLHeadingFilterNone: CLLocationDegrees = -1
