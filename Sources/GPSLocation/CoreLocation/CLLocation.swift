import Foundation

/// Where a location came from (Apple's, iOS 15): from software — a replayed recording, a list
/// of fixes, gpsd fed by gpsfake — or from a receiver behind gpsd.
// @unchecked Sendable: a non-final class cannot be checked; its own values are immutable.
open class CLLocationSourceInformation: NSObject, NSCopying, @unchecked Sendable {
    /// Recorded or made-up data played back (`NMEAReplaySource`, `FixListSource`, gpsfake).
    open var isSimulatedBySoftware: Bool { simulated }
    /// Produced by an external receiver (a GNSS receiver that gpsd reads).
    open var isProducedByAccessory: Bool { accessory }
    private let simulated: Bool
    private let accessory: Bool

    /// Apple's initializer: the two flags.
    public init(
        softwareSimulationState isSimulatedBySoftware: Bool, andExternalAccessoryState isProducedByAccessory: Bool
    ) {
        simulated = isSimulatedBySoftware
        accessory = isProducedByAccessory
        super.init()
    }

    /// Apple's `init()` (NSObject's): neither simulated nor from an accessory.
    public override convenience init() {
        self.init(softwareSimulationState: false, andExternalAccessoryState: false)
    }

    /// The information itself: it is immutable (`NSCopying`, as Apple's).
    open func copy(with zone: NSZone? = nil) -> Any { self }

    /// Software: a replay, a list of fixes, gpsfake.
    public static let simulated = CLLocationSourceInformation(
        softwareSimulationState: true, andExternalAccessoryState: false)
    /// A receiver behind gpsd.
    public static let receiver = CLLocationSourceInformation(
        softwareSimulationState: false, andExternalAccessoryState: true)

    /// The same two flags.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CLLocationSourceInformation else { return false }
        return other.isSimulatedBySoftware == isSimulatedBySoftware
            && other.isProducedByAccessory == isProducedByAccessory
    }

    /// The core's flags as Apple's object (the shared one for each common pair).
    static func of(_ origin: LocationOrigin) -> CLLocationSourceInformation {
        switch origin {
        case .simulated: .simulated
        case .receiver: .receiver
        default:
            CLLocationSourceInformation(
                softwareSimulationState: origin.isSimulatedBySoftware,
                andExternalAccessoryState: origin.isProducedByAccessory)
        }
    }

    /// Apple's object's flags as the core's value.
    var origin: LocationOrigin {
        LocationOrigin(isSimulatedBySoftware: isSimulatedBySoftware, isProducedByAccessory: isProducedByAccessory)
    }

    /// Combines the two flags.
    open override var hash: Int { (isSimulatedBySoftware ? 1 : 0) | (isProducedByAccessory ? 2 : 0) }
}

/// A location as CoreLocation delivers it: immutable, with Apple's fields and invalid markers.
///
/// `horizontalAccuracy` < 0 means the coordinate is invalid; `verticalAccuracy` ≤ 0 means the
/// altitudes are invalid (then `ellipsoidalAltitude` is 0); negative speed, course and their
/// accuracies mean unknown. Accuracies are about one standard deviation (68 %), Apple's meaning.
///
/// Open, as Apple's is: every initializer Apple declares is designated, so a subclass (a test
/// double, a location carrying an app's own annotation) calls any of them, and every property
/// may be overridden. Like Apple's it is `NSCopying` and `NSSecureCoding` and not `Codable`: an
/// app's own `Encodable` extension is the one `JSONEncoder` uses.
///
/// ```swift
/// let here = CLLocation(latitude: 51.4545, longitude: -2.5879)
/// let there = CLLocation(latitude: 51.4500, longitude: -2.6000)
/// print(here.distance(from: there))              // metres, on the WGS 84 ellipsoid
/// if here.horizontalAccuracy >= 0, here.gnss?.fixMode == .threeDimensional {
///     print(here.altitude, "±\(here.verticalAccuracy) m")
/// }
/// ```
// @unchecked Sendable: a non-final class cannot be checked. Its own state is one immutable value
// set by the initializer; a subclass that adds mutable state must keep that promise itself.
open class CLLocation: NSObject, NSCopying, NSSecureCoding, @unchecked Sendable {
    /// Every value, set once: the rules core's delivered value.
    private let values: LocationValue
    /// The source information an app gave an initializer (its own object, perhaps a subclass).
    private let givenSource: CLLocationSourceInformation?

    /// Latitude and longitude, WGS 84.
    open var coordinate: CLLocationCoordinate2D { values.coordinate }
    /// Metres above mean sea level (orthometric).
    open var altitude: CLLocationDistance { values.altitude }
    /// Metres above the WGS 84 ellipsoid.
    open var ellipsoidalAltitude: CLLocationDistance { values.ellipsoidalAltitude }
    /// Radius in metres of 68 % confidence around `coordinate`; negative: the coordinate is invalid.
    open var horizontalAccuracy: CLLocationAccuracy { values.horizontalAccuracy }
    /// Metres (68 %) for `altitude`; negative or 0: no valid altitude (a 2D fix).
    open var verticalAccuracy: CLLocationAccuracy { values.verticalAccuracy }
    /// Metres per second over ground; negative: unknown.
    open var speed: CLLocationSpeed { values.speed }
    /// Metres per second (68 %); negative: unknown.
    open var speedAccuracy: CLLocationSpeedAccuracy { values.speedAccuracy }
    /// Degrees clockwise from true north, the direction of travel; negative: unknown.
    open var course: CLLocationDirection { values.course }
    /// Degrees (68 %); negative: unknown.
    open var courseAccuracy: CLLocationDirectionAccuracy { values.courseAccuracy }
    /// When the receiver made the fix (its own clock, UTC).
    open var timestamp: Date { values.timestamp }
    /// GPSLocation's additions: fix mode, quality, accuracy tier, reduction; nil for locations
    /// made with Apple's initializers.
    open var gnss: GNSSDetails? { values.gnss }
    /// Whether the location was simulated by software or produced by a receiver; nil for
    /// locations made with Apple's initializers that do not say.
    open var sourceInformation: CLLocationSourceInformation? {
        givenSource ?? values.origin.map(CLLocationSourceInformation.of)
    }

    /// Apple's `init()` (NSObject's, which apps use for a placeholder: `@Published var
    /// lastLocation = CLLocation()`): what `init(latitude: 0, longitude: 0)` gives — coordinate
    /// 0, 0, accuracy 0, no altitude, speed or course, timestamp now.
    public override init() {
        values = LocationValue(latitude: 0, longitude: 0)
        givenSource = nil
        super.init()
    }

    /// A location at a coordinate, now, with no altitude, speed or course.
    public init(latitude: CLLocationDegrees, longitude: CLLocationDegrees) {
        values = LocationValue(latitude: latitude, longitude: longitude)
        givenSource = nil
        super.init()
    }

    /// Apple's initializer: a position and altitude with their accuracies; speed and course unknown.
    public init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance, horizontalAccuracy: CLLocationAccuracy,
        verticalAccuracy: CLLocationAccuracy, timestamp: Date
    ) {
        values = LocationValue(
            coordinate: coordinate, altitude: altitude, horizontalAccuracy: horizontalAccuracy,
            verticalAccuracy: verticalAccuracy, course: -1, courseAccuracy: -1, speed: -1, speedAccuracy: -1,
            timestamp: timestamp)
        givenSource = nil
        super.init()
    }

    /// Apple's initializer with course and speed (their accuracies unknown).
    public init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance, horizontalAccuracy: CLLocationAccuracy,
        verticalAccuracy: CLLocationAccuracy, course: CLLocationDirection, speed: CLLocationSpeed, timestamp: Date
    ) {
        values = LocationValue(
            coordinate: coordinate, altitude: altitude, horizontalAccuracy: horizontalAccuracy,
            verticalAccuracy: verticalAccuracy, course: course, courseAccuracy: -1, speed: speed, speedAccuracy: -1,
            timestamp: timestamp)
        givenSource = nil
        super.init()
    }

    /// Apple's initializer with every value and its accuracy.
    public init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance, horizontalAccuracy: CLLocationAccuracy,
        verticalAccuracy: CLLocationAccuracy, course: CLLocationDirection, courseAccuracy: CLLocationDirectionAccuracy,
        speed: CLLocationSpeed, speedAccuracy: CLLocationSpeedAccuracy, timestamp: Date
    ) {
        values = LocationValue(
            coordinate: coordinate, altitude: altitude, horizontalAccuracy: horizontalAccuracy,
            verticalAccuracy: verticalAccuracy, course: course, courseAccuracy: courseAccuracy, speed: speed,
            speedAccuracy: speedAccuracy, timestamp: timestamp)
        givenSource = nil
        super.init()
    }

    /// Apple's initializer with source information (iOS 15).
    public init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance, horizontalAccuracy: CLLocationAccuracy,
        verticalAccuracy: CLLocationAccuracy, course: CLLocationDirection, courseAccuracy: CLLocationDirectionAccuracy,
        speed: CLLocationSpeed, speedAccuracy: CLLocationSpeedAccuracy, timestamp: Date,
        sourceInfo: CLLocationSourceInformation
    ) {
        values = LocationValue(
            coordinate: coordinate, altitude: altitude, horizontalAccuracy: horizontalAccuracy,
            verticalAccuracy: verticalAccuracy, course: course, courseAccuracy: courseAccuracy, speed: speed,
            speedAccuracy: speedAccuracy, timestamp: timestamp)
        givenSource = sourceInfo
        super.init()
    }

    /// GPSLocation's initializer, with the ellipsoidal altitude and GNSS details.
    public init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance, ellipsoidalAltitude: CLLocationDistance,
        horizontalAccuracy: CLLocationAccuracy, verticalAccuracy: CLLocationAccuracy, course: CLLocationDirection,
        courseAccuracy: CLLocationDirectionAccuracy, speed: CLLocationSpeed, speedAccuracy: CLLocationSpeedAccuracy,
        timestamp: Date, gnss: GNSSDetails?, sourceInformation: CLLocationSourceInformation? = nil
    ) {
        values = LocationValue(
            coordinate: coordinate, altitude: altitude, ellipsoidalAltitude: ellipsoidalAltitude,
            horizontalAccuracy: horizontalAccuracy, verticalAccuracy: verticalAccuracy, course: course,
            courseAccuracy: courseAccuracy, speed: speed, speedAccuracy: speedAccuracy, timestamp: timestamp,
            gnss: gnss)
        givenSource = sourceInformation
        super.init()
    }

    /// Unarchives what `encode(with:)` wrote (`NSSecureCoding`); nil when a value is missing or
    /// of the wrong type.
    public required init?(coder: NSCoder) {
        guard let decoded = LocationValue(coder: coder) else { return nil }
        values = decoded
        givenSource = nil
        super.init()
    }

    /// True: unarchiving checks each value's class (`NSSecureCoding`).
    open class var supportsSecureCoding: Bool { true }

    /// Archives every value under its own key (`NSCoding`), what this location reports (a
    /// subclass's overrides included).
    open func encode(with coder: NSCoder) {
        LocationValue(self).encode(with: coder)
    }

    /// The location itself: it is immutable (`NSCopying`, as Apple's).
    open func copy(with zone: NSZone? = nil) -> Any { self }

    /// This location with other GNSS details (the engine's marks).
    func with(gnss: GNSSDetails?) -> CLLocation {
        // The stored values, not the properties: the engine marks its own locations, on every fix.
        CLLocation(values.with(gnss: gnss))
    }

    /// The rules core's location, as CoreLocation delivers it.
    public init(_ value: LocationValue) {
        values = value
        givenSource = nil
        super.init()
    }

    /// The rules core's value: what this location reports (a subclass's overrides included).
    public var value: LocationValue { LocationValue(self) }

    /// The geodesic distance on the WGS 84 ellipsoid (Karney's method), in metres, ignoring
    /// altitude — Apple's "arc that follows the curvature of the Earth".
    open func distance(from location: CLLocation) -> CLLocationDistance {
        Geodesic.wgs84.distance(
            latitude1: coordinate.latitude, longitude1: coordinate.longitude, latitude2: location.coordinate.latitude,
            longitude2: location.coordinate.longitude)
    }

    /// Apple's format: `<+lat,+lon> +/- accuracy m (speed … mps / course …) @ time`.
    open override var description: String {
        String(
            format: "<%+.8f,%+.8f> +/- %.2fm (speed %.2f mps / course %.2f) @ %@", coordinate.latitude,
            coordinate.longitude, horizontalAccuracy, speed, course, timestamp.description)
    }
}

extension CLLocation {
    /// The accuracy tier (a GPSLocation addition): the one the engine gave a GNSS location, or
    /// for a location made by hand, its `horizontalAccuracy`'s — as a 3D fix when it has a valid
    /// altitude (`LocationValue.accuracyClass`, the one rule).
    public var accuracyClass: AccuracyClass { value.accuracyClass }
}
