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

    /// Why, as a value to branch on (a GPSLocation addition): tests and callers compare
    /// `error.reason == .stale`, never the message text. New reasons may be added.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        /// A stable camelCase name, e.g. `gpsdUnreachable`.
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// gpsd could not be reached when the source started.
        public static let gpsdUnreachable = Reason("gpsdUnreachable")
        /// The connection to gpsd was lost after it had worked (gpsd stopped or restarted).
        public static let gpsdLost = Reason("gpsdLost")
        /// gpsd is connected but sent no position report for its no-data timeout.
        public static let gpsdSilent = Reason("gpsdSilent")
        /// gpsd has no receiver at all.
        public static let noDevice = Reason("noDevice")
        /// gpsd deactivated the receiver being followed (unplugged, `gpsdctl remove`).
        public static let receiverDeactivated = Reason("receiverDeactivated")
        /// Pinned to a receiver path that gpsd does not report while another one does.
        public static let receiverMissing = Reason("receiverMissing")
        /// No usable fix for the staleness timeout (never had one, or lost it).
        public static let stale = Reason("stale")
        /// `requestLocation()` found no location within its timeout.
        public static let timedOut = Reason("timedOut")
        /// The source stopped for good (a replay's end, gpsd gone without reconnection).
        public static let sourceEnded = Reason("sourceEnded")
        /// The source failed in another way (it says how).
        public static let sourceFailed = Reason("sourceFailed")
        /// Authorization is not determined: nothing is delivered until it is granted.
        public static let notDetermined = Reason("notDetermined")
        /// The app is denied (by the user, or for everyone: location services off).
        public static let notAuthorized = Reason("notAuthorized")
        /// The administrator's policy restricts the app; the user cannot change it.
        public static let restricted = Reason("restricted")
        /// Authorized When In Use, and not in use.
        public static let notInUse = Reason("notInUse")
        /// The app asked for authorization in a way that cannot work (no usage description,
        /// no prompt, updates started without asking).
        public static let authorizationRequest = Reason("authorizationRequest")
        /// A region cannot be monitored with reduced (approximate) accuracy.
        public static let reducedAccuracy = Reason("reducedAccuracy")
        /// The app has reduced accuracy and its secret offset cannot be kept between runs: no
        /// approximate location is delivered until it can (the message says what to fix).
        public static let reducedAccuracyState = Reason("reducedAccuracyState")
        /// Legacy region monitoring needs Always authorization.
        public static let alwaysRequired = Reason("alwaysRequired")
        /// The region's centre or radius cannot be monitored.
        public static let invalidRegion = Reason("invalidRegion")
        /// The monitored regions could not be read or saved.
        public static let persistence = Reason("persistence")
    }

    public let code: Code
    /// What happened and what to do, in one or two sentences.
    public let message: String
    /// Why, as a value (nil only for errors made by code outside GPSLocation).
    public let reason: Reason?
    /// The lower-level cause (a `GPSDError`, a `GPSFakeError`, …), when there is one.
    public let underlyingError: (any Error & Sendable)?
    /// True when updates ended with this error (denied, restricted, the source ended for good,
    /// a one-shot request that gave up): nothing more comes until they are started again. False
    /// for problems updates ride out (gpsd lost and reconnecting, no fix for a while). Set by the
    /// engine's driver, the one place that decides it (a GPSLocation addition).
    public internal(set) var endsUpdates = false

    public init(
        _ code: Code, message: String = "", reason: Reason? = nil, underlyingError: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.reason = reason
        self.underlyingError = underlyingError
    }

    // Apple's static codes, so `CLError.denied` and `catch CLError.denied` read as on Apple.
    public static let locationUnknown = Code.locationUnknown
    public static let denied = Code.denied
    public static let network = Code.network
    public static let headingFailure = Code.headingFailure
    public static let regionMonitoringDenied = Code.regionMonitoringDenied
    public static let regionMonitoringFailure = Code.regionMonitoringFailure
    public static let regionMonitoringSetupDelayed = Code.regionMonitoringSetupDelayed
    public static let regionMonitoringResponseDelayed = Code.regionMonitoringResponseDelayed
    public static let geocodeFoundNoResult = Code.geocodeFoundNoResult
    public static let geocodeFoundPartialResult = Code.geocodeFoundPartialResult
    public static let geocodeCanceled = Code.geocodeCanceled
    public static let deferredFailed = Code.deferredFailed
    public static let deferredNotUpdatingLocation = Code.deferredNotUpdatingLocation
    public static let deferredAccuracyTooLow = Code.deferredAccuracyTooLow
    public static let deferredDistanceFiltered = Code.deferredDistanceFiltered
    public static let deferredCanceled = Code.deferredCanceled
    public static let rangingUnavailable = Code.rangingUnavailable
    public static let rangingFailure = Code.rangingFailure
    public static let promptDeclined = Code.promptDeclined
    public static let historicalLocationError = Code.historicalLocationError

    public static func == (lhs: CLError, rhs: CLError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message && lhs.reason == rhs.reason
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
        hasher.combine(reason)
    }

    public var description: String { message.isEmpty ? "CLError \(code) (\(code.rawValue))" : message }
}

extension CLError: Hashable {}

/// Bridged like Apple's: `(error as NSError).domain` is `kCLErrorDomain`, `.code` the code's raw
/// value, `localizedDescription` our explanation, and the lower-level cause is
/// `NSUnderlyingErrorKey`.
extension CLError: CustomNSError {
    public static var errorDomain: String { kCLErrorDomain }
    public var errorCode: Int { code.rawValue }
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let suggestion = recoverySuggestion { info[NSLocalizedRecoverySuggestionErrorKey] = suggestion }
        if let underlyingError { info[NSUnderlyingErrorKey] = underlyingError as NSError }
        return info
    }
}

extension CLError: LocalizedError {
    /// The explanation (what `error.localizedDescription` shows).
    public var errorDescription: String? { description }
    /// The command that fixes it, when the explanation names one (the first quoted command in it).
    public var recoverySuggestion: String? {
        let parts = message.split(separator: "`", omittingEmptySubsequences: false)
        guard parts.count >= 3, !parts[1].isEmpty else { return nil }
        return "Run `\(parts[1])`."
    }
}

/// `catch CLError.denied`, `case CLError.locationUnknown:` — as on Apple platforms.
public func ~= (code: CLError.Code, error: any Error) -> Bool {
    (error as? CLError)?.code == code
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
