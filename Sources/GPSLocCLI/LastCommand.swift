import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// `gpsloc last`: the last location an app received (the per-user last-location cache), as
/// the app itself would see it: nothing unless it is authorized now, and with reduced accuracy
/// only a reduced location.
enum LastCommand {
    static let help = """
        usage: gpsloc last [--app ID] [--in-use] [--json]

        Prints the last location APP received (default gpsloc) from a receiver — what a new
        CLLocationManager of that app shows as `location` before updates start — with how old
        it is. Only what the app may see now, by the gate `watch` applies: nothing when it is not
        authorized (or authorized When In Use and not in use: stdin not a terminal, unless
        --in-use), and under reduced accuracy only a reduced location. Replays are never cached;
        a cache folder open to other users is not read.
        Cache: $XDG_CACHE_HOME/gpslocation/last/APP.json (or ~/.cache/gpslocation/last/).
        Where gpslocd is in force (GPSLOCATION_BROKER or /run/gpslocd/socket), the location is the
        one gpslocd keeps for the app, shown only while gpslocd lets the app see it.
        Exit status: 0 with a location, 1 without one (the reason on stderr, or an NDJSON error).
        """

    static func run(_ argv: [String]) throws(UsageError) -> Int32 {
        let arguments = try Arguments(argv, valued: ["app"], flags: ["json", "in-use"])
        if arguments.has("help") {
            print(HelpText.wrapped(help))
            return 0
        }
        let app = arguments["app"] ?? "gpsloc"
        try AuthCommand.validate(app)
        let json = arguments.has("json") || isatty(STDOUT_FILENO) == 0
        if let socket = BrokerProtocol.socketPath() {
            if arguments.has("in-use") {
                throw UsageError("--in-use is gpslocd's to judge (the foreground of a terminal) where it is in force")
            }
            return throughBroker(socket, app: app, json: json)
        }
        let decision =
            AuthorizationDecision.resolve(app: app, store: DecisionStore(), policyPath: LocationPolicy.defaultPath)
            ?? AuthorizationDecision(status: .notDetermined)
        let cache = LastLocationCache.user
        // The engine's own gate, as `watch` applies it (restricted, denied, in use, reduced).
        let gate = AuthorizationState(
            appID: app, status: decision.status, accuracy: decision.accuracy,
            isInUse: isatty(STDIN_FILENO) != 0 || arguments.has("in-use"))
        guard gate.allowsDelivery, let location = cache.location(for: app, allowedBy: decision) else {
            let why: String
            if !gate.allowsDelivery {
                why = gate.refusal?.message ?? "\(app) may not receive locations now"
            } else if let problem = cache.folderProblem, FileManager.default.fileExists(atPath: cache.directory.path) {
                why = "the cache is not read: \(problem)"
            } else if cache.location(for: app) == nil {
                // No folder yet is no location yet: the cache is made by the first one it keeps.
                why =
                    "\(app) has received no location from a receiver yet — run it (or `gpsloc watch --app \(app)`) "
                    + "with a receiver attached (replays, gpsfake's included, are never kept)"
            } else {
                why = "\(app) has reduced accuracy now, and its last location was precise: it is not shown"
            }
            return fail(why, json: json)
        }
        return show(location, app: app, json: json)
    }

    /// Behind gpslocd: the location it keeps for the app comes with its WELCOME, only while the
    /// app may see it (gpslocd judges authorization, in use and reduced accuracy).
    static func throughBroker(_ socket: String, app: String, json: Bool) -> Int32 {
        let link = BrokerLink(path: socket, app: app, onMessage: { _ in }, onState: { _ in })
        defer { link.close() }
        let welcome: BrokerWelcome
        do {
            welcome = try link.startAndWait(timeout: 5)
        } catch {
            return fail("\(error.description)", json: json)
        }
        if let location = welcome.last { return show(location, app: welcome.app, json: json) }
        let gate = AuthorizationState(
            appID: welcome.app, status: welcome.decision.status, accuracy: welcome.decision.accuracy,
            isInUse: welcome.inUse)
        let why =
            gate.refusal.map { "\($0.message) (gpslocd's decision)" }
            ?? "gpslocd keeps no location \(welcome.app) may see: it has received none through gpslocd yet (or "
            + "it has reduced accuracy now and its last one was precise) — run `gpsloc watch --app \(welcome.app)`"
        return fail(why, json: json)
    }

    static func fail(_ why: String, json: Bool) -> Int32 {
        if json {
            var writer = NDJSONWriter()
            writer.error(code: "locationUnknown", message: "no last location: \(why)")
            standardOutput(writer.buffer)
        } else {
            standardError("gpsloc: no last location: \(terminalSafe(why))\n")
        }
        return 1
    }

    static func show(_ location: LocationValue, app: String, json: Bool) -> Int32 {
        let age = Date().timeIntervalSince(location.timestamp)
        if json {
            var writer = NDJSONWriter()
            writer.location(location)
            writer.diagnostic(code: "lastLocationAge", message: "the last location is \(describe(age: age)) old")
            standardOutput(writer.buffer)
        } else {
            let accuracy =
                location.horizontalAccuracy < CLLocationDistanceMax
                ? "±\(fixedDecimal(location.horizontalAccuracy, decimals: 0)) m" : "accuracy unknown"
            print(
                "\(app): \(fixedDecimal(location.coordinate.latitude, decimals: 6)), \(fixedDecimal(location.coordinate.longitude, decimals: 6)) \(accuracy)\(location.gnss?.reduced == true ? " (approximate)" : "") at \(iso8601Milliseconds(location.timestamp)) (\(describe(age: age)) old)"
            )
        }
        return 0
    }

    static func describe(age: TimeInterval) -> String {
        let seconds = max(0, age)
        if seconds < 120 { return "\(Int(seconds)) s" }
        if seconds < 2 * 3600 { return "\(Int(seconds / 60)) minutes" }
        if seconds < 2 * 86400 { return "\(Int(seconds / 3600)) hours" }
        return "\(Int(seconds / 86400)) days"
    }
}
