// geofenced — a small service that embeds GPSLocation as a daemon would: locations with a
// distance filter and geofence events from a config file, as plain lines on stderr for the
// journal; readiness, watchdog and stopping through sd_notify; a clean stop on SIGTERM.
//
//   geofenced [--config FILE] [--distance-filter METRES]
//
// The config (default /etc/gpslocation/geofenced.conf) has one circle a line,
// `ID=LAT,LON,RADIUS` (metres), `#` comments. The app id is the executable's name, so its
// authorization is the administrator's policy (/etc/gpslocation/policy.json) or
// `gpsloc auth grant geofenced --always` for the user it runs as: no terminal, no prompt. gpsd
// comes from GPSLOCATION_GPSD (default 127.0.0.1:2947). The circles and their last states are
// kept by CLMonitor("geofenced") under $XDG_STATE_HOME (systemd's StateDirectory=), so a
// restarted service knows where it was.
import Foundation
import GPSLocation
import Synchronization

/// One line on stderr (the journal). A closed stderr loses it; it never stops the daemon
/// (FileHandle.write would trap).
func log(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
}

/// One `ID=LAT,LON,RADIUS` line.
func parseCircle(_ text: Substring, line: Int) throws -> (String, CLMonitor.CircularGeographicCondition) {
    let parts = text.split(separator: "=", maxSplits: 1)
    let numbers = parts.count == 2 ? parts[1].split(separator: ",").compactMap { Double($0) } : []
    guard parts.count == 2, !parts[0].isEmpty, numbers.count == 3 else {
        throw ConfigError(message: "line \(line): expected ID=LAT,LON,RADIUS (metres), not \(text)")
    }
    // The rule CLMonitor applies, at load: a radius of inf or 1e300 is refused here (exit 78),
    // not reported later while running.
    let center = CLLocationCoordinate2D(latitude: numbers[0], longitude: numbers[1])
    if let problem = CLCircularRegion(center: center, radius: numbers[2], identifier: String(parts[0])).problem() {
        throw ConfigError(message: "line \(line): \(problem)")
    }
    return (String(parts[0]), CLMonitor.CircularGeographicCondition(center: center, radius: numbers[2]))
}

struct ConfigError: Error { let message: String }

var configPath = "/etc/gpslocation/geofenced.conf"
var distanceFilter: CLLocationDistance = 25
/// Positions go to the journal only when asked (`--log-positions`): events are what a geofence
/// daemon reports; a journal of positions is a location history.
var logsPositions = false
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    switch argument {
    case "--config": configPath = arguments.next() ?? configPath
    case "--distance-filter": distanceFilter = arguments.next().flatMap(Double.init) ?? distanceFilter
    case "--log-positions": logsPositions = true
    default:
        log(
            "geofenced: unknown option \(argument) (usage: geofenced [--config FILE] [--distance-filter METRES] "
                + "[--log-positions])")
        exit(64)
    }
}

var circles: [(String, CLMonitor.CircularGeographicCondition)] = []
do {
    let text = try String(contentsOfFile: configPath, encoding: .utf8)
    for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let trimmed = line.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { continue }
        circles.append(try parseCircle(Substring(trimmed), line: index + 1))
    }
} catch let error as ConfigError {
    log("geofenced: \(configPath): \(error.message)")
    exit(78)  // EX_CONFIG: systemd does not restart on it (RestartPreventExitStatus=78)
} catch {
    log("geofenced: cannot read \(configPath): \(error.localizedDescription) — write one ID=LAT,LON,RADIUS a line")
    exit(78)
}

let notifier = SystemdNotifier()
let manager = CLLocationManager()
manager.distanceFilter = distanceFilter
manager.diagnosticsHandler = { log("note (\($0.code)): \($0.message)") }

// SIGTERM and SIGINT are caught before any work starts, on a queue of their own: the work runs
// on the main actor, and restoring 100,000 circles keeps it busy for seconds — a handler on the
// main queue would wait for that, and systemd would have to SIGKILL (found by the test that
// signals geofenced as soon as it says it is restoring its circles).
let running = Mutex<Task<Void, any Error>?>(nil)
let stopping = Mutex(false)
let signalQueue = DispatchQueue(label: "geofenced.signals")
var signalSources: [any DispatchSourceSignal] = []
// No `signal(number, SIG_IGN)` first (the macOS recipe): on Linux, libdispatch installs its
// handler a moment after `resume()`, and a signal ignored in that moment would be lost; left at
// the default action, it ends the daemon, which is what it asked for.
for number in [SIGTERM, SIGINT] {
    let source = DispatchSource.makeSignalSource(signal: number, queue: signalQueue)
    // Not the main actor's (as a closure here would be by default): it runs on `signalQueue`.
    source.setEventHandler { @Sendable in
        // A second signal (systemd and a shell may both send one) changes nothing.
        let first = stopping.withLock { stopping in
            defer { stopping = true }
            return !stopping
        }
        guard first else { return }
        notifier.send("STOPPING=1")
        log("geofenced: stopping (signal \(number))")
        running.withLock { $0?.cancel() }
        // A clean stop gets 0.15 s; a save still running then (100,000 circles) is cut short —
        // each save replaces the file whole, so what is on disk is the last complete save, if
        // there was one (said as it is: never a file that does not exist).
        signalQueue.asyncAfter(deadline: .now() + 0.15) { @Sendable in
            let kept = (try? MonitorStore().file(monitor: "geofenced", app: "geofenced")).map {
                FileManager.default.fileExists(atPath: $0.path)
            }
            log(
                kept == true
                    ? "geofenced: stopped before the last save finished; the state file of the last complete save is kept"
                    : "geofenced: stopped before any state was saved; the next start begins from the config")
            exit(0)
        }
    }
    source.resume()
    signalSources.append(source)
}

let positionsLogged = logsPositions
// The sequence, not the manager, goes into the task: a manager is not Sendable (as Apple's is not).
let locations = manager.locations()
let work = Task {
    // What `systemctl status geofenced` shows while a large set of circles comes up.
    notifier.send("STATUS=restoring the circles kept by the last run")
    let monitor = await CLMonitor("geofenced")
    monitor.diagnosticsHandler = { log("note (\($0.code)): \($0.message)") }
    // The config is the truth: circles no longer in it are dropped, the others (re)added with
    // the state they were last seen in.
    let wanted = Set(circles.map(\.0))
    for identifier in await monitor.identifiers where !wanted.contains(identifier) {
        try Task.checkCancellation()
        await monitor.remove(identifier)
    }
    // One batch, one save, each circle from the state it was last seen in (a SIGTERM while
    // loading ends it at once).
    notifier.send("STATUS=loading \(circles.count) circle(s) from \(configPath)")
    try await monitor.add(contentsOf: circles.map { (identifier: $0.0, condition: $0.1) })
    log("geofenced: monitoring \(circles.count) circle(s) from \(configPath); distance filter \(Int(distanceFilter)) m")
    notifier.send("STATUS=monitoring \(circles.count) circle(s), waiting for the first location")
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask {
            var ready = false
            for try await location in locations {
                if Task.isCancelled { break }
                if positionsLogged {
                    let accuracy =
                        location.horizontalAccuracy < CLLocationDistanceMax
                        ? String(format: "±%.0f m", location.horizontalAccuracy) : "accuracy unknown"
                    log(
                        String(
                            format: "location %.6f %.6f %@ at %@", location.coordinate.latitude,
                            location.coordinate.longitude, accuracy, "\(location.timestamp)"))
                }
                if !ready {
                    ready = true
                    notifier.send("READY=1\nSTATUS=following the receiver")
                }
            }
        }
        group.addTask {
            // Every circle's first state comes with the first location: with 100,000 circles a
            // line each would flood the journal. A first state of inside is told (it is news);
            // the rest are counted and told in one summary line once every circle has one.
            // Changes after that are a line each.
            var awaitingFirst = wanted
            var firstOutside = 0
            var firstOther = 0
            for try await event in await monitor.events {
                // Events already queued are not worked through after a SIGTERM.
                if Task.isCancelled { break }
                let line =
                    "region \(event.identifier) \(event.state) at \(event.date)\(event.accuracyLimited ? " (accuracy limited)" : "")"
                guard awaitingFirst.remove(event.identifier) != nil else {
                    log(line)
                    continue
                }
                switch event.state {
                case .satisfied: log(line)
                case .unsatisfied: firstOutside += 1
                default: firstOther += 1
                }
                if awaitingFirst.isEmpty {
                    log(
                        "geofenced: every circle has its first state: \(wanted.count - firstOutside - firstOther) inside "
                            + "(each told above), \(firstOutside) outside, \(firstOther) unknown")
                }
            }
        }
        try await group.next()
        group.cancelAll()
    }
}

// The watchdog: half the interval systemd asks for (WATCHDOG_USEC), from a timer of its own.
let watchdog: (any DispatchSourceTimer)? = notifier.watchdogMicroseconds.map { microseconds in
    let timer = DispatchSource.makeTimerSource(queue: .global())
    timer.schedule(deadline: .now(), repeating: .microseconds(microseconds / 2))
    timer.setEventHandler { notifier.send("WATCHDOG=1") }
    timer.resume()
    return timer
}

running.withLock { $0 = work }
Task {
    let result = await work.result
    watchdog?.cancel()
    if case .failure(let error) = result, !(error is CancellationError) {
        log("geofenced: \(error.localizedDescription)")
        exit(1)
    }
    exit(0)
}
dispatchMain()
