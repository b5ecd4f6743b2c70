import Foundation

// CoreLocation's basic types, with Apple's names and values, so CoreLocation code ports to
// Linux by changing its import. Invalid values use Apple's negative markers.

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

public let kCLLocationAccuracyBestForNavigation: CLLocationAccuracy = -2
public let kCLLocationAccuracyBest: CLLocationAccuracy = -1
public let kCLLocationAccuracyNearestTenMeters: CLLocationAccuracy = 10
public let kCLLocationAccuracyHundredMeters: CLLocationAccuracy = 100
public let kCLLocationAccuracyKilometer: CLLocationAccuracy = 1000
public let kCLLocationAccuracyThreeKilometers: CLLocationAccuracy = 3000
/// Apple gives no number; reported as 3000. Compare it by value with this constant only.
public let kCLLocationAccuracyReduced: CLLocationAccuracy = 3000
/// Deliver every location, however little it moved.
public let kCLDistanceFilterNone: CLLocationDistance = -1
public let CLLocationDistanceMax: CLLocationDistance = .greatestFiniteMagnitude
public let CLTimeIntervalMax: TimeInterval = .greatestFiniteMagnitude
public let kCLErrorDomain = "kCLErrorDomain"

/// A latitude/longitude pair in degrees (WGS 84).
public struct CLLocationCoordinate2D: Sendable, Equatable, Hashable {
    public var latitude: CLLocationDegrees
    public var longitude: CLLocationDegrees
    public init() {
        latitude = 0
        longitude = 0
    }
    public init(latitude: CLLocationDegrees, longitude: CLLocationDegrees) {
        self.latitude = latitude
        self.longitude = longitude
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

public func CLLocationCoordinate2DMake(_ latitude: CLLocationDegrees, _ longitude: CLLocationDegrees)
    -> CLLocationCoordinate2D
{
    CLLocationCoordinate2D(latitude: latitude, longitude: longitude)
}

/// Apple's raw values (0–4).
public enum CLAuthorizationStatus: Int32, Sendable, CustomStringConvertible {
    case notDetermined = 0
    case restricted = 1
    case denied = 2
    case authorizedAlways = 3
    case authorizedWhenInUse = 4
    /// macOS spelling of `.authorizedAlways`.
    public static var authorized: CLAuthorizationStatus { .authorizedAlways }

    /// The NDJSON spelling: `notDetermined`, `restricted`, `denied`, `authorizedWhenInUse`, `authorizedAlways`.
    public var description: String {
        switch self {
        case .notDetermined: "notDetermined"
        case .restricted: "restricted"
        case .denied: "denied"
        case .authorizedAlways: "authorizedAlways"
        case .authorizedWhenInUse: "authorizedWhenInUse"
        }
    }
}

public enum CLAccuracyAuthorization: Int, Sendable, CustomStringConvertible {
    case fullAccuracy = 0
    case reducedAccuracy = 1
    /// `full` or `reduced`, as the NDJSON spells it.
    public var description: String { self == .fullAccuracy ? "full" : "reduced" }
}

public enum CLActivityType: Int, Sendable {
    case other = 1
    case automotiveNavigation = 2
    case fitness = 3
    case otherNavigation = 4
    case airborne = 5
}

/// Core Location errors, with Apple's codes.
public struct CLError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Int, Sendable {
        case locationUnknown = 0
        case denied = 1
        case network = 2
        case headingFailure = 3
        case regionMonitoringDenied = 4
        case regionMonitoringFailure = 5
        case regionMonitoringSetupDelayed = 6
        case regionMonitoringResponseDelayed = 7
        case geocodeFoundNoResult = 8
        case geocodeFoundPartialResult = 9
        case geocodeCanceled = 10
        case deferredFailed = 11
        case deferredNotUpdatingLocation = 12
        case deferredAccuracyTooLow = 13
        case deferredDistanceFiltered = 14
        case deferredCanceled = 15
        case rangingUnavailable = 16
        case rangingFailure = 17
        case promptDeclined = 18
        case historicalLocationError = 19
    }

    public let code: Code
    /// What happened and what to do, in one or two sentences.
    public let message: String
    /// The lower-level cause (a `GPSDError`, a `GPSFakeError`, …), when there is one.
    public let underlyingError: (any Error & Sendable)?

    public init(_ code: Code, message: String = "", underlyingError: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.underlyingError = underlyingError
    }

    public static let locationUnknown = Code.locationUnknown
    public static let denied = Code.denied
    public static let promptDeclined = Code.promptDeclined

    public static func == (lhs: CLError, rhs: CLError) -> Bool { lhs.code == rhs.code && lhs.message == rhs.message }

    public var errorCode: Int { code.rawValue }
    public static var errorDomain: String { kCLErrorDomain }

    public var description: String { message.isEmpty ? "CLError \(code) (\(code.rawValue))" : message }
}

extension CLError.Code: CustomStringConvertible {
    /// The NDJSON spelling of the code, e.g. `locationUnknown`.
    public var description: String {
        switch self {
        case .locationUnknown: "locationUnknown"
        case .denied: "denied"
        case .network: "network"
        case .headingFailure: "headingFailure"
        case .regionMonitoringDenied: "regionMonitoringDenied"
        case .regionMonitoringFailure: "regionMonitoringFailure"
        case .regionMonitoringSetupDelayed: "regionMonitoringSetupDelayed"
        case .regionMonitoringResponseDelayed: "regionMonitoringResponseDelayed"
        case .geocodeFoundNoResult: "geocodeFoundNoResult"
        case .geocodeFoundPartialResult: "geocodeFoundPartialResult"
        case .geocodeCanceled: "geocodeCanceled"
        case .deferredFailed: "deferredFailed"
        case .deferredNotUpdatingLocation: "deferredNotUpdatingLocation"
        case .deferredAccuracyTooLow: "deferredAccuracyTooLow"
        case .deferredDistanceFiltered: "deferredDistanceFiltered"
        case .deferredCanceled: "deferredCanceled"
        case .rangingUnavailable: "rangingUnavailable"
        case .rangingFailure: "rangingFailure"
        case .promptDeclined: "promptDeclined"
        case .historicalLocationError: "historicalLocationError"
        }
    }
}
