import FoundationEssentials
import GNSSCore

// The engine's reports of fixes it does not use and of silence (staleness): part of
// `LocationEngine`, in a file of their own.

extension LocationEngine {
    /// A fix not used: a diagnostic (once per change of reason since the last delivery, each
    /// reason at most once a minute), and, unless it is a repeat, a staleness check.
    mutating func rejected(_ rejection: FixRejection, clock: Date?) -> [Action] {
        if case .duplicate = rejection { return [] }
        var actions: [Action] = []
        let code = rejection.code
        if case .noFix = rejection {
            lastRejectionReason = nil
        } else {
            lastRejectionReason = rejection
        }
        if code != lastRejection {
            lastRejection = code
            if clock.map({ repeats.allows(code, at: $0) }) ?? true {
                // A replay runs minutes of recording in a moment: each stretch says when it was,
                // so a second one (a later outage) does not read as the first said twice.
                actions.append(.diagnose(code: code, .rejected(rejection, recordingTime: isLive ? nil : clock)))
            }
        }
        if let clock { actions.append(contentsOf: checkStaleness(clock: clock)) }
        return actions
    }

    /// Staleness is news only to an app that may receive locations: one that may not has been
    /// told why it gets none.
    mutating func checkStaleness(clock: Date) -> [Action] {
        guard mode == .continuous, gate.state.allowsDelivery, let silence = staleness.check(clock: clock) else {
            return []
        }
        let facts = CLError.Facts.stale(
            silence: silence, lastLocation: lastDelivered?.timestamp, rejection: lastRejectionReason)
        return [.fail(CLError(.locationUnknown, facts, reason: .stale))]
    }

    /// Arms the staleness timer for `timeout` after `clock`, when none is armed, the deadline
    /// moved earlier, or it moved later by half the timeout or more. So while fixes flow the armed
    /// deadline stays at least half a timeout ahead and the timer never fires (live at 10 Hz it
    /// had fired every second only to be re-armed: three wake-ups of two threads a second); when
    /// they stop it fires at most half a timeout early and is re-armed for the exact deadline.
    mutating func armStaleness(from clock: Date, now: Date) -> [Action] {
        let timeout = staleness.effectiveTimeout
        let due = clock.addingTimeInterval(timeout)
        if let armed = stalenessDeadline, armed <= due, due.timeIntervalSince(armed) < timeout / 2 { return [] }
        stalenessDeadline = due
        return [.arm(.staleness, after: max(0, due.timeIntervalSince(now)))]
    }

    /// Live: one diagnostic when the system clock disagrees with the receiver's (once until they
    /// agree again); locations flow either way.
    mutating func systemClockCheck(_ time: Date, now: Date) -> [Action] {
        guard let offset = ReceiverClock.offset(of: time, now: now) else {
            clockOffsetReported = false
            return []
        }
        guard !clockOffsetReported else { return [] }
        clockOffsetReported = true
        let simulated = sourceInformation?.isSimulatedBySoftware == true
        return [
            .diagnose(
                code: "systemClockOffset",
                .systemClockOffset(offset: offset, fixTime: time, now: now, simulated: simulated))
        ]
    }
}
