// The authorization vocabulary every face shares: Apple's status and accuracy (their names and
// raw values, so CoreLocation code keeps them), a decision, and the rule of which statuses
// authorize. In the core, below the CoreLocation face: gpslocd and gpsloc decide with these
// without NSObject or Foundation's international parts.

import FoundationEssentials
import Glibc

/// Apple's raw values (0–4).
public enum CLAuthorizationStatus: Int32, Sendable {
    /// The app has not been asked yet; `requestWhenInUseAuthorization()` asks.
    case notDetermined = 0
    /// The administrator's policy forbids location for this app; the user cannot change it.
    case restricted = 1
    /// The user said no, or turned location services off.
    case denied = 2
    /// Locations at any time, the app in use or not (daemons, monitoring).
    case authorizedAlways = 3
    /// Locations while the app is in use (on Linux: run from a terminal, see `isInUse`).
    case authorizedWhenInUse = 4
    /// macOS spelling of `.authorizedAlways`.
    public static var authorized: CLAuthorizationStatus { .authorizedAlways }

    /// The NDJSON spelling: `notDetermined`, `restricted`, `denied`, `authorizedWhenInUse`,
    /// `authorizedAlways` (a named property, not `CustomStringConvertible`, which Apple does not
    /// declare: apps that declare it themselves would find `.description` ambiguous).
    public var name: String {
        switch self {
        case .notDetermined: "notDetermined"
        case .restricted: "restricted"
        case .denied: "denied"
        case .authorizedAlways: "authorizedAlways"
        case .authorizedWhenInUse: "authorizedWhenInUse"
        }
    }
}

/// How precise the locations an app gets are (Apple's raw values).
public enum CLAccuracyAuthorization: Int, Sendable {
    /// Precise positions.
    case fullAccuracy = 0
    /// Approximate positions only: a kept offset snapped to a grid, about 3 km.
    case reducedAccuracy = 1
    /// `full` or `reduced`, as the NDJSON spells it (a named property: see `CLAuthorizationStatus.name`).
    public var name: String { self == .fullAccuracy ? "full" : "reduced" }
}

/// The answer to an authorization request.
public struct AuthorizationDecision: Sendable, Equatable {
    /// The status decided.
    public var status: CLAuthorizationStatus
    /// The accuracy decided (reduced: approximate positions only).
    public var accuracy: CLAccuracyAuthorization
    /// "Allow once": for this process only, never written to the decision store.
    public var isTemporary: Bool
    /// A decision; full accuracy and kept unless said otherwise.
    public init(
        status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization = .fullAccuracy, isTemporary: Bool = false
    ) {
        self.status = status
        self.accuracy = accuracy
        self.isTemporary = isTemporary
    }
}

extension CLAuthorizationStatus {
    /// Whether this status authorizes an app at all (Always, or When In Use): the one place this
    /// is decided — the gate, the manager's cached `location`, `CLServiceSession`, `gpsloc auth`
    /// and `gpsloc doctor` all ask here (`OneRuleOnePlaceTests` keeps it so).
    public var isAuthorized: Bool { self == .authorizedAlways || self == .authorizedWhenInUse }
    /// Refused outright, whatever the app does: the user said no (`denied`) or the
    /// administrator's policy did (`restricted`). Updates stay stopped and say so once.
    public var refusesAll: Bool { self == .denied || self == .restricted }
}
