import FoundationEssentials
import GNSSCore

/// Every rule about which location an app receives, in one place: a pure state machine.
///
/// `CLLocationManager`, `CLLocationUpdate.liveUpdates()` and every `gpsloc` command that shows
/// locations feed it the same events and execute the `Action`s it returns; none of them decides
/// anything about locations itself. It holds no lock, reads no clock and does no I/O: "now" comes
/// with every call, and timers are actions for the driver to arm, fed back with `timerFired`.
///
/// The stages, in order, for every fix:
/// validity (`ValidityStage`) → accuracy (`AccuracyStage`) → receiver choice
/// (`ReceiverSelectionStage`) → time order (`TimeOrderStage`) → staleness
/// (`FixStalenessMonitor`) → authorization gate (`AuthorizationGate`) → distance filter
/// (`DeliveryFilter`), or, for `requestLocation()`, the desired-accuracy check.
///
/// The monitoring services — regions (`RegionMonitorStage`), visits (`VisitStage`) and
/// significant changes (`SignificantChangeStage`) — run on the same locations, after the gate
/// and before the distance filter: they see exactly what the app may see, never a raw fix. The
/// source runs while location updates or any monitoring service runs (`isRunning`).
///
/// **Clocks.** With `isLive` (gpsd) "now" is the wall clock the driver passes and `uptime` a
/// monotonic clock for the time-jump check. A replay's clock is the recording's own: the time of
/// its latest report (`recordingNow`); the `now` passed in is then ignored.
///
/// **Telling the app.** A fix that is not used is a `diagnose` action, once per change of
/// reason (and the same reason at most once a minute); a stretch without usable fixes is one
/// `fail(locationUnknown)` (`FixStalenessMonitor`); a refused authorization is one `fail`
/// per state. Errors carry a `CLError.Reason`.
public struct LocationEngine: Sendable {
    /// The engine's timers; the driver arms and cancels them as told.
    public enum Timer: Hashable, Sendable {
        /// No usable fix yet: is the source stale? (live sources only)
        case staleness
        /// `requestLocation()`'s timeout.
        case requestLocation
        /// Regions are monitored: has no location come for `RegionMonitorStage.gapTimeout`? (live)
        case monitoringGap
        /// The driver's own: have outputs waited too long for a delivery thread that does not
        /// run (`EngineRunner.stallWarning`)? Never armed by the engine.
        case deliveryStall
    }

    /// What location updates the app asked for.
    public enum Mode: Sendable, Equatable {
        /// None.
        case stopped
        /// `startUpdatingLocation()`.
        case continuous
        /// `requestLocation()`: one location meeting `desiredAccuracy`, or the best by the timeout.
        case oneShot
    }

    /// The settings; changing them applies at once.
    public var configuration: Configuration {
        didSet { applyConfiguration() }
    }
    /// True when the clock is the wall clock (gpsd); false for replays and lists.
    let isLive: Bool
    private(set) var mode: Mode = .stopped
    /// The last location delivered (gated: reduced for a reduced-accuracy app).
    public internal(set) var lastDelivered: LocationValue?
    /// The followed receiver's device path, once one has been chosen.
    public var followedReceiver: String? { receivers.selected }
    /// True while running with no usable fix for the staleness timeout.
    public var isStale: Bool { staleness.isStale }
    var authorization: AuthorizationState { gate.state }
    /// True while the source must run: location updates or a monitoring service.
    var isRunning: Bool {
        mode != .stopped || isMonitoring || (headingStage.active && headingStage.runsSource)
    }
    /// True while regions, visits or significant changes are monitored (and not refused).
    var isMonitoring: Bool {
        !monitoringSuspended && (!regions.isEmpty || visits != nil || significantChanges != nil)
    }
    /// The state of the monitored region `identifier` (nil: not monitored).
    public func regionState(_ identifier: String) -> RegionPresence? { regions.state(of: identifier) }
    /// The monitored region `identifier`, if it is.
    public func region(_ identifier: String) -> Geofence? { regions.fence(identifier) }

    var validity = ValidityStage()
    let accuracy = AccuracyStage()
    /// What every location says of its source (simulated or a receiver).
    let sourceInformation: LocationOrigin?
    var receivers = ReceiverSelectionStage()
    var timeOrder = TimeOrderStage()
    /// Live freshness: the receiver's clock, advanced by the monotonic clock.
    var receiverClock = ReceiverClock()
    /// The system clock's disagreement with the receiver's has been reported.
    var clockOffsetReported = false
    var staleness = FixStalenessMonitor()
    // Internal, not private, where LocationEngine+Monitoring.swift uses them.
    var gate: AuthorizationGate
    var filter = DeliveryFilter()
    var regions = RegionMonitorStage()
    var visits: VisitStage?
    var significantChanges: SignificantChangeStage?
    /// Monitoring was refused (denied, restricted): it resumes when a service is started again.
    var monitoringSuspended = false
    /// When the armed monitoring-gap timer fires (the source's clock), or nil.
    var gapDeadline: Date?
    /// `requestLocation()`'s best location so far.
    var oneShotBest: LocationValue?
    var oneShotLatest: LocationValue?
    /// A usable fix reached the gate and was not delivered (not authorized now).
    var fixesHeld = false
    /// The replay clock: the time of the latest report that carried one. It follows the receiver
    /// back when its clock restarts (a receiver whose clock ran ahead before its first fix and was
    /// then set from the satellites): the fixes after the restart are the recording's present, not
    /// stale. A single fix older than what was delivered is still dropped, by `TimeOrderStage`.
    var recordingNow: Date?
    /// When the armed staleness timer fires (wall clock), or nil when none is armed.
    var stalenessDeadline: Date?
    /// The code of the last rejection reported since the last delivery.
    var lastRejection: String?
    /// Why the last fix since the last delivery was not used (the staleness report names it:
    /// fixes that arrive and are refused are not a receiver "still searching").
    var lastRejectionReason: FixRejection?
    /// Receivers gpsd said are deactivated and has not reactivated since.
    private var deactivated: Set<String> = []
    /// Diagnostics that would repeat are said at most once a minute.
    var repeats = RepeatLimiter()
    var dilutionFallback = DilutionFallbackStage()
    /// The reports of each receiver epoch, of which the app gets the last, complete one
    /// (`EpochStage`, #49): both paths, the same rule.
    var epochs = EpochStage()
    /// A complete epoch held for the receiver's own estimate (GST), which may come after its fix
    /// (gpsd 3.22 sends the TPV as soon as the cycle's reports are in, and puts no GST into it):
    /// once a receiver has been seen doing that (`estimateFollows`), each of its fixes is held
    /// for the GST of its time, never longer than the next report. The NMEA engine applies the
    /// same estimate to the same cycle, so gpsd's path and the NMEA path deliver the same
    /// location. The one place a fix waits for its estimate.
    /// (A struct, not a tuple: a tuple's copies went through the runtime's generic value
    /// witnesses, for every fix live.)
    var held: EpochStage.Report?
    /// The receiver's latest error estimate, and whether its GST comes after its fix.
    var latestEstimate: ReceiverErrorEstimate?
    var estimateFollows = false
    /// The time of the last fix the source gave (for `estimateFollows`).
    var lastSourceFixTime: Date?
    /// Automatic pausing: where the device settled, and whether updates are paused.
    var stationary = StationaryDetector()
    /// How long the device had stayed put at the last location (nil: it moved).
    var stillFor: TimeInterval?
    /// Heading updates; where the latest fix with a position was, and the magnetic variation
    /// it reported (for a heading's declination). Only these, not the whole fix: it is kept
    /// for every fix.
    public var headingStage = HeadingStage()
    var lastPosition: (latitude: Double, longitude: Double, magneticVariation: Double?)?
    var pendingHeading: HeadingReading?
    /// The source's last problem since its last fix (a one-shot that times out names it).
    var lastSourceProblem: CLError?
    var paused = false
    /// `pausesWhileStationary`: this stop's stationary location has been delivered.
    var stationaryDelivered = false

    /// An engine, stopped: `isLive` when the source's clock is the wall clock (gpsd),
    /// `sourceInformation` for the locations it makes, `fuzzer` for reduced accuracy.
    public init(
        configuration: Configuration = Configuration(), authorization: AuthorizationState, isLive: Bool,
        sourceInformation: LocationOrigin? = nil, fuzzer: LocationFuzzer? = nil
    ) {
        self.configuration = configuration
        self.isLive = isLive
        self.sourceInformation = sourceInformation
        var fuzzer = fuzzer ?? LocationFuzzer(store: nil, appID: authorization.appID, live: isLive)
        fuzzer.setLive(isLive)
        gate = AuthorizationGate(state: authorization, fuzzer: fuzzer)
        applyConfiguration()
    }

    private mutating func applyConfiguration() {
        validity.maximumAge = configuration.maximumLocationAge
        gate.reducedRequested = configuration.desiredAccuracy == kCLLocationAccuracyReduced
        staleness.timeout = configuration.staleFixTimeout
        receivers.selection = configuration.receiverSelection
        timeOrder.jumpTolerance = configuration.timeJumpTolerance
    }

    /// The monotonic clock (seconds) drivers pass as `uptime` for live sources.
    static func uptime() -> Double { TimeOrderStage.monotonicNow() }

    /// The source's clock at `now`: live, the receiver's clock (`ReceiverClock`) when `uptime`
    /// is given and a fix has come, else the wall clock; the recording's latest time in a replay.
    public func clock(now: Date, uptime: Double? = nil) -> Date? {
        guard isLive else { return recordingNow }
        return uptime.flatMap(receiverClock.now(arrival:)) ?? now
    }

    // MARK: Lifecycle

    /// Starts continuous updates or a one-shot request. Returns what to do; when access is
    /// denied or restricted the engine stays stopped (check `mode`) and says so once.
    public mutating func start(_ newMode: Mode, now: Date) -> [Action] {
        precondition(newMode != .stopped, "use stop()")
        var actions: [Action] = []
        if let refusal = gate.state.refusal {
            if let error = gate.explain(refusal) { actions.append(.fail(error)) }
            if gate.state.status.refusesAll { return actions }
        }
        monitoringSuspended = false
        if mode == .oneShot && newMode == .continuous { actions.append(.cancel(.requestLocation)) }
        if paused && newMode == .continuous {
            // Apple: after a pause the app starts updates again.
            paused = false
            stationary.reset()
            stillFor = nil
            actions.append(.paused(false))
        }
        if mode == newMode || (mode == .continuous && newMode == .oneShot) { return actions }
        mode = newMode
        switch newMode {
        case .continuous where isLive:
            // Live: the wait for the first usable fix starts now, even if nothing arrives.
            staleness.heard(clock: now)
            actions.append(contentsOf: armStaleness(from: now, now: now))
        case .oneShot:
            oneShotBest = nil
            oneShotLatest = nil
            fixesHeld = false
            actions.append(.arm(.requestLocation, after: configuration.requestLocationTimeout))
        default:
            break
        }
        return actions
    }

    /// Stops location updates and forgets what they learned (the next start delivers at once).
    /// Monitoring services go on; when none runs, the source may stop (`isRunning`).
    mutating func stop() -> [Action] {
        guard mode != .stopped else { return [] }
        mode = .stopped
        oneShotBest = nil
        held = nil
        epochs.dropOpen()
        paused = false
        stationary.reset()
        stillFor = nil
        stationaryDelivered = false
        filter.reset()
        lastRejection = nil
        lastRejectionReason = nil
        stalenessDeadline = nil
        if !isMonitoring { resetShared() }
        return [.cancel(.staleness), .cancel(.requestLocation)]
    }

    /// Stops everything: location updates and the monitoring services (which stay registered
    /// and resume when one is started again).
    private mutating func stopAll() -> [Action] {
        var actions = stop()
        headingStage.stop()
        if isMonitoring {
            monitoringSuspended = true
            resetShared()
            actions.append(.cancel(.monitoringGap))
        }
        return actions
    }

    /// What the stages shared by updates and monitoring learned about the source.
    mutating func resetShared() {
        timeOrder.reset()
        receiverClock = ReceiverClock()
        staleness.reset()
        receivers.reset()
        recordingNow = nil
        lastSourceFixTime = nil
        deactivated = []
        regions.resetClock()
        visits?.reset()
        gapDeadline = nil
    }

    /// Something was told to the app about authorization already (the manager's request
    /// errors): the gate does not repeat it for the current state.
    public mutating func authorizationExplained() { gate.explained = true }

    /// The app's authorization changed (a grant, a revocation, a policy edit, in-use).
    public mutating func setAuthorization(_ state: AuthorizationState, now: Date) -> [Action] {
        guard state != gate.state else { return [] }
        gate.state = state
        guard isRunning, let refusal = state.refusal else { return [] }
        var actions: [Action] = []
        if let error = gate.explain(refusal) { actions.append(.fail(error)) }
        if state.status.refusesAll {
            actions.append(contentsOf: stopAll())
            actions.append(.stopSource)
        }
        return actions
    }

    // MARK: Events

    /// One event from the source. `now`: the wall clock; `uptime`: a monotonic clock in
    /// seconds (live sources; it guards against receivers whose dates jump).
    public mutating func handle(_ event: consuming LocationSourceEvent, now: Date, uptime: Double? = nil) -> [Action] {
        guard isRunning else { return [] }
        // An open epoch, and a fix held for its estimate, wait no longer than the next report of
        // any other kind than the receiver's cycle gives (a receiver unplugged right after its
        // fix still has that fix delivered, first).
        if held != nil || !epochs.isEmpty {
            switch event {
            case .fix, .errorEstimate, .sky, .heading: break
            default: return releaseHeld(now: now) + handleEvent(event, now: now, uptime: uptime)
            }
        }
        return handleEvent(event, now: now, uptime: uptime)
    }

    private mutating func handleEvent(_ event: consuming LocationSourceEvent, now: Date, uptime: Double?) -> [Action] {
        switch consume event {
        case .fix(let fix):
            return handleFix(fix, now: now, uptime: uptime)
        case .errorEstimate(let estimate):
            return handleEstimate(estimate, now: now)
        case .heading(let reading):
            // A replay's clock is known only from a fix: a heading before the first one waits for
            // it (a receiver's first cycle), rather than carrying today's date.
            // (The latest report's time: its epoch may still be open.)
            guard isLive || lastSourceFixTime != nil else {
                pendingHeading = reading
                return []
            }
            return headingActions(reading, time: isLive ? now : lastSourceFixTime ?? now)
        case .sky(let sky):
            let checked = PhysicalRanges.check(sky)
            dilutionFallback.remember(checked)
            return [.sky(checked)]
        case .notice(let diagnostic):
            return [.emit(.diagnostic(diagnostic))]
        case .device(let device):
            // gpsd may say a receiver is gone twice (gpsfake's end does): once is news.
            if !device.activated && deactivated.contains(device.path) { return [] }
            if device.activated { deactivated.remove(device.path) } else { deactivated.insert(device.path) }
            var actions: [Action] = [.receiver(device)]
            let lost = receivers.deviceChanged(device)
            guard !device.activated, lost || receivers.selected == nil else { return actions }
            staleness.reportedElsewhere()
            // Not live: a recording played through gpsd (gpsfake), whose receiver goes when the
            // recording ends — no cable to check.
            let facts = CLError.Facts.receiverDeactivated(
                path: device.path, live: isLive, lastLocation: isLive ? lastDelivered?.timestamp : nil)
            actions.append(.fail(CLError(.locationUnknown, facts, reason: .receiverDeactivated)))
            return actions
        case .problem(let error, let terminal):
            if error.code == .locationUnknown { staleness.reportedElsewhere() }
            lastSourceProblem = error
            guard terminal else { return [.fail(error)] }
            var actions = releaseHeld(now: now)
            if mode == .oneShot {
                actions.append(
                    settle(
                        orFail: CLError(
                            .locationUnknown, .undetermined(cause: error.facts), reason: error.reason ?? .sourceEnded,
                            underlyingError: error.underlyingError)))
            } else {
                actions.append(.fail(error))
            }
            actions.append(contentsOf: stopAll())
            actions.append(.stopSource)
            actions.append(.sourceEnded)
            return actions
        }
    }

    /// A timer the engine armed has fired.
    mutating func timerFired(_ timer: Timer, now: Date) -> [Action] {
        switch timer {
        case .deliveryStall:
            return []
        case .staleness:
            stalenessDeadline = nil
            guard mode == .continuous, isLive else { return [] }
            // The deadline moves with every fix; the timer is re-armed only when it fires early.
            if let last = staleness.lastFixClock {
                let due = last.addingTimeInterval(staleness.effectiveTimeout)
                if due > now { return armStaleness(from: last, now: now) }
            }
            // A receiver that went quiet after one epoch: that epoch, still open (its cycle not
            // learnt), goes now, before the silence is judged.
            let released = releaseHeld(now: now)
            if !released.isEmpty, let last = staleness.lastFixClock,
                last.addingTimeInterval(staleness.effectiveTimeout) > now
            {
                return released + armStaleness(from: last, now: now)
            }
            return released + checkStaleness(clock: now)
        case .monitoringGap:
            gapDeadline = nil
            guard isMonitoring, isLive, let last = regions.lastLocationClock else { return [] }
            let due = last.addingTimeInterval(RegionMonitorStage.gapTimeout)
            if due > now {
                gapDeadline = due
                return [.arm(.monitoringGap, after: due.timeIntervalSince(now))]
            }
            var events: [RegionEvent] = []
            regions.expireIfSilent(clock: now, into: &events)
            return events.map { .region($0) }
        case .requestLocation:
            guard mode == .oneShot else { return [] }
            // A held fix is a candidate like any other.
            let released = releaseHeld(now: now)
            guard mode == .oneShot else { return released }
            let failure = oneShotTimeoutFailure()
            var actions = released + [settle(orFail: failure)]
            actions.append(contentsOf: stop())
            if !isRunning { actions.append(.stopSource) }
            return actions
        }
    }
}
