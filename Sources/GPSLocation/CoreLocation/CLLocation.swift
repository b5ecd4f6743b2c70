import Foundation

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
    package var literal: StaticString {
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
    public var device: String?
    /// The engine judged the device stationary at this location (`StationaryDetector`: it has
    /// stayed within twice its accuracy for 10 s): what `CLLocationUpdate.isStationary` says.
    package var isStationary = false

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
}

/// Where a location came from (Apple's, iOS 15): from software — a replayed recording, a list
/// of fixes, gpsd fed by gpsfake — or from a receiver behind gpsd.
public final class CLLocationSourceInformation: NSObject, Sendable {
    /// Recorded or made-up data played back (`NMEAReplaySource`, `FixListSource`, gpsfake).
    public let isSimulatedBySoftware: Bool
    /// Produced by an external receiver (a GNSS receiver that gpsd reads).
    public let isProducedByAccessory: Bool

    /// Apple's initializer: the two flags.
    public init(
        softwareSimulationState isSimulatedBySoftware: Bool, andExternalAccessoryState isProducedByAccessory: Bool
    ) {
        self.isSimulatedBySoftware = isSimulatedBySoftware
        self.isProducedByAccessory = isProducedByAccessory
    }

    /// Software: a replay, a list of fixes, gpsfake.
    public static let simulated = CLLocationSourceInformation(
        softwareSimulationState: true, andExternalAccessoryState: false)
    /// x
    /// A receiver behind gpsd.
    public static let receiver = CLLocationSourceInformation(
        softwareSimulationState: false, andExternalAccessoryState: true)

    /// The same two flags.
    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CLLocationSourceInformation else { return false }
        return other.isSimulatedBySoftware == isSimulatedBySoftware
            && other.isProducedByAccessory == isProducedByAccessory
    }

    /// Combines the two flags.
    public override var hash: Int { (isSimulatedBySoftware ? 1 : 0) | (isProducedByAccessory ? 2 : 0) }
}

/// A location as CoreLocation delivers it: immutable, with Apple's fields and invalid markers.
///
/// `horizontalAccuracy` < 0 means the coordinate is invalid; `verticalAccuracy` ≤ 0 means the
/// altitudes are invalid (then `ellipsoidalAltitude` is 0); negative speed, course and their
/// accuracies mean unknown. Accuracies are about one standard deviation (68 %), Apple's meaning.
///
/// ```swift
/// let here = CLLocation(latitude: 51.4545, longitude: -2.5879)
/// let there = CLLocation(latitude: 51.4500, longitude: -2.6000)
/// print(here.distance(from: there))              // metres, on the WGS 84 ellipsoid
/// if here.horizontalAccuracy >= 0, here.gnss?.fixMode == .threeDimensional {
///     print(here.altitude, "±\(here.verticalAccuracy) m")
/// }
/// ```
public final class CLLocation: NSObject, Sendable {
    /// Latitude and longitude, WGS 84.
    public let coordinate: CLLocationCoordinate2D
    /// Metres above mean sea level (orthometric).
    public let altitude: CLLocationDistance
    /// Metres above the WGS 84 ellipsoid.
    public let ellipsoidalAltitude: CLLocationDistance
    /// Radius in metres of 68 % confidence around `coordinate`; negative: the coordinate is invalid.
    public let horizontalAccuracy: CLLocationAccuracy
    /// Metres (68 %) for `altitude`; negative or 0: no valid altitude (a 2D fix).
    public let verticalAccuracy: CLLocationAccuracy
    /// Metres per second over ground; negative: unknown.
    public let speed: CLLocationSpeed
    /// Metres per second (68 %); negative: unknown.
    public let speedAccuracy: CLLocationSpeedAccuracy
    /// Degrees clockwise from true north, the direction of travel; negative: unknown.
    public let course: CLLocationDirection
    /// Degrees (68 %); negative: unknown.
    public let courseAccuracy: CLLocationDirectionAccuracy
    /// When the receiver made the fix (its own clock, UTC).
    public let timestamp: Date
    /// GPSLocation's additions: fix mode, quality, accuracy tier, reduction; nil for locations
    /// made with Apple's initializers.
    public let gnss: GNSSDetails?
    /// Whether the location was simulated by software or produced by a receiver; nil for
    /// locations made with Apple's initializers that do not say.
    public let sourceInformation: CLLocationSourceInformation?

    /// A location at a coordinate, now, with no altitude, speed or course.
    public convenience init(latitude: CLLocationDegrees, longitude: CLLocationDegrees) {
        self.init(
            coordinate: CLLocationCoordinate2D(latitude: latitude, longitude: longitude), altitude: 0,
            horizontalAccuracy: 0, verticalAccuracy: -1, course: -1, courseAccuracy: -1, speed: -1, speedAccuracy: -1,
            timestamp: Date())
    }

    /// Apple's initializer: a position and altitude with their accuracies; speed and course unknown.
    public convenience init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance, horizontalAccuracy: CLLocationAccuracy,
        verticalAccuracy: CLLocationAccuracy, timestamp: Date
    ) {
        self.init(
            coordinate: coordinate, altitude: altitude, horizontalAccuracy: horizontalAccuracy,
            verticalAccuracy: verticalAccuracy, course: -1, courseAccuracy: -1, speed: -1, speedAccuracy: -1,
            timestamp: timestamp)
    }

    /// Apple's initializer with course and speed (their accuracies unknown).
    public convenience init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance, horizontalAccuracy: CLLocationAccuracy,
        verticalAccuracy: CLLocationAccuracy, course: CLLocationDirection, speed: CLLocationSpeed, timestamp: Date
    ) {
        self.init(
            coordinate: coordinate, altitude: altitude, horizontalAccuracy: horizontalAccuracy,
            verticalAccuracy: verticalAccuracy, course: course, courseAccuracy: -1, speed: speed, speedAccuracy: -1,
            timestamp: timestamp)
    }

    /// Apple's initializer with every value and its accuracy.
    public convenience init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance, horizontalAccuracy: CLLocationAccuracy,
        verticalAccuracy: CLLocationAccuracy, course: CLLocationDirection, courseAccuracy: CLLocationDirectionAccuracy,
        speed: CLLocationSpeed, speedAccuracy: CLLocationSpeedAccuracy, timestamp: Date
    ) {
        self.init(
            coordinate: coordinate, altitude: altitude, ellipsoidalAltitude: verticalAccuracy > 0 ? altitude : 0,
            horizontalAccuracy: horizontalAccuracy, verticalAccuracy: verticalAccuracy, course: course,
            courseAccuracy: courseAccuracy, speed: speed, speedAccuracy: speedAccuracy, timestamp: timestamp, gnss: nil)
    }

    /// Apple's initializer with source information (iOS 15).
    public convenience init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance, horizontalAccuracy: CLLocationAccuracy,
        verticalAccuracy: CLLocationAccuracy, course: CLLocationDirection, courseAccuracy: CLLocationDirectionAccuracy,
        speed: CLLocationSpeed, speedAccuracy: CLLocationSpeedAccuracy, timestamp: Date,
        sourceInfo: CLLocationSourceInformation
    ) {
        self.init(
            coordinate: coordinate, altitude: altitude, ellipsoidalAltitude: verticalAccuracy > 0 ? altitude : 0,
            horizontalAccuracy: horizontalAccuracy, verticalAccuracy: verticalAccuracy, course: course,
            courseAccuracy: courseAccuracy, speed: speed, speedAccuracy: speedAccuracy, timestamp: timestamp, gnss: nil,
            sourceInformation: sourceInfo)
    }

    /// The designated initializer, with GPSLocation's ellipsoidal altitude and GNSS details.
    public init(
        coordinate: CLLocationCoordinate2D, altitude: CLLocationDistance, ellipsoidalAltitude: CLLocationDistance,
        horizontalAccuracy: CLLocationAccuracy, verticalAccuracy: CLLocationAccuracy, course: CLLocationDirection,
        courseAccuracy: CLLocationDirectionAccuracy, speed: CLLocationSpeed, speedAccuracy: CLLocationSpeedAccuracy,
        timestamp: Date, gnss: GNSSDetails?, sourceInformation: CLLocationSourceInformation? = nil
    ) {
        self.coordinate = coordinate
        self.altitude = altitude
        self.ellipsoidalAltitude = verticalAccuracy > 0 ? ellipsoidalAltitude : 0
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

    /// This location with other GNSS details (the engine's marks).
    func with(gnss: GNSSDetails?) -> CLLocation {
        CLLocation(
            coordinate: coordinate, altitude: altitude, ellipsoidalAltitude: ellipsoidalAltitude,
            horizontalAccuracy: horizontalAccuracy, verticalAccuracy: verticalAccuracy, course: course,
            courseAccuracy: courseAccuracy, speed: speed, speedAccuracy: speedAccuracy, timestamp: timestamp,
            gnss: gnss,
            sourceInformation: sourceInformation)
    }

    /// The geodesic distance on the WGS 84 ellipsoid (Karney's method), in metres, ignoring
    /// altitude — Apple's "arc that follows the curvature of the Earth".
    public func distance(from location: CLLocation) -> CLLocationDistance {
        Geodesic.wgs84.distance(
            latitude1: coordinate.latitude, longitude1: coordinate.longitude, latitude2: location.coordinate.latitude,
            longitude2: location.coordinate.longitude)
    }

    /// Apple's format: `<+lat,+lon> +/- accuracy m (speed … mps / course …) @ time`.
    public override var description: String {
        String(
            format: "<%+.8f,%+.8f> +/- %.2fm (speed %.2f mps / course %.2f) @ %@", coordinate.latitude,
            coordinate.longitude, horizontalAccuracy, speed, course, timestamp.description)
    }
}

extension CLLocation {
    /// The accuracy tier (a GPSLocation addition): the one the engine gave a GNSS location, or
    /// for a location made by hand, its `horizontalAccuracy` classified as a 2D fix.
    public var accuracyClass: AccuracyClass {
        gnss?.accuracyClass ?? AccuracyStage.classify(horizontalAccuracy: horizontalAccuracy, mode: .twoDimensional)
    }
}
