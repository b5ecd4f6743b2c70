import FoundationEssentials
import GNSSCore
import Glibc

/// Asks someone whether an app may have its location. Hosts plug in their own (a dialog, a
/// policy); nil means nobody can be asked (a daemon, CI).
public typealias AuthorizationPrompt = @Sendable (_ appID: String, _ wantsAlways: Bool) -> AuthorizationDecision?

/// Decides what a manager's app may receive: holds its status and accuracy, answers requests
/// following Apple's rules, and gates every location.
///
/// An authorizer starts `notDetermined` (or from `initial`), consults `prompt` on the first
/// request — which needs a `usageDescription`, the Linux counterpart of Info.plist's
/// `NSLocationWhenInUseUsageDescription` — and otherwise leaves the status alone with a
/// diagnostic naming the fix. Requests after a decision do nothing (Apple's rule), except one
/// When-In-Use → Always upgrade. `persistent(...)` makes one backed by the decision store and
/// the administrator's policy, following changes made outside the process within a second.
///
/// **In use.** When-In-Use authorization delivers only while `isInUse` is true. By default a
/// process is in use when its standard input is a terminal (a foreground CLI); a daemon is not.
/// Hosts set `isInUse` themselves; a change applies before the next location.
///
/// The authorizer holds the decision; gating each location is the `LocationEngine`'s job
/// (`AuthorizationGate`), fed with `state` whenever observers hear of a change.
///
/// ```swift
/// // A program's own decision, kept in the user's store and followed live:
/// let authorizer = LocationAuthorizer.persistent(appID: "fleetd", usageDescription: "to report the van's position")
/// let manager = CLLocationManager(authorizer: authorizer)
/// manager.requestAlwaysAuthorization()  // a terminal prompt, or the `gpsloc auth grant` command to run
/// ```
public final class LocationAuthorizer: Sendable {
    /// The app's id: the key of its decision, its policy entry and its kept state.
    public let appID: String
    /// Why the app wants the location, shown in prompts; requests without one fail loudly.
    public let usageDescription: String?
    private struct State {
        var decision: AuthorizationDecision
        var prompt: AuthorizationPrompt?
        var upgradeUsed = false
        var inUse: Bool
        /// In the order they were added: they are called in that order.
        var observers: [(token: UUID, handler: @Sendable () -> Void)] = []
        var store: DecisionStore?
        var watcher: FileChangeWatcher?
        /// Where reduced accuracy's state is kept (persistent authorizers).
        var reducedAccuracy: ReducedAccuracyStore?
        /// Set when the decision files can no longer be followed: the app is denied from then on.
        var failedClosed = false
        /// Authorization was requested of this authorizer (by any manager or service session).
        var requested = false
        /// The link to gpslocd that holds this app's decision (`brokered`).
        var broker: BrokerLink?
        /// The last location gpslocd keeps for this app, from its latest WELCOME.
        var brokerLast: LocationValue?
        /// Why gpslocd cannot be reached (nil while it can, or when not brokered).
        var brokerProblem: BrokerUnavailable?
    }
    private let locked: Locked<State>

    /// An authorizer held in memory (tests, hosts with their own store): `initial` decision or
    /// not determined, `prompt` for requests, `isInUse` (default: standard input is a terminal).
    public init(
        appID: String = LocationAuthorizer.defaultAppID, usageDescription: String? = nil,
        initial: AuthorizationDecision? = nil, prompt: AuthorizationPrompt? = nil, fuzzerSeed: UInt64? = nil,
        isInUse: Bool = isatty(STDIN_FILENO) != 0
    ) {
        self.appID = appID
        self.usageDescription = usageDescription ?? Self.environmentUsageDescription
        locked = Locked(
            State(decision: initial ?? AuthorizationDecision(status: .notDetermined), prompt: prompt, inUse: isInUse))
        fuzzerSecret = fuzzerSeed.map(ReducedAccuracySecret.seeded) ?? .process
    }

    /// The reduced-accuracy secret of an authorizer that keeps nothing (`LocationFuzzer`): this
    /// process's, shared by every app id in it, or one from the `fuzzerSeed` a test gave.
    /// Persistent authorizers use the user's kept secret instead.
    let fuzzerSecret: ReducedAccuracySecret

    /// The store and policy cannot be followed live any more (a revocation might go unseen):
    /// fail closed — denied, said once on stderr with the reason.
    private func followingFailed(_ problem: FileProblem) {
        let first = locked.withLock { state in
            defer { state.failedClosed = true }
            return !state.failedClosed
        }
        guard first else { return }
        Diagnostics.standardError(
            LocationDiagnostic(code: "authorizationFollow", .authorizationFollow(app: appID, problem: problem)))
        set(AuthorizationDecision(status: .denied))
    }

    /// Where reduced accuracy's secret and each app's state are kept between runs (persistent
    /// authorizers: the user's `ReducedAccuracyStore`); nil: per process.
    var reducedAccuracyStore: ReducedAccuracyStore? { locked.withLock { $0.reducedAccuracy } }

    /// Keeps reduced accuracy's secret and state in `store` (nil: this process's secret, nothing
    /// kept), for managers made after the call: hosts with their own state folder, and tests.
    func keepReducedAccuracy(in store: ReducedAccuracyStore?) {
        locked.withLock { $0.reducedAccuracy = store }
    }

    /// The fuzzer for a manager or session of this app — the one way every face gets one: the
    /// user's secret and the app's kept state from the store (read at its first reduced
    /// location, so apps with full accuracy touch nothing), or this authorizer's in-memory secret.
    public func makeFuzzer(live: Bool) -> LocationFuzzer {
        if isBrokered { return .behindBroker(appID: appID, secret: fuzzerSecret) }
        if let store = reducedAccuracyStore { return LocationFuzzer(store: store, appID: appID, live: live) }
        // Nothing is kept without a store, so whether the clock is the wall clock changes nothing.
        return LocationFuzzer(appID: appID, secret: fuzzerSecret)
    }

    /// What the location engine needs to know to gate locations for this app.
    public var state: AuthorizationState {
        locked.withLock {
            var state = AuthorizationState(
                appID: appID, status: $0.decision.status, accuracy: $0.decision.accuracy, isInUse: $0.inUse)
            state.unavailable = $0.brokerProblem
            return state
        }
    }

    /// An authorizer whose decision comes from the administrator's policy, else the user's
    /// decision store, and follows both files live (inotify): a `gpsloc auth revoke` or an
    /// edited policy reaches it within a second and its observers hear of it. Decisions made
    /// through `prompt` are saved to the store (except "allow once").
    public static func persistent(
        appID: String, usageDescription: String? = nil, store: DecisionStore = DecisionStore(),
        policyPath: String = LocationPolicy.defaultPath, prompt: AuthorizationPrompt? = nil,
        isInUse: Bool = isatty(STDIN_FILENO) != 0
    ) -> LocationAuthorizer {
        let authorizer = LocationAuthorizer(
            appID: appID, usageDescription: usageDescription,
            initial: AuthorizationDecision.resolve(app: appID, store: store, policyPath: policyPath),
            prompt: prompt, isInUse: isInUse)
        authorizer.locked.withLock {
            $0.store = store
            $0.reducedAccuracy = .user
        }
        try? FileManager.default.createDirectory(at: store.directory, withIntermediateDirectories: true)
        let watched = [store.fileURL.path, policyPath] + (LocationPolicy.additionalPath.map { [$0] } ?? [])
        let onChange: @Sendable () -> Void = { [weak authorizer] in
            guard let authorizer, !authorizer.locked.withLock({ $0.failedClosed }) else { return }
            authorizer.set(
                AuthorizationDecision.resolve(app: appID, store: store, policyPath: policyPath)
                    ?? AuthorizationDecision(status: .notDetermined))
        }
        let watcher = FileChangeWatcher(
            paths: watched, onFailure: { [weak authorizer] problem in authorizer?.followingFailed(problem) },
            onChange: onChange)
        if watcher == nil {
            authorizer.followingFailed(.inotifyUnavailable(errno: errno))
        }
        authorizer.locked.withLock { $0.watcher = watcher }
        return authorizer
    }

    /// True when gpslocd holds this app's decision (`brokered`).
    public var isBrokered: Bool { locked.withLock { $0.broker != nil } }

    /// The last location gpslocd kept for this app, as its latest WELCOME gave it (only while
    /// the app may see it; nil for an authorizer that is not brokered).
    public var brokerLastLocation: LocationValue? { locked.withLock { $0.brokerLast } }

    /// An authorizer whose decision gpslocd holds (docs/broker.md): it connects to the socket,
    /// says which app it is, and follows the AUTHORIZATION lines gpslocd sends — a revocation
    /// reaches it at once. gpslocd judges whether the program is in use (the foreground of a
    /// terminal) and applies reduced accuracy itself; requests go to gpslocd, which asks the
    /// user's agent (`gpsloc agent`) or answers with the command to run. When gpslocd cannot be
    /// reached the app is denied — the gate's refusal says why (`brokerUnreachable`) — and the link
    /// keeps trying every second.
    public static func brokered(
        appID: String, usageDescription: String? = nil, socketPath: String
    ) -> LocationAuthorizer {
        let authorizer = LocationAuthorizer(
            appID: appID, usageDescription: usageDescription, initial: AuthorizationDecision(status: .notDetermined),
            prompt: nil, isInUse: false)
        let owner = WeakAuthorizer(authorizer)
        let link = BrokerLink(
            path: socketPath, app: appID,
            onMessage: { message in
                guard message.messageClass == "AUTHORIZATION", let authorizer = owner.value else { return }
                authorizer.isInUse = message.bool("inUse") ?? false
                authorizer.set(BrokerWelcome.decision(message))
            },
            onState: { state in
                guard case .connected(let welcome) = state, let authorizer = owner.value else { return }
                authorizer.locked.withLock {
                    $0.brokerLast = welcome.last
                    $0.brokerProblem = nil
                }
                authorizer.isInUse = welcome.inUse
                authorizer.set(welcome.decision)
            })
        authorizer.locked.withLock { $0.broker = link }
        do {
            // The link's handler has taken the WELCOME's decision when this returns.
            _ = try link.startAndWait(timeout: 5)
        } catch {
            // Said to the app by the gate's refusal (`brokerUnreachable`), where it asks for locations.
            authorizer.locked.withLock { $0.brokerProblem = error }
            authorizer.set(AuthorizationDecision(status: .denied))
        }
        return authorizer
    }

    /// A request through gpslocd: it asks the user's agent, or says what to run.
    private func requestThroughBroker(_ link: BrokerLink, always: Bool) -> RequestOutcome {
        guard let usageDescription else { return .missingUsageDescription(.noUsageDescription(app: appID)) }
        let before = locked.withLock { $0.decision }
        do {
            let reply = try link.request(
                {
                    $0.add("always", always)
                    $0.add("usage", usageDescription)
                }, className: "REQUEST", timeout: 300)
            guard reply.bool("ok") == true else {
                return .noPrompt(.requestRefused(said: reply.string("message")))
            }
            // gpslocd's AUTHORIZATION line may have set the answer already (it comes first).
            set(BrokerWelcome.decision(reply))
            return locked.withLock { $0.decision } != before ? .changed : .unchanged
        } catch {
            return .noPrompt(.requestFailed(error))
        }
    }

    /// Whether the app counts as in use (see the type's documentation).
    public var isInUse: Bool {
        get { locked.withLock { $0.inUse } }
        set {
            let handlers = locked.withLock { state -> [@Sendable () -> Void]? in
                guard state.inUse != newValue else { return nil }
                state.inUse = newValue
                return state.observers.map(\.handler)
            }
            for handler in handlers ?? [] { handler() }
        }
    }

    /// Calls `handler` (on an arbitrary queue) whenever the decision changes; returns a token
    /// for `removeObserver`. Observers are called in the order they were added (a face that
    /// says what changed adds its observer before the engine that acts on it is made).
    @discardableResult
    public func addObserver(_ handler: @escaping @Sendable () -> Void) -> UUID {
        let token = UUID()
        locked.withLock { $0.observers.append((token, handler)) }
        return token
    }

    /// Stops calling the observer `addObserver(_:)` returned `token` for.
    public func removeObserver(_ token: UUID) { locked.withLock { $0.observers.removeAll { $0.token == token } } }

    /// `GPSLOCATION_USAGE_DESCRIPTION`: the usage description of an app whose code gives none
    /// (ported CoreLocation code has it in Info.plist, which Linux does not read).
    public static var environmentUsageDescription: String? {
        guard let text = ProcessInfo.processInfo.environment["GPSLOCATION_USAGE_DESCRIPTION"], !text.isEmpty else {
            return nil
        }
        return text
    }

    /// The executable's name: how an app is known when it does not say.
    public static var defaultAppID: String {
        let name = URL(fileURLWithPath: CommandLine.arguments.first ?? "app").lastPathComponent
        return name.isEmpty ? "app" : name
    }

    /// The app's status now.
    public var status: CLAuthorizationStatus { locked.withLock { $0.decision.status } }
    /// Full or reduced accuracy now.
    public var accuracy: CLAccuracyAuthorization { locked.withLock { $0.decision.accuracy } }

    /// What a request did.
    public enum RequestOutcome: Sendable, Equatable {
        /// The status changed (the delegate hears of it).
        case changed
        /// Nothing new (Apple: no callback).
        case unchanged
        /// Nobody could be asked; the facts' words say how to grant it.
        case noPrompt(LocationDiagnostic.Facts)
        /// The app gave no usage description: a programmer error, and the facts' words say so.
        case missingUsageDescription(LocationDiagnostic.Facts)
    }

    /// True once authorization was requested of this authorizer — by any manager, `CLMonitor`,
    /// `liveUpdates` or `CLServiceSession` sharing it — so none of them says it never was.
    public var wasRequested: Bool { locked.withLock { $0.requested } }

    /// Apple's request rules. `always`: `requestAlwaysAuthorization()`.
    public func request(always: Bool) -> RequestOutcome {
        enum Step {
            case unchanged, noPrompt, noUsageDescription
            case ask(AuthorizationPrompt)
        }
        if let link = locked.withLock({ state -> BrokerLink? in
            state.requested = true
            return state.broker
        }) {
            return requestThroughBroker(link, always: always)
        }
        let step = locked.withLock { state -> Step in
            state.requested = true
            let canUpgrade = always && state.decision.status == .authorizedWhenInUse && !state.upgradeUsed
            guard state.decision.status == .notDetermined || canUpgrade else { return .unchanged }
            guard let prompt = state.prompt else { return .noPrompt }
            guard usageDescription != nil else { return .noUsageDescription }
            if canUpgrade { state.upgradeUsed = true }
            return .ask(prompt)
        }
        let prompt: AuthorizationPrompt
        switch step {
        case .unchanged:
            return .unchanged
        case .noPrompt:
            // A program that is not in use (a daemon) gets nothing from When In Use.
            return .noPrompt(.nobodyToAsk(app: appID, always: always || !isInUse))
        case .noUsageDescription:
            return .missingUsageDescription(.noUsageDescription(app: appID))
        case .ask(let asked):
            prompt = asked
        }
        return ask(prompt, always: always)
    }

    private func ask(_ prompt: AuthorizationPrompt, always: Bool) -> RequestOutcome {
        // Asked outside the lock: a person may take their time.
        guard let answer = prompt(appID, always) else { return .unchanged }
        let (outcome, store) = locked.withLock { state -> (RequestOutcome, DecisionStore?) in
            guard answer != state.decision else { return (.unchanged, nil) }
            state.decision = answer
            return (.changed, state.store)
        }
        if outcome == .changed, let store, !answer.isTemporary { try? store.set(answer, for: appID) }
        return outcome
    }

    /// Closes the link to gpslocd (a brokered authorizer); nothing else changes.
    func disconnect() { locked.withLock { $0.broker }?.close() }

    /// Sets the decision directly (a settings change, a policy); returns true when it changed.
    @discardableResult
    public func set(_ newDecision: AuthorizationDecision) -> Bool {
        let handlers = locked.withLock { state -> [@Sendable () -> Void]? in
            guard newDecision != state.decision else { return nil }
            state.decision = newDecision
            return state.observers.map(\.handler)
        }
        guard let handlers else { return false }
        for handler in handlers { handler() }
        return true
    }
}

/// A weak reference the broker link's handlers hold (the authorizer owns the link).
private final class WeakAuthorizer: Sendable {
    weak let value: LocationAuthorizer?
    init(_ value: LocationAuthorizer) { self.value = value }
}
