import FoundationEssentials
import GNSSCore

/// Live freshness by the receiver's clock, not the system's.
///
/// A live fix is judged by two clocks that cannot be wrong for it: the monotonic time since
/// reports arrived and the receiver's own (GNSS) time. The receiver's clock now is the time of
/// the last fresh fix plus the monotonic time since it arrived; a fix dated more than
/// `maximumAge` behind that is stale — a receiver repeating an old fix, or gpsd handing on
/// reports it held back (a suspended gpsd resuming). The system clock is not consulted, so a
/// box whose clock is wrong by seconds or years (an offline board with no real-time clock, the
/// box gpsd and chrony are there to set) and a gpsd replaying an old recording deliver like any
/// other; `offset(of:now:)` measures the disagreement for a diagnostic instead.
///
/// The first fix is the reference. A receiver whose clock really stepped (set from the
/// satellites after a cold start) is followed once `confirmations` fixes in a row agree with
/// each other on the new time (their dates advance with the monotonic clock); reports that are
/// only late catch up and never agree so.
public struct ReceiverClock: Sendable {
    /// Fixes in a row on a new timeline before it is followed (default 3).
    var confirmations = 3
    /// Seconds two fixes' (time − arrival) may differ and still be on one timeline.
    static let agreement: TimeInterval = 0.5
    /// How far the system clock may be from the receiver's before it is worth a diagnostic
    /// (seconds; a report arrives well under a second after its epoch).
    static let offsetTolerance: TimeInterval = 5

    private var anchor: (time: Date, arrival: Double)?
    private var candidate: (time: Date, offset: Double, count: Int)?

    /// A clock that knows no receiver time yet.
    public init() {}

    /// The receiver's time when the monotonic clock reads `arrival`, or nil before any fix.
    func now(arrival: Double) -> Date? {
        anchor.map { $0.time.addingTimeInterval(arrival - $0.arrival) }
    }

    /// How far (seconds) the fix dated `time`, arriving at `arrival`, lags the receiver's clock;
    /// 0 for the first fix and for a fix that confirms a new timeline. A fix not older than
    /// `maximumAge` moves the clock on.
    mutating func age(of time: Date, arrival: Double, maximumAge: TimeInterval) -> TimeInterval {
        guard let expected = now(arrival: arrival) else {
            anchor = (time, arrival)
            return 0
        }
        let age = expected.timeIntervalSince(time)
        if age <= maximumAge {
            candidate = nil
            if time > anchor!.time { anchor = (time, arrival) }
            return age
        }
        // On one new timeline: each fix later than the one before, and (time − arrival) the same
        // within `agreement` — the receiver's time advancing with the monotonic clock. A repeated
        // fix does not advance; reports handed on at once advance faster than the clock.
        let offset = time.timeIntervalSinceReferenceDate - arrival
        if let previous = candidate, time > previous.time, abs(previous.offset - offset) <= Self.agreement {
            candidate = (time, offset, previous.count + 1)
        } else {
            candidate = (time, offset, 1)
        }
        guard candidate!.count >= confirmations else { return age }
        candidate = nil
        anchor = (time, arrival)
        return 0
    }

    /// Seconds the system clock (`now`) is ahead of a fresh fix's time (negative: behind), when
    /// that is more than `offsetTolerance`; nil when they agree.
    public static func offset(of time: Date, now: Date) -> TimeInterval? {
        let offset = now.timeIntervalSince(time)
        return abs(offset) > offsetTolerance ? offset : nil
    }
}
