import FoundationEssentials
import GNSSCore

// The engine's rules for what waits (open epochs, a fix held for its GST) and when it goes, for
// pausing while the device stays put, and for the minimum update interval: part of
// `LocationEngine`, in a file of their own.

extension LocationEngine {
    /// Every open epoch and a fix held for its estimate go on now (the source ended, said
    /// something else, or a one-shot's time is up).
    mutating func releaseHeld(now: Date) -> [Action] {
        var actions: [Action] = []
        if !epochs.isEmpty {
            var open: [EpochStage.Report] = []
            epochs.flush(into: &open)
            for report in open where isRunning {
                actions += handleCompleteFix(report.fix, now: now, uptime: report.uptime)
            }
        }
        if let pending = held.take(), isRunning {
            actions += handleCheckedFix(pending.fix, now: now, uptime: pending.uptime)
        }
        return actions
    }

    /// The receiver's error estimate (GST): it completes the open epoch of its own time, and a
    /// fix held for it; one that describes the last fix, already gone, shows that this
    /// receiver's GST follows its fix, and from then on each fix waits for it (`held`).
    mutating func handleEstimate(_ estimate: ReceiverErrorEstimate, now: Date) -> [Action] {
        latestEstimate = estimate
        // An epoch still open (its cycle not learned yet: a recording's first) takes it in place.
        if epochs.updateOpen(at: estimate.time, { Self.apply(estimate, to: &$0) }) {
            estimateFollows = true
            return []
        }
        if let time = held?.fix.time, Self.sameTime(time, estimate.time), let pending = held.take() {
            // It came after its fix: this receiver's GST follows its fix.
            estimateFollows = true
            return handleCheckedFix(Self.applying(estimate, to: pending.fix), now: now, uptime: pending.uptime)
        }
        if Self.sameTime(lastSourceFixTime, estimate.time) { estimateFollows = true }
        return []
    }

    /// The estimate for the fix's own time wins (`ReceiverErrorEstimate.applied`, the rule the
    /// NMEA engine follows too); any other estimate leaves the fix as it is.
    static func applying(_ estimate: ReceiverErrorEstimate?, to fix: Fix) -> Fix {
        var fix = fix
        apply(estimate, to: &fix)
        return fix
    }

    /// `applying`, in place (the engine's form: a fix is not copied on its way through the stages).
    static func apply(_ estimate: ReceiverErrorEstimate?, to fix: inout Fix) {
        guard let estimate, sameTime(estimate.time, fix.time), fix.mode >= .twoDimensional else { return }
        fix.errors = estimate.applied(to: fix.errors, threeDimensional: fix.mode == .threeDimensional)
    }

    /// One epoch's time: the epoch stage's rule (`EpochStage.sameEpoch`), so a GST joins exactly
    /// the epoch the stage keeps open for it.
    static func sameTime(_ a: Date?, _ b: Date?) -> Bool {
        guard let a, let b else { return false }
        return EpochStage.sameEpoch(a, b)
    }

    /// Automatic pausing: true when `location` is not delivered because updates are paused
    /// (or pause at it); a location that moved resumes them first. The one stationary detector:
    /// `stillFor` (how long the device has stayed put) also marks delivered locations
    /// stationary (`GNSSDetails.isStationary`, which `CLLocationUpdate` reports).
    mutating func pauses(at location: LocationValue, actions: inout [Action]) -> Bool {
        let still = stationary.still(location)
        stillFor = still
        if configuration.pausesWhileStationary && configuration.activityType != .airborne {
            // The stop's first stationary location goes (`stationaryShown`); the rest wait for a move.
            if !stationary.isStationary { stationaryDelivered = false }
            return stationary.isStationary && stationaryDelivered
        }
        guard let delay = configuration.pauseAfter else {
            if paused {
                paused = false
                actions.append(.paused(false))
            }
            return false
        }
        if paused {
            guard still == nil else { return true }
            paused = false
            actions.append(.paused(false))
            return false
        }
        guard let still, still >= delay else { return false }
        paused = true
        actions.append(.paused(true))
        return true
    }

    /// `location` as delivered: marked stationary when the detector says the device is.
    /// (Static, given only what it reads: an instance method on the engine, called from a
    /// mutating one, had the whole 2.6 KB engine copied for each location.)
    static func markedStationary(_ location: LocationValue, isStationary: Bool) -> LocationValue {
        guard isStationary, var details = location.gnss else { return location }
        details.isStationary = true
        return location.with(gnss: details)
    }

    /// `pausesWhileStationary`: the location that shows the stop goes whatever the interval and
    /// the distance filter say (a still device moves too little for a distance filter to let
    /// anything through, and the app must hear that it stopped).
    var showsStop: Bool {
        configuration.pausesWhileStationary && configuration.activityType != .airborne && stationary.isStationary
            && !stationaryDelivered
    }

    /// `requestLocation()` without a location meeting `desiredAccuracy` yet: the candidate at
    /// its deadline is the most accurate location of the last receiver cycle (the time between
    /// the last two locations) — as accurate or better wins, so a steady receiver gives its
    /// newest — and never one older than that: a better one from seconds ago loses to the newest.
    mutating func considerForOneShot(_ location: LocationValue) {
        defer { oneShotLatest = location }
        let cycle = oneShotLatest.map { max(location.timestamp.timeIntervalSince($0.timestamp), 0.05) } ?? 1
        if let best = oneShotBest, best.horizontalAccuracy < location.horizontalAccuracy,
            best.timestamp >= location.timestamp.addingTimeInterval(-cycle - 0.001)
        {
            return
        }
        oneShotBest = location
    }

    /// What a `requestLocation()` that found nothing says at its deadline.
    func oneShotTimeoutFailure() -> CLError {
        let seconds = Int(configuration.requestLocationTimeout.rounded())
        // Fixes came but the gate kept them (not determined, not in use): that is the reason. The source's own trouble
        // (gpsd unreachable or silent) is the next; only then the receiver's lack of a fix.
        let failure =
            (fixesHeld ? gate.state.refusal : nil)
            ?? lastSourceProblem.map {
                CLError(
                    .locationUnknown, .timedOut(seconds: seconds, cause: $0.facts), reason: $0.reason,
                    underlyingError: $0.underlyingError)
            }
            ?? CLError(.locationUnknown, .timedOut(seconds: seconds, cause: nil), reason: .timedOut)
        return failure
    }
}
