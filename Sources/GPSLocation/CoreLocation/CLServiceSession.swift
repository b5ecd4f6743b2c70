import Foundation
import GNSSCore

/// Apple's iOS 18 service session: declares the authorization an app's feature needs. Creating
/// one with `.whenInUse` or `.always` asks for that authorization (as
/// `requestWhenInUseAuthorization()`/`requestAlwaysAuthorization()` would: the prompt on a
/// terminal, otherwise the explanation naming `gpsloc auth grant`), and `diagnostics` reports
/// the authorization situation now and at every change, until `invalidate()`.
///
/// On Linux no session is *required*: the authorization gate decides what is delivered, with or
/// without sessions (`serviceSessionRequired` is always false).
///
/// ```swift
/// let session = CLServiceSession(authorization: .whenInUse)  // asks, as the request would
/// for try await diagnostic in session.diagnostics {
///     if diagnostic.authorizationDenied { print("denied: `gpsloc auth grant` allows it") }
/// }
/// ```
public final class CLServiceSession: Sendable {
    /// What the session asks for.
    public enum AuthorizationRequirement: Sendable {
        /// Nothing (the session only observes).
        case none
        /// When In Use.
        case whenInUse
        /// Always.
        case always
    }

    /// The state of the app's authorization as this session sees it.
    public struct Diagnostic: Sendable {
        /// The user denied the app.
        public let authorizationDenied: Bool
        /// Location services are off for the whole machine (the administrator's policy).
        public let authorizationDeniedGlobally: Bool
        /// The administrator's policy restricts the app.
        public let authorizationRestricted: Bool
        /// When In Use, and the app is not in use.
        public let insufficientlyInUse: Bool
        /// Always false on Linux (see the type).
        public let serviceSessionRequired: Bool
        /// The session asked for full accuracy and the app has reduced accuracy.
        public let fullAccuracyDenied: Bool
        /// The session asked for Always and the app has When In Use (or less).
        public let alwaysAuthorizationDenied: Bool
        /// Not determined yet: nobody has answered (or nobody can be asked — see the message
        /// the manager's delegate receives, and `gpsloc auth grant`).
        public let authorizationRequestInProgress: Bool
        /// Why the app has no authorization yet and what to do, when the session's request
        /// could not ask anyone (a GPSLocation addition): e.g. the `gpsloc auth grant` to run.
        public let message: String?

        init(
            authorizer: LocationAuthorizer, requirement: AuthorizationRequirement, wantsFullAccuracy: Bool,
            requestMessage: String?
        ) {
            // The state the engine's gate reads, through the same predicates.
            let state = authorizer.state
            let status = state.status
            let flags = AuthorizationFlags(state, servicesEnabled: CLLocationManager.locationServicesEnabled())
            authorizationDeniedGlobally = flags.deniedGlobally
            authorizationDenied = flags.denied
            authorizationRestricted = flags.restricted
            insufficientlyInUse = flags.insufficientlyInUse
            serviceSessionRequired = false
            fullAccuracyDenied =
                wantsFullAccuracy && status.isAuthorized && state.accuracy == .reducedAccuracy
            alwaysAuthorizationDenied =
                requirement == .always && status != .authorizedAlways && status != .notDetermined
            authorizationRequestInProgress = flags.requestInProgress
            message = status == .notDetermined ? requestMessage : nil
        }
    }

    /// What this session asks for.
    public let authorization: AuthorizationRequirement
    /// The key naming why full accuracy is needed (Apple: an Info.plist key); when given, the
    /// session reports `fullAccuracyDenied` for a reduced-accuracy app.
    public let fullAccuracyPurposeKey: String?
    private let authorizer: LocationAuthorizer
    private let state:
        Locked<(observer: UUID?, continuations: [UUID: AsyncThrowingStream<Diagnostic, any Error>.Continuation])>
    /// What the session's request said when nobody could be asked.
    private let requestMessage: String?

    /// A session asking for `authorization` (asked at once when not determined).
    public convenience init(authorization: AuthorizationRequirement) {
        self.init(
            authorization: authorization, fullAccuracyPurposeKey: nil, authorizer: CLLocationManager.sharedAuthorizer)
    }

    /// A session that also asks for full accuracy, for the purpose `fullAccuracyPurposeKey` names.
    public convenience init(authorization: AuthorizationRequirement, fullAccuracyPurposeKey: String) {
        self.init(
            authorization: authorization, fullAccuracyPurposeKey: fullAccuracyPurposeKey,
            authorizer: CLLocationManager.sharedAuthorizer)
    }

    /// A session for a given authorizer (a GPSLocation addition, for managers built with one).
    public init(
        authorization: AuthorizationRequirement, fullAccuracyPurposeKey: String? = nil, authorizer: LocationAuthorizer
    ) {
        self.authorization = authorization
        self.fullAccuracyPurposeKey = fullAccuracyPurposeKey
        self.authorizer = authorizer
        state = Locked((nil, [:]))
        let outcome: LocationAuthorizer.RequestOutcome? =
            switch authorization {
            case .none: nil
            case .whenInUse: authorizer.request(always: false)
            case .always: authorizer.request(always: true)
            }
        requestMessage =
            switch outcome {
            case .noPrompt(let message), .missingUsageDescription(let message): message.words
            default: nil
            }
        let observer = authorizer.addObserver { [weak self] in self?.publish() }
        state.withLock { $0.observer = observer }
    }

    deinit { invalidate() }

    /// The diagnostics now and after every change of the app's authorization. Each call gives
    /// its own sequence; all of them end at `invalidate()`. Throwing, as Apple's (`for try await`),
    /// though it ends without an error.
    public var diagnostics: AsyncThrowingStream<Diagnostic, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: Diagnostic.self, throwing: (any Error).self, bufferingPolicy: .bufferingNewest(1))
        let token = UUID()
        let alive = state.withLock { state -> Bool in
            guard state.observer != nil else { return false }
            state.continuations[token] = continuation
            return true
        }
        guard alive else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: token) }
        }
        continuation.yield(current)
        return stream
    }

    /// The diagnostic for the app's authorization now.
    public var current: Diagnostic {
        Diagnostic(
            authorizer: authorizer, requirement: authorization, wantsFullAccuracy: fullAccuracyPurposeKey != nil,
            requestMessage: requestMessage)
    }

    /// Ends the session: its diagnostics sequences finish.
    public func invalidate() {
        let (observer, continuations) = state.withLock { state in
            defer { state = (nil, [:]) }
            return (state.observer, Array(state.continuations.values))
        }
        if let observer { authorizer.removeObserver(observer) }
        for continuation in continuations { continuation.finish() }
    }

    private func publish() {
        let diagnostic = current
        for continuation in state.withLock({ Array($0.continuations.values) }) { continuation.yield(diagnostic) }
    }
}

/// Apple's background activity session (iOS 17). Accepted so ported code compiles and runs: a
/// Linux process is never suspended in the background, so it changes nothing.
public final class CLBackgroundActivitySession: Sendable {
    /// A session (nothing to hold: a Linux process is never suspended).
    public init() {}
    /// Ends the session.
    public func invalidate() {}
}
