import FoundationEssentials
import GNSSCore

/// What an app may receive right now: the engine's input from the authorizer (or from the
/// simulated authorization of `gpsloc replay`).
public struct AuthorizationState: Sendable, Equatable {
    /// The app the gate speaks of in its messages.
    public var appID: String
    /// The app's authorization status.
    public var status: CLAuthorizationStatus
    /// Full or reduced accuracy.
    public var accuracy: CLAccuracyAuthorization
    /// When-In-Use delivers only while this is true (see `LocationAuthorizer.isInUse`).
    public var isInUse: Bool
    /// Why the decision cannot be known now (gpslocd unreachable: the app is denied meanwhile);
    /// the refusal says this instead of advising a grant.
    var unavailable: BrokerUnavailable?

    /// The state of `appID`'s authorization (in use unless said).
    public init(
        appID: String, status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization = .fullAccuracy,
        isInUse: Bool = true
    ) {
        self.appID = appID
        self.status = status
        self.accuracy = accuracy
        self.isInUse = isInUse
    }

    /// True when locations may flow (authorized, and in use for When-In-Use).
    public var allowsDelivery: Bool {
        status.isAuthorized && (status != .authorizedWhenInUse || isInUse)
    }

    /// Why nothing may be delivered, as the app is told; nil when locations may flow.
    public var refusal: CLError? {
        if let unavailable, !allowsDelivery {
            return CLError(.denied, .noBroker(app: appID, unavailable), reason: .brokerUnreachable)
        }
        switch status {
        case .authorizedAlways:
            return nil
        case .authorizedWhenInUse:
            if isInUse { return nil }
            return CLError(.locationUnknown, .notInUse(app: appID), reason: .notInUse)
        case .notDetermined:
            return CLError(.promptDeclined, .notDetermined(app: appID, inUse: isInUse), reason: .notDetermined)
        case .denied:
            return CLError(.denied, .denied(app: appID, inUse: isInUse), reason: .notAuthorized)
        case .restricted:
            return CLError(
                .denied, .restricted(app: appID, policy: LocationPolicy.defaultPath), reason: .restricted)
        }
    }

}

extension AuthorizationDecision {
    /// Whether this decision lets the app see `location` from the last-location cache: nothing
    /// unless it is authorized, and with reduced accuracy only a location that was reduced when
    /// it was cached (a precise one never reaches a reduced app, however old).
    public func permits(cached location: LocationValue) -> Bool {
        status.isAuthorized && (accuracy == .fullAccuracy || location.gnss?.reduced == true)
    }
}

/// Stage: nothing reaches an app without passing here. Full accuracy passes as is; reduced
/// accuracy passes through `LocationFuzzer`; anything else is withheld, and the app is told why
/// once per state (`refusal`).
struct AuthorizationGate: Sendable {
    var state: AuthorizationState {
        didSet { if state != oldValue { explained = false } }
    }
    var fuzzer: LocationFuzzer
    /// The current refusal has been told to the app.
    var explained = false
    /// The app asked for approximate locations (`desiredAccuracy = kCLLocationAccuracyReduced`)
    /// though it may have precise ones: Apple then delivers "as if the app didn't have that
    /// authorization", and so does the gate.
    var reducedRequested = false
    /// Reduced accuracy's state could not be kept, and the app has been told (until a reduced
    /// location goes out again).
    var reducedFailureExplained = false

    init(state: AuthorizationState, fuzzer: LocationFuzzer) {
        self.state = state
        self.fuzzer = fuzzer
    }

    enum Decision {
        case deliver(LocationValue)
        /// Nothing now: the reduced-accuracy rate limit holds.
        case hold
        /// Not allowed; `error` is set the first time in this state.
        case refuse(CLError?)
    }

    mutating func decide(_ location: LocationValue, now: Date) -> Decision {
        if let refusal = state.refusal { return .refuse(explain(refusal)) }
        if state.accuracy == .fullAccuracy && !reducedRequested { return .deliver(location) }
        switch fuzzer.reduce(location, now: now) {
        case .location(let reduced):
            reducedFailureExplained = false
            return .deliver(reduced)
        case .hold:
            return .hold
        case .unavailable(let problem):
            // Fails closed: nothing passes, so no location reaches the app by any path (delegate,
            // `location`, the cache, visits) — all of them take only what passed here. A heading
            // still may: it carries no position, and its declination comes only from a reduced
            // location that did pass (`HeadingStage.Declination.reduced`).
            if reducedFailureExplained { return .refuse(nil) }
            reducedFailureExplained = true
            return .refuse(LocationFuzzer.unavailableError(appID: state.appID, problem))
        }
    }

    /// `refusal` the first time in this state, nil after.
    mutating func explain(_ refusal: CLError) -> CLError? {
        if explained { return nil }
        explained = true
        return refusal
    }
}
