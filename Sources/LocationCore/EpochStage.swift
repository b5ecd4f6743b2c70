import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// One epoch, one location, complete (#49): of the reports a source gives for one receiver
/// epoch, the app gets the last.
///
/// gpsd reports an epoch at every sentence it has learned to end a cycle (driver_nmea0183.c's
/// `cycle_enders`, a set: once a GGA has ended some cycle — a receiver that dropped an RMC, a
/// recording cut mid-cycle — every GGA triggers a report), and at every sentence that sets the
/// fix before it has learned any. A GGA-first receiver (SiRF's order: GGA, GSA, GSV, RMC) is then
/// reported twice an epoch: at the GGA, with no course and a speed derived from the last
/// position, and at the RMC, with the receiver's own. Each report of a cycle holds everything the
/// reports before it held (gpsd clears its fix only when a new time starts a cycle), so the last
/// one is the complete one. The NMEA engine (`EpochAssembler`) reports where gpsd does, so both
/// paths give this stage the same reports, and it gives the app the same locations.
///
/// The rule, per receiver (gpsd's device path):
/// - a report with a time joins the open epoch of that time, replacing the report kept for it;
///   one with another time closes the open epoch (it is complete: its receiver has moved on) and
///   opens its own;
/// - an epoch is complete as soon as it has had as many reports as the larger of the last two
///   epochs with a position in the same tenth of a second (the cycle's end, learned: no wait at
///   all, as gpsd learns `cycle_enders` from one cycle; a receiver without a fix is reported at
///   other sentences, a cycle that once came short does not count alone, and a receiver that
///   sends its RMC at 1 Hz and its GGA at 10 Hz has epochs of two reports on the second and of
///   one between); only epochs of a run of fixes teach (the first fix after an outage, which
///   gpsd reports at more sentences, waits for the next epoch, and the outage forgets what was
///   learned); after one to three epochs were skipped
///   (gpsd learns a new cycle end from such a cycle, and reports more often from then on) it is
///   learned again;
///   the first epoch with a position, and one whose cycle is shorter, at the latest when the next
///   epoch begins, or when the source ends or says anything else (a receiver gone, a problem) —
///   so the last epoch of a recording is never lost. What is learned of a receiver's cycle is
///   kept across a stop and a start (an engine has one source; each receiver its own cycle);
/// - a report of an epoch already complete (a cycle that ran longer than the ones before) goes
///   on by itself: the time-order stage passes it only when the first had no position;
/// - a report without a time is no epoch's, and one without a position has nothing to
///   complete: each goes on at once (the validity stage says why it cannot be delivered), and the
///   epoch stays open for the reports of it that may have one (a fix that begins mid-cycle);
/// - live, an epoch whose time is still reported a second after its first report is complete
///   (a receiver stuck repeating one fix: its first report is not held back for ever).
struct EpochStage: Sendable {
    init() {}

    struct Report {
        var fix: Fix
        /// When it arrived (a monotonic clock, live sources), for its age when it goes on.
        var uptime: Double?
    }

    private struct Receiver {
        /// The receiver's device, as its number in `DeviceNames` (0: none named).
        var device: UInt32
        /// The open epoch's latest report with a position, while the epoch is not complete.
        var open: Report?
        /// The open epoch went on (complete): its later reports go on by themselves.
        var done = false
        var openTime: Date?
        /// When the open epoch's first report arrived (live sources).
        var openedAt: Double?
        /// Reports of the open epoch so far (counted on after it went on).
        var reports = 0
        /// Reports in the last two epochs with a position (0: none seen yet), per tenth of a
        /// second the epoch's time falls in: the receiver's cycle. A receiver may send some
        /// sentences at a lower rate than others, on the whole second (rst39: GGA at 10 Hz, RMC at
        /// 1 Hz): gpsd reports its epochs at .0 twice, the others once.
        var previous = InlineArray<10, Int>(repeating: 0)
        var beforePrevious = InlineArray<10, Int>(repeating: 0)
        /// The open epoch's tenth of a second.
        var phase = 0
        /// The time from the epoch before the open one to the open one (the receiver's rate).
        var interval: Double?

        /// The larger of the last two counts of the open epoch's tenth: a cycle that once came
        /// short (a lost RMC) does not make the next complete at its first report.
        var learned: Int? {
            let count = max(previous[phase], beforePrevious[phase])
            return count > 0 ? count : nil
        }

        mutating func forget() {
            previous = InlineArray(repeating: 0)
            beforePrevious = InlineArray(repeating: 0)
        }
        /// The open epoch's latest report had a position.
        var lastHadPosition = false
        /// The open epoch's first report had one too: its whole cycle was a fix.
        var firstHadPosition = false
        /// The open epoch began in a run of fixes: the epoch before it had a position and no
        /// report without one came between (true at the start: a recording that begins with a fix
        /// is learned from its first epoch).
        var openedInFix = true
        /// A report without a position came since the open epoch began.
        var sawNoFix = false

        /// A new epoch (at `time`) begins: what the one before it teaches of the receiver's cycle.
        fileprivate mutating func learn(next time: Date) {
            if let openTime = openTime {
                // Learned from epochs with a position only, from their first report to their last: a
                // receiver without a fix is reported at other sentences than with one, and a fix that
                // began mid-cycle (the first after an outage) is no measure of the cycle either.
                if lastHadPosition && firstHadPosition && openedInFix {
                    let phase = self.phase
                    beforePrevious[phase] = previous[phase]
                    previous[phase] = reports
                }
                // One to three epochs skipped (1.5 to 4 of the receiver's intervals since the last):
                // something went unreported, as when gpsd learns a new cycle end from a cycle whose
                // RMC was lost and reports each epoch once more from then on — learn again. (A
                // longer silence is an outage, or a source with no steady rate: nothing to learn.)
                let gap = time.timeIntervalSince(openTime)
                if let interval = interval, gap > interval * 1.5, gap <= interval * 4 {
                    forget()
                }
                interval = gap > 0 ? gap : nil
            }
            openedInFix =
                !sawNoFix && (openTime == nil || lastHadPosition)
            sawNoFix = false
            // An outage: gpsd learns other cycle ends from a receiver without a fix (it reports such
            // a receiver at other sentences), so what was learned before it is learned again.
            if !openedInFix { forget() }
            phase = EpochStage.phase(of: time)
        }
    }

    /// Usually one receiver; gpsd may report several, each with its own cycle.
    private var receivers: [Receiver] = []

    /// Adds a report; returns the reports that leave the stage, oldest first: the epoch it closed,
    /// and itself when its epoch is complete (a pair, not an array: this runs for every fix).
    mutating func add(_ fix: consuming Fix, uptime: Double?) -> (first: Report?, second: Report?) {
        let hasPosition = fix.hasPosition && fix.mode >= .twoDimensional
        guard let time = fix.time else {
            if !hasPosition { receivers[receiverIndex(fix.deviceNumber)].sawNoFix = true }
            return (Report(fix: fix, uptime: uptime), nil)
        }
        let index = receiverIndex(fix.deviceNumber)
        var closed: Report?
        if let openTime = receivers[index].openTime, Self.sameEpoch(openTime, time) {
            receivers[index].reports += 1
            receivers[index].lastHadPosition = hasPosition
            // The epoch went on already: this later report goes on by itself.
            if receivers[index].done { return (Report(fix: fix, uptime: uptime), nil) }
            // Nothing to deliver yet (no position so far): it says so at once.
            if !hasPosition && receivers[index].open == nil { return (Report(fix: fix, uptime: uptime), nil) }
            receivers[index].open = Report(fix: fix, uptime: uptime)
            // Live, a time repeated for longer than a cycle's reports take is a receiver stuck on
            // it: the epoch is complete (its repeats go on by themselves, as duplicates).
            if let uptime, let openedAt = receivers[index].openedAt, uptime - openedAt > Self.longestCycle {
                return (complete(index), nil)
            }
        } else {
            closed = receivers[index].open
            // In place, through one access to the array (each `receivers[index].x` of a struct
            // this size had copied it whole; a tenth of the epoch stage's instructions).
            receivers[index].learn(next: time)
            receivers[index].openTime = time
            receivers[index].openedAt = uptime
            receivers[index].reports = 1
            receivers[index].lastHadPosition = hasPosition
            receivers[index].firstHadPosition = hasPosition
            receivers[index].open = nil
            receivers[index].done = false
            // A report without a position has nothing to complete: it goes on at once (the
            // validity stage says why it cannot be delivered), and the epoch stays open for the
            // reports of it that may have one.
            if !hasPosition {
                let now = Report(fix: fix, uptime: uptime)
                return closed == nil ? (now, nil) : (closed, now)
            }
            // One report an epoch, learnt (most receivers, at every rate): complete at once, never
            // stored (this runs for every fix).
            if receivers[index].learned == 1 && receivers[index].openedInFix {
                receivers[index].done = true
                let complete = Report(fix: fix, uptime: uptime)
                return closed == nil ? (complete, nil) : (closed, complete)
            }
            receivers[index].open = Report(fix: fix, uptime: uptime)
        }
        // The first fix after an outage is reported at more of its cycle's sentences than a
        // steady one (its mode rises as they come): complete when the next epoch begins.
        if receivers[index].openedInFix, let learned = receivers[index].learned,
            receivers[index].reports >= learned
        {
            let complete = complete(index)
            return closed == nil ? (complete, nil) : (closed, complete)
        }
        return (closed, nil)
    }

    /// The open epoch of receiver `index` is complete: its report leaves the stage.
    private mutating func complete(_ index: Int) -> Report? {
        let report = receivers[index].open
        receivers[index].open = nil
        receivers[index].done = true
        return report
    }

    /// The open epoch of `time` (any receiver's) is changed by `update` (a receiver's own error
    /// estimate for it); false when no open epoch has that time.
    mutating func updateOpen(at time: Date?, _ update: (inout Fix) -> Void) -> Bool {
        guard let time else { return false }
        for index in receivers.indices {
            guard let openTime = receivers[index].openTime, Self.sameEpoch(openTime, time),
                receivers[index].open != nil
            else { continue }
            update(&receivers[index].open!.fix)
            return true
        }
        return false
    }

    /// Every open epoch, complete now (the source ended or said something else first).
    mutating func flush(into out: inout [Report]) {
        for index in receivers.indices {
            if let open = receivers[index].open {
                receivers[index].open = nil
                receivers[index].done = true
                out.append(open)
            }
        }
    }

    /// Whether any epoch is open.
    var isEmpty: Bool { !receivers.contains { $0.open != nil } }

    /// Drops the open epochs (updates stopped), keeping what was learned of each cycle.
    mutating func dropOpen() {
        for index in receivers.indices {
            receivers[index].open = nil
            receivers[index].done = false
            receivers[index].openTime = nil
            receivers[index].reports = 0
        }
    }

    private mutating func receiverIndex(_ device: UInt32) -> Int {
        if let index = receivers.firstIndex(where: { $0.device == device }) { return index }
        receivers.append(Receiver(device: device))
        return receivers.count - 1
    }

    /// The tenth of a second `time` falls in (0–9).
    static func phase(of time: Date) -> Int {
        // By its milliseconds, rounded: a time on the second stays in tenth 0.
        let milliseconds = Int((time.timeIntervalSince1970 * 1000).rounded())
        return ((milliseconds % 1000 + 1000) % 1000) / 100
    }

    /// Seconds within which every report of one epoch arrives, live: gpsd sends them within the
    /// receiver's cycle (a 1 Hz receiver's whole cycle takes well under a second at 4800 baud).
    static let longestCycle = 1.0

    /// Times within half a millisecond are one epoch: the reports of one epoch carry the same
    /// time, and receivers send times to the millisecond (sl869: epochs at :43.990 and :44.000).
    static func sameEpoch(_ a: Date, _ b: Date) -> Bool { abs(a.timeIntervalSince(b)) < 0.0005 }
}
