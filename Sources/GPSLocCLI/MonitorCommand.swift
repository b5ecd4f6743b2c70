import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// `gpsloc monitor`: the conditions a named `CLMonitor` of an app keeps between runs
/// (`MonitorStore`), listed, added and removed without writing code.
enum MonitorCommand {
    static let help = """
        usage: gpsloc monitor list [NAME] [--app ID] [--json]
               gpsloc monitor add NAME ID=LAT,LON,RADIUS... [--app ID]
               gpsloc monitor remove NAME ID... [--app ID]

        The circles a named CLMonitor of APP (default gpsloc) monitors, kept in
        $XDG_STATE_HOME/gpslocation/monitors/APP/ (or ~/.local/state/gpslocation/monitors/APP/), with
        the state each was last seen in. A program that opens `CLMonitor("NAME")` monitors them, and
        `gpsloc watch --monitor NAME` shows their events. `add` replaces a circle with the same ID
        (its state becomes unknown); radii are metres, at most 100000.
        Exit status: 0 done, 1 the store could not be read or written, 2 a usage mistake.
        """

    static func run(_ argv: [String]) throws(UsageError) -> Int32 {
        let arguments = try Arguments(argv, valued: ["app"], flags: ["json"])
        if arguments.has("help") {
            print(HelpText.wrapped(help))
            return 0
        }
        let app = arguments["app"] ?? "gpsloc"
        try AuthCommand.validate(app)
        guard let action = arguments.positionals.first else {
            throw UsageError("monitor needs list, add or remove")
        }
        let operands = Array(arguments.positionals.dropFirst())
        let store = MonitorStore()
        do {
            switch action {
            case "list":
                guard operands.count <= 1 else { throw UsageError("monitor list takes at most one NAME") }
                let names = operands.isEmpty ? store.monitors(app: app) : operands
                let json = arguments.has("json") || isatty(STDOUT_FILENO) == 0
                if names.isEmpty && !json {
                    print("\(app) keeps no monitors (add one: gpsloc monitor add NAME ID=LAT,LON,RADIUS)")
                }
                for name in names {
                    let conditions = try RegionKeeper(store: store, monitor: name, app: app).load()
                    for condition in conditions {
                        if json {
                            print(jsonLine(app: app, monitor: name, condition))
                        } else {
                            print(
                                "\(terminalSafe(name))  \(terminalSafe(condition.fence.identifier))  "
                                    + "\(fixedDecimal(condition.fence.latitude, decimals: 7)) \(fixedDecimal(condition.fence.longitude, decimals: 7)) r \(fixedDecimal(condition.fence.radius, decimals: 0)) m"
                                    + "  \(condition.presence.rawValue)")
                        }
                    }
                    if conditions.isEmpty && !json { print("\(terminalSafe(name)): no conditions") }
                }
                return 0
            case "add":
                guard operands.count >= 2 else {
                    throw UsageError("monitor add needs NAME and at least one ID=LAT,LON,RADIUS")
                }
                let name = operands[0]
                var fences: [Geofence] = []
                for text in operands.dropFirst() {
                    do {
                        fences.append(try PipelineOptions.region(text))
                    } catch {
                        throw UsageError(error.message.replacing("--region", with: "each circle"))
                    }
                }
                // By identifier (a later circle replaces an earlier one of the same name): linear in
                // the circles, and one write for the whole batch.
                let keeper = RegionKeeper(store: store, monitor: name, app: app)
                var byIdentifier: [String: RegionKeeper.Kept] = [:]
                for kept in try keeper.load() { byIdentifier[kept.fence.identifier] = kept }
                for fence in fences {
                    byIdentifier[fence.identifier] = RegionKeeper.Kept(fence: fence, presence: .unknown, date: nil)
                }
                let conditions = Array(byIdentifier.values)
                try keeper.write(conditions)
                print("\(app)'s monitor \(terminalSafe(name)) now has \(conditions.count) condition(s)")
                return 0
            case "remove":
                guard operands.count >= 2 else { throw UsageError("monitor remove needs NAME and at least one ID") }
                let name = operands[0]
                let keeper = RegionKeeper(store: store, monitor: name, app: app)
                var conditions = try keeper.load()
                let known = Set(conditions.map(\.fence.identifier))
                let unknown = operands.dropFirst().filter { !known.contains($0) }
                guard unknown.isEmpty else {
                    standardError(
                        "gpsloc: \(app)'s monitor \(terminalSafe(name)) has no condition \(unknown.map(terminalSafe).joined(separator: ", ")) — `gpsloc monitor list \(name) --app \(app)` lists them\n"
                    )
                    return 1
                }
                let removed = Set(operands.dropFirst())
                conditions.removeAll { removed.contains($0.fence.identifier) }
                try keeper.write(conditions)
                print("\(app)'s monitor \(terminalSafe(name)) now has \(conditions.count) condition(s)")
                return 0
            default:
                throw UsageError("monitor needs list, add or remove, not \(action)")
            }
        } catch let error as UsageError {
            throw error
        } catch {
            standardError("gpsloc: \(error)\n")
            return 1
        }
    }

    private static func jsonLine(app: String, monitor: String, _ condition: RegionKeeper.Kept) -> String {
        struct Line: Encodable {
            var type = "condition"
            var app: String
            var monitor: String
            var identifier: String
            var latitude: Double
            var longitude: Double
            var radius: Double
            var state: String
        }
        let line = Line(
            app: app, monitor: monitor, identifier: condition.fence.identifier, latitude: condition.fence.latitude,
            longitude: condition.fence.longitude, radius: condition.fence.radius, state: condition.presence.rawValue)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(line)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
