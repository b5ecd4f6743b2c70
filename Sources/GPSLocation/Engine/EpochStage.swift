import Foundation
import GNSSCore

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
///   epochs with a position (the cycle's end, learned: no wait at all, as gpsd learns
///   `cycle_enders` from one cycle; a receiver without a fix is reported at other sentences, and
///   a cycle that once came short does not count alone); after one to three epochs were skipped
///   (gpsd learns a new cycle end from such a cycle, and reports more often from then on) it is
///   learned again;
///   the first epoch with a position, and one whose cycle is shorter, at the latest when the next
///   epoch begins, or when the source ends or says anything else (a receiver gone, a problem) —
///   so the last epoch of a recording is never lost. What is learned of a receiver's cycle is
///   kept across a stop and a start (an engine has one source; each receiver its own cycle);
/// - a report of an epoch already complete (a cycle that ran longer than the ones before) goes
///   on by itself: the time-order stage passes it only when the first had no position;
/// - a report without a time is no epoch's and goes on at once (the validity stage says why it
///   cannot be delivered);
/// - live, an epoch whose time is still reported a second after its first report is complete
///   (a receiver stuck repeating one fix: its first report is not held back for ever).
struct EpochStage: Sendable {
    struct Report {
        var fix: Fix
        /// When it arrived (a monotonic clock, live sources), for its age when it goes on.
        var uptime: Double?
    }

    private struct Receiver {
        var device: String?
        /// The open epoch's latest report, while it is not complete.
        var open: Report?
        var openTime: Date?
        /// When the open epoch's first report arrived (live sources).
        var openedAt: Double?
        /// Reports of the open epoch so far (counted on after it went on).
        var reports = 0
        /// Reports in the last two epochs with a position (0: none seen yet): the receiver's cycle.
        var previous = 0
        var beforePrevious = 0
        /// The time from the epoch before the open one to the open one (the receiver's rate).
        var interval: Double?

        /// The larger of the last two counts: a cycle that once came short (a lost RMC) does not
        /// make the next complete at its first report.
        var learned: Int? {
            let count = max(previous, beforePrevious)
            return count > 0 ? count : nil
        }
        /// The open epoch's latest report had a position.
        var lastHadPosition = false
    }

    /// Usually one receiver; gpsd may report several, each with its own cycle.
    private var receivers: [Receiver] = []

    /// Adds a report; returns the reports that leave the stage, oldest first: the epoch it closed,
    /// and itself when its epoch is complete (a pair, not an array: this runs for every fix).
    mutating func add(_ fix: consuming Fix, uptime: Double?) -> (first: Report?, second: Report?) {
        guard let time = fix.time else { return (Report(fix: fix, uptime: uptime), nil) }
        let index = receiverIndex(fix.device)
        let hasPosition = fix.hasPosition && fix.mode >= .twoDimensional
        var closed: Report?
        if let openTime = receivers[index].openTime, Self.sameEpoch(openTime, time) {
            receivers[index].reports += 1
            receivers[index].lastHadPosition = hasPosition
            // The epoch went on already: this later report goes on by itself.
            guard receivers[index].open != nil else { return (Report(fix: fix, uptime: uptime), nil) }
            receivers[index].open = Report(fix: fix, uptime: uptime)
            // Live, a time repeated for longer than a cycle's reports take is a receiver stuck on
            // it: the epoch is complete (its repeats go on by themselves, as duplicates).
            if let uptime, let openedAt = receivers[index].openedAt, uptime - openedAt > Self.longestCycle {
                let complete = receivers[index].open
                receivers[index].open = nil
                return (complete, nil)
            }
        } else {
            closed = receivers[index].open
            // Learned from epochs with a position only: a receiver without a fix is reported at
            // other sentences than with one (its first fix would go at a no-fix cycle's count).
            if let openTime = receivers[index].openTime {
                if receivers[index].lastHadPosition {
                    receivers[index].beforePrevious = receivers[index].previous
                    receivers[index].previous = receivers[index].reports
                }
                // One to three epochs skipped (1.5 to 4 of the receiver's intervals since the last):
                // something went unreported, as when gpsd learns a new cycle end from a cycle whose
                // RMC was lost and reports each epoch once more from then on — learn again. (A
                // longer silence is an outage, or a source with no steady rate: nothing to learn.)
                let gap = time.timeIntervalSince(openTime)
                if let interval = receivers[index].interval, gap > interval * 1.5, gap <= interval * 4 {
                    receivers[index].previous = 0
                    receivers[index].beforePrevious = 0
                }
                receivers[index].interval = gap > 0 ? gap : nil
            }
            receivers[index].openTime = time
            receivers[index].openedAt = uptime
            receivers[index].reports = 1
            receivers[index].lastHadPosition = hasPosition
            // One report an epoch, learnt (most receivers, at every rate): complete at once, never
            // stored (this runs for every fix).
            if receivers[index].learned == 1 {
                receivers[index].open = nil
                let complete = Report(fix: fix, uptime: uptime)
                return closed == nil ? (complete, nil) : (closed, complete)
            }
            receivers[index].open = Report(fix: fix, uptime: uptime)
        }
        if let learned = receivers[index].learned, receivers[index].reports >= learned {
            let complete = receivers[index].open
            receivers[index].open = nil
            return closed == nil ? (complete, nil) : (closed, complete)
        }
        return (closed, nil)
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
            receivers[index].openTime = nil
            receivers[index].reports = 0
        }
    }

    private mutating func receiverIndex(_ device: String?) -> Int {
        if let index = receivers.firstIndex(where: { $0.device == device }) { return index }
        receivers.append(Receiver(device: device))
        return receivers.count - 1
    }

    /// Seconds within which every report of one epoch arrives, live: gpsd sends them within the
    /// receiver's cycle (a 1 Hz receiver's whole cycle takes well under a second at 4800 baud).
    static let longestCycle = 1.0

    /// Times within 10 ms are one epoch (NMEA's resolution is 1/100 s).
    static func sameEpoch(_ a: Date, _ b: Date) -> Bool { abs(a.timeIntervalSince(b)) < 0.01 }
}
