/// Apple's authorization flags — `authorizationDenied`, `authorizationDeniedGlobally`,
/// `authorizationRestricted`, `insufficientlyInUse`, `authorizationRequestInProgress` — as
/// `CLLocationUpdate`, `CLMonitor.Event` and `CLServiceSession.Diagnostic` carry them, decided
/// here once. At most one is true; while the status is not determined it is
/// `requestInProgress`, never `denied`.
public struct AuthorizationFlags: Sendable, Equatable {
    /// `authorizationDenied`: the app's status is denied.
    public var denied = false
    /// `authorizationDeniedGlobally`: location services are off on this box.
    public var deniedGlobally = false
    /// `authorizationRestricted`: a policy forbids locations to the app.
    public var restricted = false
    /// `insufficientlyInUse`: When In Use, and the app is not in use now.
    public var insufficientlyInUse = false
    /// `authorizationRequestInProgress`: the status is not determined yet.
    public var requestInProgress = false

    /// No flag set: locations may flow.
    public init() {}

    /// From the app's authorization now: the `AuthorizationState` the engine's gate reads.
    public init(_ state: AuthorizationState, servicesEnabled: Bool) {
        self.init(status: state.status, isInUse: state.isInUse, servicesEnabled: servicesEnabled)
    }

    private init(status: CLAuthorizationStatus, isInUse: Bool, servicesEnabled: Bool) {
        guard servicesEnabled else {
            deniedGlobally = true
            return
        }
        switch status {
        case .notDetermined: requestInProgress = true
        case .denied: denied = true
        case .restricted: restricted = true
        case .authorizedWhenInUse: insufficientlyInUse = !isInUse
        case .authorizedAlways: break
        }
    }

    /// From the reason an error gave for delivering nothing (nil reason, or one that is not
    /// about authorization: no flag).
    public init(reason: CLError.Reason?, servicesEnabled: Bool) {
        switch reason {
        case .notAuthorized?: self.init(status: .denied, isInUse: true, servicesEnabled: servicesEnabled)
        case .restricted?: self.init(status: .restricted, isInUse: true, servicesEnabled: true)
        case .notInUse?: self.init(status: .authorizedWhenInUse, isInUse: false, servicesEnabled: true)
        case .notDetermined?, .authorizationRequest?:
            self.init(status: .notDetermined, isInUse: true, servicesEnabled: true)
        default: self.init()
        }
    }

    /// True when any flag is set (no location is delivered).
    public var any: Bool { denied || deniedGlobally || restricted || insufficientlyInUse || requestInProgress }
}
