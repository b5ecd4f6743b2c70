import Foundation

/// The answer to an authorization request.
public struct AuthorizationDecision: Sendable, Equatable {
    public var status: CLAuthorizationStatus
    public var accuracy: CLAccuracyAuthorization
    public init(status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization = .fullAccuracy) {
        self.status = status
        self.accuracy = accuracy
    }
}

/// Asks someone whether an app may have its location. Hosts plug in their own (a dialog, a
/// policy); nil means nobody can be asked (a daemon, CI).
public typealias AuthorizationPrompt = @Sendable (_ appID: String, _ wantsAlways: Bool) -> AuthorizationDecision?

/// Decides what a manager's app may receive: holds its status and accuracy, answers requests
/// following Apple's rules, and gates every location.
///
/// This in-process authorizer starts `notDetermined` (or from `initial`), consults `prompt` on
/// the first request, and otherwise leaves the status alone with a diagnostic naming the fix.
/// Requests after a decision do nothing (Apple's rule), except one When-In-Use → Always upgrade.
public final class LocationAuthorizer: @unchecked Sendable {
    // @unchecked Sendable: every mutable property is guarded by `lock`.
    public let appID: String
    private let lock = NSLock()
    private var decision: AuthorizationDecision
    private var prompt: AuthorizationPrompt?
    private var upgradeUsed = false
    private var fuzzer: LocationFuzzer
    private var deniedReported = false

    public init(appID: String = LocationAuthorizer.defaultAppID, initial: AuthorizationDecision? = nil, prompt: AuthorizationPrompt? = nil, fuzzer: LocationFuzzer? = nil) {
        self.appID = appID
        decision = initial ?? AuthorizationDecision(status: .notDetermined)
        self.prompt = prompt
        self.fuzzer = fuzzer ?? LocationFuzzer(appID: appID)
    }

    /// The executable's name: how an app is known when it does not say.
    public static var defaultAppID: String {
        let name = URL(fileURLWithPath: CommandLine.arguments.first ?? "app").lastPathComponent
        return name.isEmpty ? "app" : name
    }

    public var status: CLAuthorizationStatus { lock.withLock { decision.status } }
    public var accuracy: CLAccuracyAuthorization { lock.withLock { decision.accuracy } }

    public enum RequestOutcome: Sendable, Equatable {
        /// The status changed (the delegate hears of it).
        case changed
        /// Nothing new (Apple: no callback).
        case unchanged
        /// Nobody could be asked; the message says how to grant it.
        case noPrompt(String)
    }

    /// Apple's request rules. `always`: `requestAlwaysAuthorization()`.
    public func request(always: Bool) -> RequestOutcome {
        lock.lock()
        let current = decision
        let canUpgrade = always && current.status == .authorizedWhenInUse && !upgradeUsed
        guard current.status == .notDetermined || canUpgrade else {
            lock.unlock()
            return .unchanged
        }
        if canUpgrade { upgradeUsed = true }
        let prompt = self.prompt
        lock.unlock()
        guard let prompt else {
            let flag = always ? "--always" : "--when-in-use"
            return .noPrompt(
                "no one can be asked for location permission for \(appID) here (no prompt is installed): "
                    + "grant it with `gpsloc auth grant \(appID) \(flag)`, or give the manager's authorizer a prompt")
        }
        guard let answer = prompt(appID, always) else { return .unchanged }
        return lock.withLock {
            guard answer != decision else { return .unchanged }
            decision = answer
            deniedReported = false
            return .changed
        }
    }

    /// Sets the decision directly (a settings change, a policy); returns true when it changed.
    @discardableResult
    public func set(_ newDecision: AuthorizationDecision) -> Bool {
        lock.withLock {
            guard newDecision != decision else { return false }
            decision = newDecision
            deniedReported = false
            return true
        }
    }

    /// The gate: what, if anything, of `location` the app receives.
    public func decide(_ location: CLLocation, now: Date) -> GateDecision {
        lock.withLock {
            switch decision.status {
            case .authorizedAlways, .authorizedWhenInUse:
                if decision.accuracy == .fullAccuracy { return .deliver(location) }
                guard let reduced = fuzzer.reduce(location, now: now) else { return .withhold(error: nil) }
                return .deliver(reduced)
            case .notDetermined:
                return .withhold(error: nil)
            case .denied, .restricted:
                if deniedReported { return .withhold(error: nil) }
                deniedReported = true
                return .withhold(
                    error: CLError(
                        .denied,
                        message: "location access for \(appID) is \(decision.status == .denied ? "denied" : "restricted") — "
                            + "no location is delivered; `gpsloc auth grant \(appID) --when-in-use` allows it"))
            }
        }
    }
}

/// An authorizer is the pipeline's gate for its app.
extension LocationAuthorizer: LocationGate {
    public var authorizationStatus: CLAuthorizationStatus { status }
    public var accuracyAuthorization: CLAccuracyAuthorization { accuracy }
}
