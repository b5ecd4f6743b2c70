import FoundationEssentials
import GNSSCore

/// Notices when usable fixes stop coming — the sky is lost, the antenna is unplugged, the
/// receiver keeps sending "no fix" reports — so the app hears of it once instead of silence.
///
/// The rule: after a usable fix — or after the first report of any kind, when there has been
/// no usable fix yet — if `timeout` seconds pass (by the caller's clock: the wall clock live,
/// the recording's clock in a replay) with no usable fix, the monitor says so once (`check`
/// returns the silence). The last location is kept — it is only
/// *marked* stale — and the next usable fix clears the state silently (`fix` returns whether
/// an outage just ended, for callers that want to log it).
///
/// The default timeout follows the receiver: three of its cycles, learned as the median of
/// the last eight intervals between usable fixes' own timestamps, and never less than one
/// second (so a 10 Hz receiver gets 1 s, a 1 Hz receiver 3 s, a 0.2 Hz one 15 s). Before two
/// fixes have been seen, a 1 s cycle is assumed.
struct FixStalenessMonitor: Sendable {
    /// Seconds without a usable fix before the report; nil: automatic (see the type).
    var timeout: TimeInterval?
    static let automaticCycles = 3.0
    static let minimumAutomaticTimeout = 1.0

    /// The source's clock at the last usable fix (or at the first report, before any fix).
    private(set) var lastFixClock: Date?
    /// True between the report and the next usable fix.
    private(set) var isStale = false
    private var lastFixTime: Date?
    /// The last eight intervals, oldest overwritten first (no heap allocation per fix).
    private var intervals = InlineArray<8, TimeInterval>(repeating: 0)
    private var intervalCount = 0
    private var nextInterval = 0
    private var reported = false

    init(timeout: TimeInterval? = nil) { self.timeout = timeout }

    /// The receiver's cycle as learned so far (seconds), or nil: the median of the intervals,
    /// computed when one is added (the engine asks for it on every fix).
    private(set) var cycle: TimeInterval?

    /// The timeout in force now.
    var effectiveTimeout: TimeInterval {
        timeout ?? max(Self.minimumAutomaticTimeout, Self.automaticCycles * (cycle ?? 1))
    }

    /// A report of any kind arrived at `clock`: starts the wait for the first fix.
    mutating func heard(clock: Date) {
        if lastFixClock == nil { lastFixClock = clock }
    }

    /// A usable fix with receiver time `time` arrived when the source's clock read `clock`.
    /// Returns true when this ends a stale stretch.
    @discardableResult
    mutating func fix(time: Date, clock: Date) -> Bool {
        if let last = lastFixTime {
            let interval = time.timeIntervalSince(last)
            // The median of eight ignores an outage's single long gap.
            if interval > 0.001 && interval <= 60 {
                // A steady receiver repeats its interval: when a value within a microsecond of
                // the median is replaced by another such value, the median stays within that
                // microsecond (as many values lie below and above the band as before).
                let unchanged =
                    intervalCount == intervals.count && abs(intervals[nextInterval] - (cycle ?? 0)) < 1e-6
                    && abs(interval - (cycle ?? 0)) < 1e-6
                intervals[nextInterval] = interval
                nextInterval = (nextInterval + 1) % intervals.count
                intervalCount = min(intervalCount + 1, intervals.count)
                if !unchanged { cycle = median() }
            }
        }
        lastFixTime = time
        lastFixClock = clock
        let recovered = isStale
        isStale = false
        reported = false
        return recovered
    }

    /// The median of the stored intervals (the upper one of an even count): an insertion sort
    /// of at most eight values on the stack.
    private func median() -> TimeInterval {
        var sorted = intervals
        for i in 1..<intervalCount {
            let value = sorted[i]
            var j = i - 1
            while j >= 0 && sorted[j] > value {
                sorted[j + 1] = sorted[j]
                j -= 1
            }
            sorted[j + 1] = value
        }
        return sorted[intervalCount / 2]
    }

    /// Something else already told the app that no location is coming (gpsd lost, for
    /// example): mark the stretch stale without a second report.
    mutating func reportedElsewhere() { reported = true }

    /// Checks the silence at `clock`. Returns the seconds without a usable fix the first time
    /// they reach the timeout in a stretch (report it); nil otherwise.
    mutating func check(clock: Date) -> TimeInterval? {
        guard let last = lastFixClock else { return nil }
        let silence = clock.timeIntervalSince(last)
        guard silence >= effectiveTimeout else { return nil }
        isStale = true
        if reported { return nil }
        reported = true
        return silence
    }

    /// Forget everything (updates stopped).
    mutating func reset() { self = FixStalenessMonitor(timeout: timeout) }
}
