import FoundationEssentials

// Core Location's error, with Apple's codes and GPSLocation's reasons: what the rules core fails
// with, as values (`facts`). Its words (`message`, `description`) are LocationWords'; its
// bridging to Foundation (`NSError`, `LocalizedError`) is the CoreLocation face's (CLTypes.swift).

/// Core Location errors, with Apple's codes.
public struct CLError: Error, Sendable, Equatable {
    /// Apple's error codes, with Apple's raw values (`(error as NSError).code`).
    public enum Code: Int, Sendable {
        /// No location now (no fix, gpsd lost or silent, the source ended); `reason` says which.
        case locationUnknown = 0
        /// Not authorized: denied, restricted, not in use, or services off; `reason` says which.
        case denied = 1
        /// A service is missing (geocoding without the GeoNames data).
        case network = 2
        /// No heading: the receiver reports none.
        case headingFailure = 3
        /// Region monitoring not authorized (it needs Always).
        case regionMonitoringDenied = 4
        /// A region cannot be monitored (invalid centre or radius).
        case regionMonitoringFailure = 5
        /// Apple's code; not produced on Linux.
        case regionMonitoringSetupDelayed = 6
        /// Apple's code; not produced on Linux.
        case regionMonitoringResponseDelayed = 7
        /// Geocoding found nothing.
        case geocodeFoundNoResult = 8
        /// Apple's code; not produced on Linux.
        case geocodeFoundPartialResult = 9
        /// A geocoding request was cancelled (`CLGeocoder.cancelGeocode()`).
        case geocodeCanceled = 10
        /// Deferred updates failed.
        case deferredFailed = 11
        /// Deferred updates requested while location updates are off.
        case deferredNotUpdatingLocation = 12
        /// Deferred updates need a best-accuracy setting.
        case deferredAccuracyTooLow = 13
        /// Deferred updates need `kCLDistanceFilterNone`.
        case deferredDistanceFiltered = 14
        /// Deferred updates were cancelled.
        case deferredCanceled = 15
        /// Beacon ranging: a Linux box has no Bluetooth beacon service.
        case rangingUnavailable = 16
        /// Beacon ranging failed.
        case rangingFailure = 17
        /// The app cannot be asked now (no terminal; the message names the grant command).
        case promptDeclined = 18
        /// Apple's code; not produced on Linux.
        case historicalLocationError = 19
    }

    /// Why, as a value to branch on (a GPSLocation addition): tests and callers compare
    /// `error.reason == .stale`, never the message text. New reasons may be added.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        /// A stable camelCase name, e.g. `gpsdUnreachable`.
        public let name: String
        /// A reason by its name (the NDJSON `reason` field); use the static ones.
        public init(_ name: String) { self.name = name }
        /// The name.
        public var description: String { name }

        /// gpsd could not be reached when the source started.
        public static let gpsdUnreachable = Reason("gpsdUnreachable")
        /// The connection to gpsd was lost after it had worked (gpsd stopped or restarted).
        public static let gpsdLost = Reason("gpsdLost")
        /// gpsd is connected but sent no position report for its no-data timeout.
        public static let gpsdSilent = Reason("gpsdSilent")
        /// gpsd has no receiver at all.
        public static let noDevice = Reason("noDevice")
        /// gpsd refused the request with an `ERROR` report (e.g. "No such device as /dev/pts/9"
        /// for a `HOST:PORT:DEVICE` it does not read); the message carries gpsd's own words.
        public static let gpsdRefused = Reason("gpsdRefused")
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
        /// gpslocd, the system location service, cannot be reached; the message says how to start it.
        public static let brokerUnreachable = Reason("brokerUnreachable")
        /// The connection to gpslocd was lost after it had worked (it is reconnected to).
        public static let brokerLost = Reason("brokerLost")
        /// The administrator's policy requires gpslocd and it is not running: nothing is delivered.
        public static let brokerRequired = Reason("brokerRequired")
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

    /// Apple's code.
    public let code: Code
    /// What happened, with its values (a GPSLocation addition): the words are the faces'
    /// (`message`, rendered by `LocationWords`); the rules core gives only these.
    public let facts: Facts
    /// Why, as a value (nil only for errors made by code outside GPSLocation).
    public let reason: Reason?
    /// The lower-level cause (a `GPSDError`, a `GPSFakeError`, …), when there is one.
    public let underlyingError: (any Error & Sendable)?
    /// True when updates ended with this error (denied, restricted, the source ended for good,
    /// a one-shot request that gave up): nothing more comes until they are started again. False
    /// for problems updates ride out (gpsd lost and reconnecting, no fix for a while). Set by the
    /// engine's driver, the one place that decides it (a GPSLocation addition).
    public package(set) var endsUpdates = false

    /// An error with Apple's `code`, what happened as values, and its `reason`.
    public init(
        _ code: Code, _ facts: Facts, reason: Reason? = nil, underlyingError: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.facts = facts
        self.reason = reason
        self.underlyingError = underlyingError
    }

    /// An error with Apple's `code`, an explanation in the caller's words that says what to do
    /// (`Facts.text`), and its `reason`.
    public init(
        _ code: Code, message: String = "", reason: Reason? = nil, underlyingError: (any Error & Sendable)? = nil
    ) {
        self.init(code, .text(message), reason: reason, underlyingError: underlyingError)
    }

    /// `Code.locationUnknown`, so `catch CLError.locationUnknown` reads as on Apple platforms.
    public static let locationUnknown = Code.locationUnknown
    /// `Code.denied`, so `catch CLError.denied` reads as on Apple platforms.
    public static let denied = Code.denied
    /// `Code.network`, so `catch CLError.network` reads as on Apple platforms.
    public static let network = Code.network
    /// `Code.headingFailure`, so `catch CLError.headingFailure` reads as on Apple platforms.
    public static let headingFailure = Code.headingFailure
    /// `Code.regionMonitoringDenied`, so `catch CLError.regionMonitoringDenied` reads as on Apple platforms.
    public static let regionMonitoringDenied = Code.regionMonitoringDenied
    /// `Code.regionMonitoringFailure`, so `catch CLError.regionMonitoringFailure` reads as on Apple platforms.
    public static let regionMonitoringFailure = Code.regionMonitoringFailure
    /// `Code.regionMonitoringSetupDelayed`, so `catch CLError.regionMonitoringSetupDelayed` reads as on Apple platforms.
    public static let regionMonitoringSetupDelayed = Code.regionMonitoringSetupDelayed
    /// `Code.regionMonitoringResponseDelayed`, so `catch CLError.regionMonitoringResponseDelayed` reads as on Apple platforms.
    public static let regionMonitoringResponseDelayed = Code.regionMonitoringResponseDelayed
    /// `Code.geocodeFoundNoResult`, so `catch CLError.geocodeFoundNoResult` reads as on Apple platforms.
    public static let geocodeFoundNoResult = Code.geocodeFoundNoResult
    /// `Code.geocodeFoundPartialResult`, so `catch CLError.geocodeFoundPartialResult` reads as on Apple platforms.
    public static let geocodeFoundPartialResult = Code.geocodeFoundPartialResult
    /// `Code.geocodeCanceled`, so `catch CLError.geocodeCanceled` reads as on Apple platforms.
    public static let geocodeCanceled = Code.geocodeCanceled
    /// `Code.deferredFailed`, so `catch CLError.deferredFailed` reads as on Apple platforms.
    public static let deferredFailed = Code.deferredFailed
    /// `Code.deferredNotUpdatingLocation`, so `catch CLError.deferredNotUpdatingLocation` reads as on Apple platforms.
    public static let deferredNotUpdatingLocation = Code.deferredNotUpdatingLocation
    /// `Code.deferredAccuracyTooLow`, so `catch CLError.deferredAccuracyTooLow` reads as on Apple platforms.
    public static let deferredAccuracyTooLow = Code.deferredAccuracyTooLow
    /// `Code.deferredDistanceFiltered`, so `catch CLError.deferredDistanceFiltered` reads as on Apple platforms.
    public static let deferredDistanceFiltered = Code.deferredDistanceFiltered
    /// `Code.deferredCanceled`, so `catch CLError.deferredCanceled` reads as on Apple platforms.
    public static let deferredCanceled = Code.deferredCanceled
    /// `Code.rangingUnavailable`, so `catch CLError.rangingUnavailable` reads as on Apple platforms.
    public static let rangingUnavailable = Code.rangingUnavailable
    /// `Code.rangingFailure`, so `catch CLError.rangingFailure` reads as on Apple platforms.
    public static let rangingFailure = Code.rangingFailure
    /// `Code.promptDeclined`, so `catch CLError.promptDeclined` reads as on Apple platforms.
    public static let promptDeclined = Code.promptDeclined
    /// `Code.historicalLocationError`, so `catch CLError.historicalLocationError` reads as on Apple platforms.
    public static let historicalLocationError = Code.historicalLocationError

    /// Same code, facts and reason (the underlying error is not compared).
    public static func == (lhs: CLError, rhs: CLError) -> Bool {
        lhs.code == rhs.code && lhs.facts == rhs.facts && lhs.reason == rhs.reason
    }

    /// Hashes what `==` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(facts)
        hasher.combine(reason)
    }
}

extension CLError: Hashable {}

/// `catch CLError.denied`, `case CLError.locationUnknown:` — as on Apple platforms.
public func ~= (code: CLError.Code, error: any Error) -> Bool {
    (error as? CLError)?.code == code
}

// Not `CustomStringConvertible`, as Apple's is not (an app may declare it); `name` spells it.
extension CLError.Code {
    /// The NDJSON spelling of the code, e.g. `locationUnknown` (a GPSLocation addition).
    public var name: String {
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
