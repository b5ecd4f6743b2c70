import Foundation
import GPSLocation

/// `gpsloc last`: the last location an app received (the per-user last-location cache), as
/// the app itself would see it: nothing unless it is authorized now, and with reduced accuracy
/// only a reduced location.
enum LastCommand {
    static let help = """
        usage: gpsloc last [--app ID] [--json]

        Prints the last location APP received (default gpsloc) from a receiver — what a new
        CLLocationManager of that app shows as `location` before updates start — with how old
        it is. Only what the app may see now: nothing when it is not authorized, and under
        reduced accuracy only a reduced location. Replays are never cached.
        Cache: $XDG_CACHE_HOME/gpslocation/last/APP.json (or ~/.cache/gpslocation/last/).
        Exit status: 0 with a location, 1 without one (the reason on stderr, or an NDJSON error).
        """

    static func run(_ argv: [String]) throws(UsageError) -> Int32 {
        let arguments = try Arguments(argv, valued: ["app"], flags: ["json"])
        if arguments.has("help") {
            print(help)
            return 0
        }
        let app = arguments["app"] ?? "gpsloc"
        try AuthCommand.validate(app)
        let json = arguments.has("json") || isatty(STDOUT_FILENO) == 0
        let decision =
            LocationAuthorizer.resolve(app: app, store: DecisionStore(), policyPath: LocationPolicy.defaultPath)
            ?? AuthorizationDecision(status: .notDetermined)
        let cache = LastLocationCache.user
        guard let location = cache.location(for: app, allowedBy: decision) else {
            let why: String
            switch decision.status {
            case .authorizedAlways, .authorizedWhenInUse:
                why =
                    cache.location(for: app) == nil
                    ? "\(app) has received no location from a receiver yet — run it (or `gpsloc watch --app \(app)`) with a receiver attached"
                    : "\(app) has reduced accuracy now, and its last location was precise: it is not shown"
            default:
                why =
                    "\(app) is \(decision.status) — a last location is shown only to an authorized app "
                    + "(`gpsloc auth grant \(app) --when-in-use`)"
            }
            if json {
                var writer = NDJSONWriter()
                writer.error(code: "locationUnknown", message: "no last location: \(why)")
                standardOutput(writer.buffer)
            } else {
                standardError("gpsloc: no last location: \(why)\n")
            }
            return 1
        }
        let age = Date().timeIntervalSince(location.timestamp)
        if json {
            var writer = NDJSONWriter()
            writer.location(location)
            writer.diagnostic(code: "lastLocationAge", message: "the last location is \(describe(age: age)) old")
            standardOutput(writer.buffer)
        } else {
            let accuracy =
                location.horizontalAccuracy < CLLocationDistanceMax
                ? String(format: "±%.0f m", location.horizontalAccuracy) : "accuracy unknown"
            print(
                String(
                    format: "%@: %.6f, %.6f %@%@ at %@ (%@ old)", app, location.coordinate.latitude,
                    location.coordinate.longitude, accuracy, location.gnss?.reduced == true ? " (approximate)" : "",
                    iso8601Milliseconds(location.timestamp), describe(age: age)))
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
