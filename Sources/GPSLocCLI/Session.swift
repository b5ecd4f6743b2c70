import Foundation
import GPSLocation

/// Options shared by `watch` and `replay`.
struct PipelineOptions {
    var distanceFilter: CLLocationDistance = kCLDistanceFilterNone
    var desiredAccuracy: CLLocationAccuracy = kCLLocationAccuracyBest
    var appID = "gpsloc"
    var json = false
    var maximumAge: TimeInterval = 10
    /// Also record a GPX 1.1 track here.
    var gpx: String?
    /// Seconds without a usable fix before saying so; nil: three receiver cycles, at least 1 s.
    var staleAfter: TimeInterval?

    static let valued: Set<String> = ["distance-filter", "desired-accuracy", "app", "max-age", "gpx", "stale-after"]
    static let flags: Set<String> = ["json"]

    init() {}

    init(_ arguments: Arguments) throws(UsageError) {
        if let text = arguments["distance-filter"] {
            if text == "none" {
                distanceFilter = kCLDistanceFilterNone
            } else if let meters = Double(text), meters.isFinite, meters >= 0 {
                distanceFilter = meters
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
            desiredAccuracy = value
        }
        if let app = arguments["app"] {
            guard !app.isEmpty, app.allSatisfy({ $0.isLetter || $0.isNumber || "._-".contains($0) }) else {
                throw UsageError("--app must be letters, digits, '.', '_' or '-', not \(app)")
            }
            appID = app
        }
        if let age = try arguments.number("max-age", minimum: 0.1) { maximumAge = age }
        staleAfter = try arguments.number("stale-after", minimum: 0.1)
        json = arguments.has("json")
        gpx = arguments["gpx"]
    }

    static let accuracyNames: [String: CLLocationAccuracy] = [
        "bestForNavigation": kCLLocationAccuracyBestForNavigation, "best": kCLLocationAccuracyBest,
        "nearestTenMeters": kCLLocationAccuracyNearestTenMeters, "hundredMeters": kCLLocationAccuracyHundredMeters,
        "kilometer": kCLLocationAccuracyKilometer, "threeKilometers": kCLLocationAccuracyThreeKilometers,
    ]

    static let help = """
          --distance-filter M|none   deliver only after moving M metres from the last delivered location
                                     (or when accuracy at least halves); default none
          --desired-accuracy NAME    bestForNavigation, best (default), nearestTenMeters, hundredMeters,
                                     kilometer, threeKilometers — a hint, as on Apple: continuous updates
                                     still deliver every location, each labelled with its accuracyClass
          --app ID                   the application identity the authorization gate checks (default gpsloc)
          --max-age SECONDS          fixes older than this are stale and not delivered (default 10)
          --stale-after SECONDS      say so (once) when no usable fix has come for this long; the last
                                     location is kept (default: three receiver cycles, at least 1 s)
          --json                     NDJSON, one object per line (the default when stdout is not a terminal)
          --gpx FILE                 also record the delivered locations as a GPX 1.1 track (a valid
                                     file after every point, even if the process is killed)
        """
}

/// Runs fixes through the shared pipeline and reports every outcome to a sink, saying why
/// nothing is delivered whenever that is the case (once per change of reason), and when no
/// usable fix has come for a few receiver cycles (`FixStalenessMonitor`, once per stretch).
// @unchecked Sendable: all state is guarded by `lock` (fixes arrive on the source's queue,
// the staleness timer on its own).
final class Session: @unchecked Sendable {
    let sink: UpdateSink
    let options: PipelineOptions
    var delivered: Int { lock.withLock { deliveredCount } }
    var fixesSeen: Int { lock.withLock { fixCount } }
    private let lock = NSLock()
    private var pipeline: LocationPipeline
    private var deliveredCount = 0
    private var fixCount = 0
    private var lastReason: String?
    private var recordingNow: Date?
    private var staleness: FixStalenessMonitor
    /// With several receivers, the one whose fixes are shown (the best fix; see `ReceiverSelectionStage`).
    private var receivers = ReceiverSelectionStage()
    private var lastDelivered: Date?
    /// Live sessions only: fires once at the staleness deadline (no wakeups otherwise).
    private var timer: (any DispatchSourceTimer)?

    init(sink: UpdateSink, options: PipelineOptions, gate: any LocationGate) {
        self.sink = sink
        self.options = options
        pipeline = LocationPipeline(
            validity: ValidityStage(maximumAge: options.maximumAge), gate: gate,
            distanceFilter: DistanceFilterStage(distanceFilter: options.distanceFilter))
        staleness = FixStalenessMonitor(timeout: options.staleAfter)
    }

    deinit { timer?.cancel() }

    /// `now`: the wall clock live; nil in a replay, where the recording's own latest time is used.
    func handle(_ fix: Fix, now: Date?) {
        lock.withLock { handleLocked(fix, now: now) }
    }

    /// Live: the staleness deadline passed with no usable fix (by the wall clock).
    private func timerFired() {
        lock.withLock { checkStaleness(clock: Date()) }
    }

    /// Something else already told the user no location is coming (gpsd lost or silent).
    func reportedElsewhere() { lock.withLock { staleness.reportedElsewhere() } }

    /// gpsd activated or deactivated a receiver: a device line, and when the receiver went away,
    /// an error saying so (once; the staleness report is then not repeated).
    func device(_ event: DeviceEvent) {
        lock.withLock {
            sink.device(event)
            let followed = receivers.deviceChanged(event)
            // Another receiver that was not being shown going away changes nothing.
            guard !event.activated, followed || receivers.selected == nil else { return }
            staleness.reportedElsewhere()
            var message = "gpsd deactivated the receiver \(event.path) (unplugged, or removed with `gpsdctl remove`)"
            if let lastDelivered { message += "; the last location (\(iso8601Milliseconds(lastDelivered))) is kept" }
            sink.error(
                CLError(
                    .locationUnknown,
                    message: message + " — locations resume when it is back; check the cable and `gpsloc doctor`"))
        }
    }

    /// Staleness is news only to an app that may receive locations; a denied or undetermined
    /// one has already been told why it gets none.
    private func checkStaleness(clock: Date) {
        let status = pipeline.gate.authorizationStatus
        guard status == .authorizedAlways || status == .authorizedWhenInUse else { return }
        if let silence = staleness.check(clock: clock) {
            sink.error(
                CLError(
                    .locationUnknown,
                    message: FixStalenessMonitor.message(silence: silence, lastLocationTime: lastDelivered)))
        }
    }

    private func armTimer(_ seconds: TimeInterval) {
        if timer == nil {
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "gpsloc.staleness"))
            timer.setEventHandler { [weak self] in self?.timerFired() }
            timer.resume()
            self.timer = timer
        }
        timer?.schedule(deadline: .now() + seconds, repeating: .never, leeway: .milliseconds(50))
    }

    private func handleLocked(_ fix: Fix, now: Date?) {
        fixCount += 1
        let clock: Date
        if let now {
            clock = now
        } else {
            if let time = fix.time, time > (recordingNow ?? .distantPast) { recordingNow = time }
            clock = recordingNow ?? fix.time ?? Date(timeIntervalSince1970: 0)
        }
        staleness.heard(clock: clock)
        let usable = pipeline.validity.check(fix, now: clock) == nil
        receivers.lossTimeout = staleness.effectiveTimeout
        guard
            receivers.admits(
                device: fix.device, mode: fix.mode,
                horizontalAccuracy: usable ? AccuracyStage.horizontalAccuracy(fix.errors) ?? .infinity : nil,
                clock: clock)
        else { return }
        let outcome = pipeline.process(fix, now: clock, arrival: now != nil ? TimeOrderStage.monotonicNow() : nil)
        if let step = pipeline.timeOrder.resynchronized {
            sink.diagnostic(
                code: "timeResynchronized",
                message: String(format: "the receiver's clock stepped by %.1f s and kept to it; following it", step))
        }
        switch outcome {
        case .rejected(let rejection):
            if case .duplicate = rejection {} else { checkStaleness(clock: clock) }
        case .delivered, .withheld, .filtered:
            if let time = fix.time {
                staleness.fix(time: time, clock: clock)
                if now != nil { armTimer(staleness.effectiveTimeout) }
            }
        }
        switch outcome {
        case .delivered(let location):
            deliveredCount += 1
            lastReason = nil
            lastDelivered = location.timestamp
            sink.location(location)
        case .rejected(let rejection):
            if case .duplicate = rejection { return }
            let code = rejection.code
            if lastReason != code {
                lastReason = code
                sink.diagnostic(code: code, message: rejection.description)
            }
        case .withheld(let error):
            if let error { sink.error(error) }
        case .filtered:
            break
        }
    }
}
