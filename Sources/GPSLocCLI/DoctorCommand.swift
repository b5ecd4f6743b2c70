import CServeHTTP
import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// `gpsloc doctor`: what is wrong with this machine's GPS setup, one line a check, each with
/// the command that fixes it. A first version: gpsd, its reachability and devices, receivers,
/// permissions, and the app's authorization.
enum DoctorCommand {
    static let help = """
        usage: gpsloc doctor [HOST[:PORT]] [--app ID] [--json]

        Checks, in order: gpsd installed; gpsd reachable; devices gpsd knows and a recent fix;
        receivers on this machine (/dev/gps*, /dev/ttyACM*, /dev/ttyUSB*, /dev/gnss*); their
        permissions; our udev rule and gpsd's USBAUTO; the app's location authorization. Each line is ok, warn or fail, with a fix.
        With --json (-j), the same checks as NDJSON lines, {"type":"check","level":"ok","message":"…"}.
        Exit status 0 when nothing failed, 1 otherwise. gpsd: HOST[:PORT] as gpsd's clients take it (`cgps 10.0.0.7:2947`), else --host/--port, else $GPSLOCATION_GPSD, else 127.0.0.1:2947.
        """

    static func run(_ argv: [String]) throws(UsageError) -> Int32 {
        let arguments = try Arguments(argv, valued: ["host", "port", "app"], flags: ["json"])
        if arguments.has("help") {
            print(HelpText.wrapped(help))
            return 0
        }
        let endpoint = try arguments.gpsdEndpoint("doctor")
        let app = arguments["app"] ?? "gpsloc"
        var failed = false
        let json = arguments.has("json")
        func report(_ level: String, _ message: String) {
            if level == "fail" { failed = true }
            if json {
                var writer = NDJSONWriter()
                writer.check(level: level, message: message)
                standardOutput(writer.buffer)
                return
            }
            // Device paths, driver names and messages come from gpsd: made terminal-safe.
            print("\(level.paddedRight(to: 5)) \(terminalSafe(message))")
        }

        // Which mode apps are in: through gpslocd (it alone reads gpsd) or reading gpsd directly.
        if let broker = BrokerProtocol.socketPath() {
            let link = BrokerLink(path: broker, app: app, onMessage: { _ in }, onState: { _ in })
            do {
                let welcome = try link.startAndWait(timeout: 5)
                report(
                    "ok",
                    "broker mode: gpslocd answers at \(broker) — apps get locations through it (\(app) is uid "
                        + "\(welcome.uid)'s \(welcome.app): \(welcome.decision.status.name))")
            } catch {
                report("fail", "broker mode: \(error.description)")
            }
            link.close()
        } else {
            report(
                "ok",
                "direct mode: "
                    + (ProcessInfo.processInfo.environment["GPSLOCATION_BROKER"].map { !$0.isEmpty } == true
                        ? "GPSLOCATION_BROKER=none"
                        : "no gpslocd (no \(BrokerProtocol.defaultSocketPath), GPSLOCATION_BROKER unset)")
                    + " — apps read gpsd themselves and their decisions are their user's files (docs/broker.md)")
        }

        let installed = FileManager.default.isExecutableFile(atPath: "/usr/sbin/gpsd")
        if installed {
            report("ok", "gpsd is installed (/usr/sbin/gpsd)")
        } else {
            report("fail", "gpsd is not installed — `sudo apt-get install gpsd gpsd-clients`")
        }

        // gpsd reachable, and what it says within two of the receiver's cycles.
        let outcome = probe(endpoint)
        switch outcome {
        case .unreachable(let error):
            report("fail", error.description)
        case .reached(let devices, let fix, let waited):
            report("ok", "gpsd answers at \(endpoint)")
            if devices.isEmpty {
                report(
                    "fail",
                    "gpsd knows no receiver — plug one in; with USB hotplug set USBAUTO=\"true\" in /etc/default/gpsd, "
                        + "or add it by hand: `sudo gpsdctl add /dev/ttyACM0`")
            } else {
                for device in devices {
                    report("ok", "gpsd reads \(device.path)\(device.driver.map { " (\($0))" } ?? "")")
                }
            }
            if let fix {
                report(
                    fix.mode >= .twoDimensional ? "ok" : "warn",
                    fix.mode >= .twoDimensional
                        ? "a \(fix.mode) fix was reported just now"
                        : "the receiver reports no fix yet — give it a clear view of the sky; a cold start can take minutes"
                )
                // The rule watch and every app follow (`ReceiverClock`): the system clock never
                // refuses a fix, and a disagreement is said in the same words.
                let now = Date()
                if fix.mode >= .twoDimensional, let time = fix.time,
                    let offset = ReceiverClock.offset(of: time, now: now)
                {
                    let simulated = GPSFakeDetection.feeds(endpoint)
                    report(
                        simulated ? "ok" : "warn",
                        LocationDiagnostic.Facts.systemClockOffset(
                            offset: offset, fixTime: time, now: now, simulated: simulated
                        ).words)
                }
            } else if !devices.isEmpty {
                report(
                    "warn",
                    "no position report within \(fixedDecimal(waited, decimals: 1)) s (two of the receiver's cycles) — "
                        + "the receiver may be starting; check `gpspipe -w -n 10`")
            }
        }

        // Receivers on this machine.
        let candidates = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? [])
            .filter { $0.hasPrefix("gps") || $0.hasPrefix("ttyACM") || $0.hasPrefix("ttyUSB") || $0.hasPrefix("gnss") }
            .sorted().map { "/dev/" + $0 }
        if candidates.isEmpty {
            report(
                "warn",
                "no receiver device on this machine (/dev/gps*, /dev/ttyACM*, /dev/ttyUSB*, /dev/gnss*) — plug in a USB GPS"
            )
        } else {
            for path in candidates {
                if access(path, R_OK) == 0 {
                    report("ok", "\(path) is present and readable")
                } else {
                    report(
                        "warn",
                        "\(path) is not readable by you (gpsd reads it as user gpsd, so this only matters for direct use) — `sudo usermod -aG dialout $USER`"
                    )
                }
            }
        }

        // Our udev rule (optional: gpsd's own rules already hot-plug most receivers).
        let name = "61-gpslocation-gnss.rules"
        // udev reads /etc, /run and /usr/lib (and /lib); scripts/install.sh puts the rule in
        // PREFIX/lib/udev/rules.d and, for other prefixes, links it from /etc.
        let read = ["/etc/udev/rules.d", "/run/udev/rules.d", "/usr/lib/udev/rules.d", "/lib/udev/rules.d"]
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        let prefixed = executable.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("lib/udev/rules.d").path
        if let folder = read.first(where: { FileManager.default.fileExists(atPath: "\($0)/\(name)") }) {
            report("ok", "the GPSLocation udev rule is installed (\(folder)/\(name))")
        } else if let folder = [prefixed, "/usr/local/lib/udev/rules.d"].first(where: {
            FileManager.default.fileExists(atPath: "\($0)/\(name)")
        }) {
            report(
                "warn",
                "the GPSLocation udev rule is in \(folder), which udev does not read — "
                    + "`sudo ln -s \(folder)/\(name) /etc/udev/rules.d/ && sudo udevadm control --reload`")
        } else {
            report(
                "warn",
                "the GPSLocation udev rule is not installed (optional; it adds /dev/gpslocation-gnssN) — "
                    + "`scripts/install.sh` installs it, or `sudo install -m 644 udev/61-gpslocation-gnss.rules /etc/udev/rules.d/ && sudo udevadm control --reload && sudo udevadm trigger`"
            )
        }
        if let defaults = try? String(contentsOfFile: "/etc/default/gpsd", encoding: .utf8),
            !defaults.split(separator: "\n").contains(where: {
                $0.replacing(" ", with: "").hasPrefix("USBAUTO=\"true\"")
            })
        {
            report(
                "warn",
                "gpsd does not take USB receivers from udev — set USBAUTO=\"true\" in /etc/default/gpsd, then `sudo systemctl restart gpsd`"
            )
        }

        // gpsloc serve's libraries, opened only when it starts: said here before anyone needs them.
        if let problem = gpsloc_http_load() {
            report(
                "warn",
                "gpsloc serve cannot run without libmicrohttpd (\(String(cString: problem))) — `sudo apt-get install libmicrohttpd12`"
            )
        } else if !FileManager.default.fileExists(atPath: ServeServer.leafletDefault + "/leaflet.js") {
            report(
                "warn",
                "gpsloc serve's page draws no map without Leaflet (\(ServeServer.leafletDefault)) — `sudo apt-get install libjs-leaflet`"
            )
        } else {
            report("ok", "gpsloc serve can run: libmicrohttpd and Leaflet are installed")
        }

        // Authorization.
        // What applies: the administrator's policy first, then the user's decision.
        let store = DecisionStore()
        let policy = LocationPolicy.effective()
        if let problem = policy.problem { report("fail", "the location policy: \(problem)") }
        if !policy.locationServicesEnabled {
            report("fail", "location services are off for everyone in the policy (\(LocationPolicy.defaultPath))")
        }
        if let decision = policy.decision(for: app) {
            let level = decision.status.isAuthorized ? "ok" : "warn"
            var text = "\(app) is \(decision.status.name)"
            if level == "ok" { text += " with \(decision.accuracy.name) accuracy" }
            text += " by the administrator's policy (\(LocationPolicy.defaultPath)); the user cannot change it"
            report(level, text)
        } else if let decision = store.decision(for: app) {
            let level = decision.status.isAuthorized ? "ok" : "warn"
            report(
                level,
                "\(app) is \(decision.status.name) with \(decision.accuracy.name) accuracy (\(store.fileURL.path))")
        } else {
            report("warn", "\(app) has no location authorization yet — `gpsloc auth grant \(app) --when-in-use`")
        }
        if let problem = store.problem { report("fail", problem.description) }
        return failed ? 1 : 0
    }

    enum Probe {
        case unreachable(GPSDError)
        case reached(devices: [DeviceEvent], fix: Fix?, waited: Double)
    }

    /// Connects, watches for two of the receiver's cycles (2–10 s, less once a position came),
    /// and reports what gpsd said.
    static func probe(_ endpoint: GPSDEndpoint) -> Probe {
        let source = GPSDConnection(endpoint: endpoint, noDataTimeout: nil)
        let collected = Collected()
        let done = DispatchSemaphore(value: 0)
        source.start { event in
            switch event {
            case .failed(let error):
                collected.set { $0.error = error }
                done.signal()
            case .device(let device) where device.activated:
                collected.set { state in
                    state.devices.removeAll { $0.path == device.path }
                    state.devices.append(device)
                }
            case .devices(let devices):
                collected.set { state in
                    for device in devices {
                        state.devices.removeAll { $0.path == device.path }
                        state.devices.append(device)
                    }
                }
            case .fix(let fix):
                collected.set { $0.fix = fix }
            default:
                break
            }
        }
        // At least two of the receiver's cycles (gpsd's DEVICE `cycle`; 1 s when it gives none),
        // and at least 2 s, at most 10: a receiver with a 1.8 s cycle is given 3.6 s before
        // "no position report" is said. A position ends the wait at once.
        let started = DispatchTime.now()
        var window = 2.0
        while true {
            let state = collected.value
            if state.error != nil || (state.fix?.hasPosition ?? false) { break }
            window = waitWindow(cycles: state.devices.compactMap(\.cycle))
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
            if elapsed >= window { break }
            _ = done.wait(timeout: .now() + min(0.1, window - elapsed))
        }
        source.stop()
        let state = collected.value
        if let error = state.error, error.code == .unreachable { return .unreachable(error) }
        return .reached(devices: state.devices, fix: state.fix, waited: window)
    }

    /// How long doctor waits for a position: two of the slowest receiver's cycles (1 s when gpsd
    /// gives none), at least 2 s, at most 10 s.
    static func waitWindow(cycles: [Double]) -> Double { min(10, max(2, 2 * (cycles.max() ?? 1))) }

    final class Collected: Sendable {
        struct State {
            var devices: [DeviceEvent] = []
            var fix: Fix?
            var error: GPSDError?
        }
        private let state = Locked(State())
        func set(_ body: (inout State) -> Void) { state.withLock { body(&$0) } }
        var value: State { state.withLock { $0 } }
    }
}
