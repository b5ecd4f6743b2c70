import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords
import Synchronization

/// Options shared by `watch` and `replay`: they become the engine's configuration.
struct PipelineOptions {
    /// `--distance-filter`, `--desired-accuracy`, `--max-age`, `--stale-after`, `--min-interval`:
    /// the engine's own settings, with the engine's defaults (one place for each: the options
    /// keep no copy).
    var configuration = LocationEngine.Configuration()
    var appID = "gpsloc"
    var json = false
    /// Also record a GPX 1.1 track here.
    var gpx: String?
    /// `--region ID=LAT,LON,RADIUS`, repeatable.
    var regions: [Geofence] = []
    var visits = false
    /// Significant changes instead of every location.
    var significantChanges = false
    /// `-n/--count N`: stop after N locations, exit status 0 (gpspipe's -n).
    var count: Int?
    /// `-o/--output FILE`: what would go to stdout goes to FILE (gpspipe's -o).
    var output: String?
    /// `-u/--units`: the table's and text lines' units (NDJSON stays SI).
    var units = Units.metric

    static let valued: Set<String> = [
        "distance-filter", "desired-accuracy", "app", "max-age", "gpx", "stale-after", "min-interval", "region",
        "monitor", "count", "output", "units",
    ]
    static let flags: Set<String> = ["json", "visits", "significant-changes", "force"]
    /// `--force`: replace an existing regular file with the GPX track (never a link, never the
    /// recording being replayed).
    var force = false

    init() {}

    init(_ arguments: Arguments) throws(UsageError) {
        if let text = arguments["distance-filter"] {
            if text == "none" {
                configuration.distanceFilter = kCLDistanceFilterNone
            } else if let meters = Double(text), meters.isFinite, meters >= 0 {
                configuration.distanceFilter = meters
            } else {
                throw UsageError("--distance-filter must be a distance in metres or none, not \(text)")
            }
        }
        if let text = arguments["desired-accuracy"] {
            guard let value = Self.accuracyNames[text] else {
                throw UsageError(
                    "--desired-accuracy must be one of \(Self.accuracyNames.keys.sorted().joined(separator: ", ")), not \(text)"
                )
            }
            configuration.desiredAccuracy = value
        }
        if let app = arguments["app"] {
            guard !app.isEmpty, app.allSatisfy({ $0.isLetter || $0.isNumber || "._-".contains($0) }) else {
                throw UsageError("--app must be letters, digits, '.', '_' or '-', not \(app)")
            }
            appID = app
        }
        if let age = try arguments.number("max-age", minimum: 0.1, maximum: 1e12) {
            configuration.maximumLocationAge = age
        }
        configuration.staleFixTimeout = try arguments.number("stale-after", minimum: 0.1, maximum: 86_400)
        if let interval = try arguments.number("min-interval", minimum: 0, maximum: 86_400) {
            configuration.minimumUpdateInterval = interval
        }
        json = arguments.has("json")
        count = try arguments.integer("count", in: 1...Int(Int32.max))
        output = arguments["output"]
        if output == "-" { output = nil }
        units = try Units.resolve(arguments["units"])
        gpx = arguments["gpx"]
        visits = arguments.has("visits")
        force = arguments.has("force")
        if force && gpx == nil { throw UsageError("--force only applies to --gpx FILE") }
        significantChanges = arguments.has("significant-changes")
        for text in arguments.repeated["region"] ?? [] { regions.append(try Self.region(text)) }
        if let name = arguments["monitor"] {
            do {
                let stored = try RegionKeeper(store: MonitorStore(), monitor: name, app: appID).load()
                guard !stored.isEmpty else {
                    throw UsageError(
                        "--monitor \(name): \(appID) keeps no conditions under that name (`gpsloc monitor list --app \(appID)`)"
                    )
                }
                regions += stored.map(\.fence)
            } catch let error as UsageError {
                throw error
            } catch {
                throw UsageError("--monitor \(name): \(error)")
            }
        }
        let identifiers = regions.map(\.identifier)
        if Set(identifiers).count != identifiers.count {
            throw UsageError("--region identifiers must differ (each names one region)")
        }
    }

    /// `ID=LAT,LON,RADIUS`: an identifier, degrees, and metres (at most 100 km).
    static func region(_ text: String) throws(UsageError) -> Geofence {
        let usage = "--region must be ID=LAT,LON,RADIUS (e.g. depot=51.4545,-2.5879,150), not \(text)"
        guard let equals = text.lastIndex(of: "=") else { throw UsageError(usage) }
        let identifier = String(text[..<equals])
        let numbers = text[text.index(after: equals)...].split(separator: ",", omittingEmptySubsequences: false)
            .map { Double($0.trimmingWhitespace()) }
        guard !identifier.isEmpty, identifier.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value != 0x7F }),
            numbers.count == 3, let latitude = numbers[0], let longitude = numbers[1], let radius = numbers[2]
        else { throw UsageError(usage) }
        guard latitude.isFinite, abs(latitude) <= 90, longitude.isFinite, abs(longitude) <= 180 else {
            throw UsageError("--region \(identifier): latitude must be −90…90 and longitude −180…180")
        }
        guard radius.isFinite, radius > 0, radius <= 100_000 else {
            throw UsageError("--region \(identifier): the radius must be more than 0 and at most 100000 metres")
        }
        return Geofence(identifier: identifier, latitude: latitude, longitude: longitude, radius: radius)
    }

    static let accuracyNames: [String: CLLocationAccuracy] = [
        "bestForNavigation": kCLLocationAccuracyBestForNavigation, "best": kCLLocationAccuracyBest,
        "nearestTenMeters": kCLLocationAccuracyNearestTenMeters, "hundredMeters": kCLLocationAccuracyHundredMeters,
        "kilometer": kCLLocationAccuracyKilometer, "threeKilometers": kCLLocationAccuracyThreeKilometers,
    ]

    static let help = """
          --distance-filter M|none   deliver only after moving M metres from the last delivered location
                                     (or when accuracy at least halves); default none
          --min-interval SECONDS     at most one location per SECONDS of the locations' own time (both it
                                     and --distance-filter must pass); default 0, every location
          --desired-accuracy NAME    bestForNavigation, best (default), nearestTenMeters, hundredMeters,
                                     kilometer, threeKilometers — a hint, as on Apple: continuous updates
                                     still deliver every location, each labelled with its accuracyClass
          -a, --app ID               the application identity the authorization gate checks (default gpsloc)
          --max-age SECONDS          fixes older than this are stale and not delivered (default 10)
          --stale-after SECONDS      say so (once) when no usable fix has come for this long; the last
                                     location is kept (default: three receiver cycles, at least 1 s)
          -j, --json                 NDJSON, one object per line (the default when stdout is not a terminal)
          -n, --count N              stop after N locations, exit status 0 (gpspipe's -n)
          -o, --output FILE          write what would go to stdout to FILE instead (created mode 0600,
                                     replaced if it is a regular file; never a link), as gpspipe -o
          -u, --units NAME           metric (default), imperial or nautical for the table and text
                                     lines (else GPSD_UNITS, as cgps); NDJSON and GPX stay SI
          --gpx FILE                 also record the delivered locations as a GPX 1.1 track (a valid
                                     file after every point, even if the process is killed); FILE must
                                     not exist yet (or --force replaces a regular file — never a link,
                                     never the recording being replayed), and is created mode 0600;
                                     on a full disk it ends valid after its last whole point (exit 1);
                                     `--gpx -` writes the track to stdout instead of the locations
                                     (as gpxlogger does), closed when the command ends
          --region ID=LAT,LON,RADIUS
                                     monitor a circle (repeatable): a "region" line when its state is first
                                     known ("determined") and on every "enter" and "exit"; a crossing needs
                                     the location's whole accuracy circle across the boundary for 4 s (3 locations)
          --monitor NAME             also monitor the circles kept for --app's CLMonitor NAME (`gpsloc monitor`)
          --visits                   report stops of 3 minutes or more within 50 m ("visit" lines)
          --significant-changes      only significant changes: the first location, then one per 500 m
                                     moved and at least 5 minutes apart (instead of every location)
        """
}

/// Adapts the one driver (`EngineRunner`) for a gpsloc command: writes its outputs to the sink,
/// in order, and tells the command when the run is over. It decides nothing about locations
/// itself (which errors end a run is the runner's `CLError.endsUpdates`); it only keeps counts
/// for the command's closing summary.
final class EngineSession: Sendable {
    let sink: UpdateSink
    private let runner: EngineRunner
    private let counts: Locked<Counts>
    /// Fixes the source passed on (counted on the source's thread: an atomic, not the lock).
    private let fixes = FixCounter()
    final class FixCounter: Sendable {
        let value = Atomic<Int>(0)
    }
    /// Called once when the run is over (the source ended, or an error ended updates), with the
    /// error that ended it, if any.
    private let ended: @Sendable (CLError?) -> Void

    struct Counts {
        var delivered = 0
        var finished = false
        var countReached = false
        /// A one-shot request: the run is over when the engine has stopped.
        var oneShot = false
    }
    /// `--count`: the run ends after this many locations.
    private let countLimit: Int?

    var delivered: Int { counts.withLock { $0.delivered } }
    /// The run ended because `--count` locations were delivered (a success).
    var countReached: Bool { counts.withLock { $0.countReached } }
    var fixesSeen: Int { fixes.value.load(ordering: .relaxed) }

    /// - Parameter endingReasons: errors with these reasons end the command too (watch: gpsd
    ///   unreachable at start, an app that cannot be asked).
    /// The gate a session runs behind: an app's authorizer, followed for every change (live), or
    /// a fixed authorization (a replay's simulated gate) with its fuzzer.
    enum Gate {
        case following(LocationAuthorizer)
        case fixed(AuthorizationState, fuzzer: LocationFuzzer?)
    }

    init(
        sink: UpdateSink, options: PipelineOptions, gate: Gate, source: any LocationSource,
        endingReasons: Set<CLError.Reason> = [], cache: LastLocationCache? = .user,
        ended: @escaping @Sendable (CLError?) -> Void
    ) {
        self.sink = sink
        self.ended = ended
        countLimit = options.count
        counts = Locked(Counts())
        let fixes = fixes
        // The fixes it passes on are counted for the command's closing summary.
        let tapped = TappedLocationSource(source) { event in
            if case .fix = event { fixes.value.add(1, ordering: .relaxed) }
        }
        switch gate {
        case .following(let authorizer):
            runner = EngineRunner(
                source: tapped, configuration: options.configuration, authorizer: authorizer, lastLocationCache: cache,
                queue: nil)
        case .fixed(let authorization, let fuzzer):
            runner = EngineRunner(
                source: tapped, configuration: options.configuration, authorization: authorization, fuzzer: fuzzer,
                lastLocationCache: cache, queue: nil)
        }
        runner.endingReasons = endingReasons
        // A last location not saved when the run stops (a hung disk) is said as any diagnostic.
        runner.diagnosticsHandler = { [sink] diagnostic in
            sink.diagnostic(code: diagnostic.code, message: diagnostic.message)
        }
        runner.setConsumer { [weak self] output in self?.write(output) }
    }

    /// Starts continuous updates (or, with `--significant-changes`, only those) and the
    /// monitoring services asked for, then the source (unless the engine refuses at once).
    func start(_ options: PipelineOptions) {
        let now = Date()
        runner.drive { engine in
            var actions =
                options.significantChanges ? engine.startSignificantChanges() : engine.start(.continuous, now: now)
            for fence in options.regions { actions += engine.startMonitoring(fence, now: now) }
            if options.visits { actions += engine.startVisits() }
            // Headings are shown when the receiver reports them, every one, and nothing is said
            // when it reports none.
            engine.headingStage.saysWhenMissing = false
            engine.headingStage.filter = kCLHeadingFilterNone
            engine.headingStage.runsSource = false
            actions += engine.startHeading()
            return actions
        }
        // Refused at once (denied): the engine said why; there is nothing to run.
        if !runner.isRunning {
            runner.flush()
            end(nil)
        }
    }

    /// Starts the engine's one-shot request (`requestLocation()`), ending at `timeout` seconds.
    func startOneShot(timeout: TimeInterval) {
        counts.withLock { $0.oneShot = true }
        runner.drive { engine in
            engine.configuration.requestLocationTimeout = timeout
            return engine.start(.oneShot, now: Date())
        }
        if !runner.isRunning {
            runner.flush()
            end(nil)
        }
    }

    /// Stops the source and the timers.
    func stop() { runner.stop() }

    /// Writes one output (on the runner's queue, in order).
    private func write(_ output: EngineRunner.Output) {
        // After the error that ended the run nothing more is shown: a "reconnecting" note behind
        // an error gpsloc exits on would say the opposite of what happens.
        // One lock per output: whether the run is over, how many of a batch to show, whether
        // that reaches --count, and whether this is a one-shot.
        let locationCount = if case .locations(let locations) = output { locations.count } else { 0 }
        let (finished, shown, reached, oneShot) = counts.withLock { counts -> (Bool, Int, Bool, Bool) in
            if counts.finished { return (true, 0, false, false) }
            // With --count, no more than N are shown, and the Nth ends the run.
            let room = countLimit.map { max(0, $0 - counts.delivered) } ?? locationCount
            let shown = min(room, locationCount)
            counts.delivered += shown
            if let countLimit, counts.delivered >= countLimit { counts.countReached = true }
            return (false, shown, counts.countReached, counts.oneShot)
        }
        if finished { return }
        switch output {
        case .locations(let locations):
            for location in locations.prefix(shown) { sink.location(location) }
            if reached {
                end(nil)
                return
            }
        case .failure(let error):
            if !isNormalEnd(error) { sink.error(error) }
            if error.endsUpdates { end(isNormalEnd(error) ? nil : error) }
        case .diagnostic(let diagnostic): sink.diagnostic(code: diagnostic.code, message: diagnostic.message)
        case .receiver(let device): sink.device(device)
        case .sky(let sky): sink.sky(sky)
        case .region(let event): sink.region(event)
        case .visit(let visit): sink.visit(visit)
        case .heading(let heading): sink.heading(heading)
        case .paused(let paused):
            // gpsloc never asks for pausing; an engine configured for it says so.
            sink.diagnostic(
                code: paused ? "paused" : "resumed",
                message: paused ? "updates paused: the receiver has stayed put" : "updates resumed: the receiver moved")
        case .sourceEnded: end(nil)
        case .adapter: break
        }
        // The engine stopped the request (settled with a location or failed): the run is over —
        // judged at an output that can settle it, not at a note of the same step written before
        // the location (the location would then be dropped: `gpsloc watch --once` exited 1).
        switch output {
        case .diagnostic, .receiver, .sky, .heading, .paused, .adapter: return
        default: if oneShot && !runner.isRunning { end(nil) }
        }
    }

    /// Calls `ended` the first time only.
    private func end(_ error: CLError?) {
        let first = counts.withLock { state in
            defer { state.finished = true }
            return !state.finished
        }
        if first { ended(error) }
    }

    /// The end of a recording is how a replay finishes, not an error to print.
    private func isNormalEnd(_ error: CLError) -> Bool {
        !runner.source.isLive && (error.reason == .sourceEnded || error.reason == .gpsdLost)
    }
}
