import FoundationEssentials
import GNSSCore

// The stages a fix goes through, from the source's report to the app: ranges, the DOP fallback,
// the receiver's estimate, the epoch (`EpochStage`), the hold for a following GST, then validity,
// accuracy, receiver selection, time order, the gate, pausing, the interval and the distance
// filter. Part of `LocationEngine`, in a file of their own.

extension LocationEngine {
    mutating func handleFix(_ fix: consuming Fix, now: Date, uptime: Double?) -> [Action] {
        var notes: [Action] = []
        // The stages change the fix in place: it is not copied on its way through them.
        var fix = fix
        if let removed = PhysicalRanges.clamp(&fix) {
            let clock = isLive ? now : (fix.time ?? recordingNow ?? now)
            if repeats.allows("outOfRange", at: clock) {
                notes.append(.diagnose(code: "outOfRange", .outOfRange(removed)))
            }
        }
        // After the sky's fallback, which may bring the outage's DOPs too.
        dilutionFallback.fill(&fix)
        NoSolutionErrors.clean(&fix)
        lastSourceFixTime = fix.time
        Self.apply(latestEstimate, to: &fix)
        var actions = notes
        if fix.mode >= .twoDimensional, let latitude = fix.latitude, let longitude = fix.longitude {
            lastPosition = (latitude, longitude, fix.magneticVariation)
        }
        lastSourceProblem = nil
        if let pending = pendingHeading, let time = fix.time {
            pendingHeading = nil
            actions += headingActions(pending, time: time)
        }
        if let failure = headingStage.fixCame() { actions.append(.fail(failure)) }
        // Of an epoch's reports the last goes on (`EpochStage`): the one it closed, and itself
        // when its epoch is complete.
        let (first, second) = epochs.add(fix, uptime: uptime)
        guard let first else { return actions }
        // Nearly always one report and nothing before it: its actions are returned as they are.
        var result =
            actions.isEmpty
            ? handleCompleteFix(first.fix, now: now, uptime: first.uptime)
            : actions + handleCompleteFix(first.fix, now: now, uptime: first.uptime)
        // (Not after the first ended everything: a one-shot it settled stops the engine.)
        if let second, isRunning { result += handleCompleteFix(second.fix, now: now, uptime: second.uptime) }
        return result
    }

    /// A fix that is its epoch's complete report: held for the receiver's estimate when that
    /// follows its fix, else checked now. A fix held before it goes first, unless this one is
    /// of the same time (the same epoch's, which replaces it).
    mutating func handleCompleteFix(_ fix: Fix, now: Date, uptime: Double?) -> [Action] {
        var actions: [Action] = []
        if held != nil, let pending = held.take() {
            if fix.time == nil || pending.fix.time != fix.time || !fix.hasPosition {
                actions = handleCheckedFix(pending.fix, now: now, uptime: pending.uptime)
            }
        }
        // (Not one that has its estimate already: its epoch was still open when the GST came.)
        if estimateFollows, fix.time != nil, fix.mode >= .twoDimensional,
            !Self.sameTime(latestEstimate?.time, fix.time)
        {
            held = EpochStage.Report(fix: fix, uptime: uptime)
            return actions
        }
        // Nearly always nothing came before: the checked fix's actions are returned as they are,
        // not copied into a new array.
        if actions.isEmpty { return handleCheckedFix(fix, now: now, uptime: uptime) }
        return actions + handleCheckedFix(fix, now: now, uptime: uptime)
    }

    mutating func handleCheckedFix(_ fix: Fix, now: Date, uptime: Double?) -> [Action] {
        if !isLive, let time = fix.time { recordingNow = time }
        // A replay's clock is known only from fixes that carry a time.
        let clock = isLive ? now : recordingNow
        if let clock { staleness.heard(clock: clock) }
        let checkClock = clock ?? Date(timeIntervalSince1970: 0)
        var rejection: FixRejection?
        if isLive, let uptime, let time = fix.time {
            // Live, the receiver's clock is the truth (`ReceiverClock`): the fix is checked as
            // of its own time, and its age is how far it lags the receiver's clock.
            rejection = validity.check(fix, now: time)
            if rejection == nil {
                let age = receiverClock.age(of: time, arrival: uptime, maximumAge: configuration.maximumLocationAge)
                if age > configuration.maximumLocationAge { rejection = .stale(age: age) }
            }
        } else {
            rejection = validity.check(fix, now: checkClock)
        }
        let candidate = rejection == nil ? accuracy.location(from: fix, source: sourceInformation) : nil
        receivers.lossTimeout = staleness.effectiveTimeout
        guard
            receivers.admits(
                device: fix.device, mode: fix.mode, horizontalAccuracy: candidate?.horizontalAccuracy, clock: checkClock
            )
        else {
            guard let missing = receivers.takeMissingPin() else { return [] }
            staleness.reportedElsewhere()
            return [
                .fail(
                    CLError(
                        .locationUnknown, .receiverMissing(pinned: missing.pinned, reporting: missing.reporting),
                        reason: .receiverMissing))
            ]
        }
        guard let candidate else { return rejected(rejection!, clock: clock) }
        if let rejection = timeOrder.check(candidate, arrival: isLive ? uptime : nil) {
            return rejected(rejection, clock: clock)
        }
        var actions: [Action] = []
        if isLive, uptime != nil { actions += systemClockCheck(candidate.timestamp, now: now) }
        if let step = timeOrder.resynchronized {
            actions.append(
                .diagnose(code: "timeResynchronized", .timeResynchronized(step: step)))
        }
        staleness.fix(time: candidate.timestamp, clock: checkClock)
        if isLive && mode == .continuous { actions.append(contentsOf: armStaleness(from: checkClock, now: now)) }
        switch gate.decide(candidate, now: checkClock) {
        case .refuse(let error):
            fixesHeld = true
            if let error { actions.append(.fail(error)) }
        case .hold:
            break
        case .deliver(let location):
            if isMonitoring { actions.append(contentsOf: monitor(location, clock: checkClock, now: now)) }
            if significantChanges?.admits(location) == true && mode != .continuous && mode != .oneShot {
                lastDelivered = location
                actions.append(.deliver(location))
            }
            if mode == .oneShot {
                if AccuracyStage.meets(location, desiredAccuracy: configuration.desiredAccuracy) {
                    oneShotBest = location
                    actions.append(settle(orFail: nil))
                    actions.append(contentsOf: stop())
                    if !isRunning { actions.append(.stopSource) }
                } else {
                    considerForOneShot(location)
                }
            } else if mode == .continuous, !pauses(at: location, actions: &actions),
                showsStop
                    || filter.admits(
                        location, distanceFilter: configuration.distanceFilter,
                        minimumInterval: configuration.minimumUpdateInterval)
            {
                if showsStop { stationaryDelivered = true }
                let location = Self.markedStationary(location, isStationary: stationary.isStationary)
                filter.delivered(location)
                lastDelivered = location
                lastRejection = nil
                lastRejectionReason = nil
                actions.append(.deliver(location))
            }
        }
        return actions
    }

    /// Ends a `requestLocation()`: the best location seen, or `failure`.
    mutating func settle(orFail failure: CLError?) -> Action {
        if let best = oneShotBest {
            lastDelivered = best
            return .deliver(best)
        }
        return .fail(failure ?? CLError(.locationUnknown, .noLocation, reason: .sourceEnded))
    }
}
