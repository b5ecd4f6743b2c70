import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

enum AuthCommand {
    static let help = """
        usage: gpsloc auth status [APP]
               gpsloc auth grant APP [--when-in-use | --always] [--full | --reduced]
               gpsloc auth revoke APP        (deny: the app receives nothing)
               gpsloc auth reset APP         (forget: not determined again)
               gpsloc auth who               (with gpslocd: who is using location now)

        Without gpslocd: the per-user decision store, $XDG_CONFIG_HOME/gpslocation/authorizations.json
        (~/.config/gpslocation/ by default). `gpsloc watch --app APP` reads it.
        With gpslocd (GPSLOCATION_BROKER, or /run/gpslocd/socket): requests to it, for your own uid's
        apps; root may add --uid UID for another user's.
        """

    static func run(_ argv: [String]) throws(UsageError) -> Int32 {
        let arguments = try Arguments(argv, valued: ["uid"], flags: ["when-in-use", "always", "full", "reduced"])
        if arguments.has("help") {
            print(HelpText.wrapped(help))
            return 0
        }
        guard let verb = arguments.positionals.first else {
            throw UsageError("auth needs status, grant, revoke or reset")
        }
        let app = arguments.positionals.dropFirst().first
        if let app { try validate(app) }
        guard arguments.positionals.count <= 2 else { throw UsageError("auth takes one app identifier") }
        if let broker = BrokerProtocol.socketPath() {
            return try BrokerCommands.auth(verb, app: app, arguments: arguments, path: broker)
        }
        if verb == "who" || arguments["uid"] != nil {
            standardError(
                "gpsloc: `auth who` and --uid need gpslocd (no /run/gpslocd/socket, GPSLOCATION_BROKER unset): "
                    + "without it each user's decisions are their own files — start gpslocd, or set "
                    + "GPSLOCATION_BROKER=PATH\n")
            return 1
        }
        let store = DecisionStore()
        do throws(any Error) {
            switch verb {
            case "status":
                let entries = try store.entries()
                if let problem = store.problem { standardError("gpsloc: \(problem)\n") }
                // What applies is the policy first, then the user's decision: show that, and
                // where it comes from.
                let policy = LocationPolicy.effective()
                if let problem = policy.problem { standardError("gpsloc: \(terminalSafe(problem.description))\n") }
                let apps =
                    app.map { [$0] } ?? Set(entries.keys).union(policy.granted.keys).union(policy.restricted).sorted()
                if apps.isEmpty { print("no app has a decision yet (\(store.fileURL.path))") }
                for name in apps {
                    let effective =
                        AuthorizationDecision.resolve(app: name, store: store, policyPath: LocationPolicy.defaultPath)
                        ?? AuthorizationDecision(status: .notDetermined)
                    let fromPolicy = policy.decision(for: name) != nil
                    var line = "\(name): \(effective.status.name)"
                    if effective.status.isAuthorized {
                        line += ", \(effective.accuracy.name) accuracy"
                    }
                    if fromPolicy {
                        line += " (the administrator's policy"
                        if let entry = entries[name] {
                            line += "; the user's decision, \(entry.status), does not apply"
                        }
                        line += ")"
                    } else if let entry = entries[name] {
                        line += " (the user's decision, \(iso8601Milliseconds(entry.decidedAt)))"
                    }
                    // App names come from files (the store, the policy): made terminal-safe.
                    print(terminalSafe(line))
                }
            case "grant":
                guard let app else { throw UsageError("grant needs an app identifier") }
                if arguments.has("always") && arguments.has("when-in-use") {
                    throw UsageError("choose --always or --when-in-use")
                }
                if arguments.has("full") && arguments.has("reduced") { throw UsageError("choose --full or --reduced") }
                let status: CLAuthorizationStatus = arguments.has("always") ? .authorizedAlways : .authorizedWhenInUse
                let accuracy: CLAccuracyAuthorization = arguments.has("reduced") ? .reducedAccuracy : .fullAccuracy
                try store.set(AuthorizationDecision(status: status, accuracy: accuracy), for: app)
                print("\(app): \(status.name), \(accuracy.name) accuracy")
            case "revoke":
                guard let app else { throw UsageError("revoke needs an app identifier") }
                try store.set(AuthorizationDecision(status: .denied), for: app)
                LastLocationCache.user.remove(app: app)
                print("\(app): denied (its last location is forgotten)")
            case "reset":
                guard let app else { throw UsageError("reset needs an app identifier") }
                try store.remove(app: app)
                LastLocationCache.user.remove(app: app)
                print("\(app): notDetermined")
            default:
                throw UsageError("unknown auth command \(verb): use status, grant, revoke or reset")
            }
        } catch let error as DecisionStore.StoreError {
            standardError("gpsloc: \(error.description)\n")
            return 1
        } catch let error as UsageError {
            throw error
        } catch {
            standardError("gpsloc: \(error)\n")
            return 1
        }
        return 0
    }

    static func validate(_ app: String) throws(UsageError) {
        guard !app.isEmpty, app.allSatisfy({ $0.isLetter || $0.isNumber || "._-".contains($0) }) else {
            throw UsageError("an app identifier is letters, digits, '.', '_' or '-', not \(app)")
        }
    }
}
