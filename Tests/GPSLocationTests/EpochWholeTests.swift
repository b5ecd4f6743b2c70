import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #49: of the reports of one receiver epoch the app gets the last, complete one — once.
@Suite("every epoch whole: the stage", .timeLimit(.minutes(5)))
struct EpochStageTests {
    static let start = LocationEngineTests.start

    /// A report of the epoch at `seconds`: with the receiver's course (an RMC's) or without (a GGA's).
    static func report(_ seconds: Double, course: Double? = nil, device: String? = nil) -> Fix {
        Fix(
            mode: .threeDimensional, time: start.addingTimeInterval(seconds), latitude: 51.45, longitude: -2.58,
            altitudeHAE: 90, altitudeMSL: 40, errors: FixErrors(horizontal: 5, vertical: 8), speed: 10,
            course: course, device: device)
    }

    static func out(_ pair: (first: EpochStage.Report?, second: EpochStage.Report?)) -> [Fix] {
        [pair.first, pair.second].compactMap { $0?.fix }
    }

    @Test("a GGA-first receiver reported twice an epoch: the first epoch at the next one's start, then each at its RMC")
    func ggaFirst() {
        var stage = EpochStage()
        // Epoch 0: GGA (no course), RMC (course) — nothing learned yet: it stays open.
        #expect(Self.out(stage.add(Self.report(0), uptime: nil)).isEmpty)
        #expect(Self.out(stage.add(Self.report(0, course: 90), uptime: nil)).isEmpty)
        // Epoch 1's GGA closes epoch 0: its last report, the RMC's.
        let closed = Self.out(stage.add(Self.report(1), uptime: nil))
        #expect(closed.map(\.course) == [90])
        // Learnt: two reports an epoch. Epoch 1 goes at its RMC, at once.
        let complete = Self.out(stage.add(Self.report(1, course: 91), uptime: nil))
        #expect(complete.map(\.course) == [91] && complete.first?.time == Self.start.addingTimeInterval(1))
        #expect(stage.isEmpty)
        // An epoch whose RMC was lost (one report) waits for the next epoch, then goes as it is.
        #expect(Self.out(stage.add(Self.report(2), uptime: nil)).isEmpty)
        let lost = Self.out(stage.add(Self.report(3), uptime: nil))
        #expect(lost.map(\.time) == [Self.start.addingTimeInterval(2)] && lost.first?.course == nil)
        #expect(!stage.isEmpty, "epoch 3 open")
        // One short cycle does not teach one report an epoch (the larger of the last two counts):
        // epoch 3 waits for its RMC.
        let later = Self.out(stage.add(Self.report(3, course: 93), uptime: nil))
        #expect(later.map(\.course) == [93])
        // Epoch 4 is complete again at its second report.
        #expect(Self.out(stage.add(Self.report(4), uptime: nil)).isEmpty)
        #expect(Self.out(stage.add(Self.report(4, course: 94), uptime: nil)).map(\.course) == [94])
        // An epoch skipped (6 is missing: gpsd reported nothing of it): learnt again from 7 on.
        #expect(Self.out(stage.add(Self.report(5), uptime: nil)).isEmpty)
        #expect(Self.out(stage.add(Self.report(5, course: 95), uptime: nil)).map(\.course) == [95])
        #expect(Self.out(stage.add(Self.report(7), uptime: nil)).isEmpty, "waits: its cycle may have changed")
        #expect(Self.out(stage.add(Self.report(7, course: 97), uptime: nil)).isEmpty)
        #expect(Self.out(stage.add(Self.report(8), uptime: nil)).map(\.course) == [97])
    }

    @Test("a receiver with its RMC at 1 Hz and its GGA at 10 Hz (rst39): two reports on the second, one between")
    func mixedRates() {
        var stage = EpochStage()
        var delivered: [Fix] = []
        for tenth in 0..<35 {
            let seconds = Double(tenth) / 10
            delivered += Self.out(stage.add(Self.report(seconds), uptime: nil))
            if tenth % 10 == 0 { delivered += Self.out(stage.add(Self.report(seconds, course: seconds), uptime: nil)) }
        }
        // Every epoch once (the last as soon as its tenth had been learned); each on the second
        // with its RMC's course, though the tenths between had taught one report an epoch.
        #expect(delivered.count == 35)
        #expect(delivered.filter { $0.course != nil }.map(\.course) == [0, 1, 2, 3])
    }

    @Test("the source's end, or a stuck time live, lets an open epoch go; a report without time goes at once")
    func endsAndEdges() {
        var stage = EpochStage()
        #expect(Self.out(stage.add(Self.report(0), uptime: 100)).isEmpty)
        var flushed: [EpochStage.Report] = []
        stage.flush(into: &flushed)
        #expect(flushed.map(\.fix.time) == [Self.start] && stage.isEmpty)
        // A receiver repeating one time: the epoch goes once its time has been repeated for
        // more than a second of arrival time.
        var stuck = EpochStage()
        #expect(Self.out(stuck.add(Self.report(0), uptime: 100)).isEmpty)
        #expect(Self.out(stuck.add(Self.report(0), uptime: 100.5)).isEmpty)
        #expect(Self.out(stuck.add(Self.report(0), uptime: 101.2)).count == 1)
        // No time: no epoch's.
        var timeless = Self.report(0)
        timeless.time = nil
        #expect(Self.out(stage.add(timeless, uptime: nil)).count == 1)
    }

    @Test("live, a receiver that goes quiet after its first epoch: that epoch goes when the staleness timer fires")
    func quietAfterOne() {
        var engine = LocationEngineTests.engine()
        let t0 = Self.start
        _ = engine.start(.continuous, now: t0)
        #expect(LocationEngineTests.delivered(engine.handle(.fix(Self.report(0)), now: t0, uptime: 0)).isEmpty)
        let fired = engine.timerFired(.staleness, now: t0 + 3)
        #expect(LocationEngineTests.delivered(fired).map(\.timestamp) == [t0], "the open epoch, not silence")
    }

    @Test("two receivers through one gpsd: each its own epochs")
    func perReceiver() {
        var stage = EpochStage()
        for second in 0..<4 {
            let time = Double(second)
            let a = Self.out(stage.add(Self.report(time, course: 1, device: "/dev/ttyACM0"), uptime: nil))
            let b = Self.out(stage.add(Self.report(time + 0.5, course: 2, device: "/dev/ttyUSB0"), uptime: nil))
            // Interleaved, they do not close each other's epochs: each goes when its own next
            // begins, then (one report an epoch, learnt) at once.
            #expect(a.allSatisfy { $0.device == "/dev/ttyACM0" } && b.allSatisfy { $0.device == "/dev/ttyUSB0" })
            #expect(a.count == [0, 2, 1, 1][second])
        }
    }

    /// A report of the epoch at `seconds` without a fix (a GGA of quality 0, an RMC `V`).
    static func noFix(_ seconds: Double) -> Fix {
        Fix(mode: .noFix, time: start.addingTimeInterval(seconds), device: nil)
    }

    @Test("an outage: no-fix reports go at once; the first fix after it waits for the next epoch and teaches nothing")
    func afterOutage() {
        var stage = EpochStage()
        // Learnt before the outage: one report an epoch.
        #expect(Self.out(stage.add(Self.report(0, course: 1), uptime: nil)).isEmpty)
        #expect(Self.out(stage.add(Self.report(1, course: 1), uptime: nil)).count == 2)
        // No fix: each report goes on at once (the app is told why), nothing is held.
        #expect(Self.out(stage.add(Self.noFix(2), uptime: nil)).map(\.mode) == [.noFix])
        #expect(Self.out(stage.add(Self.noFix(2), uptime: nil)).map(\.mode) == [.noFix])
        #expect(Self.out(stage.add(Self.noFix(3), uptime: nil)).map(\.mode) == [.noFix])
        // The fix returns mid-cycle (haicom-305N: the GGA still without, the RMC with), and gpsd now
        // reports two an epoch: the old count (one) is not trusted — the epoch waits for the next.
        #expect(Self.out(stage.add(Self.noFix(4), uptime: nil)).map(\.mode) == [.noFix])
        #expect(Self.out(stage.add(Self.report(4, course: 4), uptime: nil)).isEmpty)
        #expect(Self.out(stage.add(Self.report(5), uptime: nil)).map(\.course) == [4])
        // Epoch 5 is the first of the new run: nothing learnt yet, it waits for epoch 6 too.
        #expect(Self.out(stage.add(Self.report(5, course: 5), uptime: nil)).isEmpty)
        #expect(Self.out(stage.add(Self.report(6), uptime: nil)).map(\.course) == [5])
        // Learnt from epoch 5: two reports; epoch 6 goes at its second, with the course.
        #expect(Self.out(stage.add(Self.report(6, course: 6), uptime: nil)).map(\.course) == [6])
    }

    @Test("epochs 10 ms apart are two epochs (sl869: :43.990, then :44.000)")
    func closeEpochs() {
        var stage = EpochStage()
        #expect(Self.out(stage.add(Self.report(43.99, course: 1), uptime: nil)).isEmpty)
        // :44.000 begins an epoch of its own: :43.990 is complete.
        #expect(Self.out(stage.add(Self.report(44, course: 2), uptime: nil)).map(\.course) == [1])
        #expect(Self.out(stage.add(Self.report(45, course: 3), uptime: nil)).map(\.course) == [2, 3])
    }
}
extension RealGPSD.LaneD {
    /// The issue's receiver: SiRF's order (GGA, GSA, GSV, RMC) with one RMC lost, after which
    /// gpsd reports every epoch twice — at its GGA (no course, a speed from positions) and at its
    /// RMC (the receiver's). `fixtures/gga-first-1hz-gp.nmea` (nmea-sim --order gga-first).
    @Suite(
        "every epoch whole: a GGA-first receiver replayed through both paths",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason), .timeLimit(.minutes(5)))
    struct GGAFirstReplayTests {
        static let fixture = Paths.fixtures.appendingPathComponent("gga-first-1hz-gp.nmea")

        /// The receiver's own course and speed (m/s) of each epoch, from its RMCs, by time of day.
        static func receiverMotion() throws -> [String: (course: Double, speed: Double)] {
            var motion: [String: (Double, Double)] = [:]
            for line in try String(contentsOf: fixture, encoding: .utf8).split(whereSeparator: \.isNewline)
            where line.hasPrefix("$GPRMC") {
                let fields = line.split(separator: ",", omittingEmptySubsequences: false)
                let hms = fields[1]
                let key = "\(hms.prefix(2)):\(hms.dropFirst(2).prefix(2)):\(hms.dropFirst(4).prefix(2))"
                motion[key] = (Double(fields[8])!, Double(fields[7])! * 1852 / 3600)
            }
            return motion
        }

        @Test(
            "each epoch once, with the receiver's course and speed",
            arguments: [
                ["--via", "nmea", "--fast"], ["--via", "nmea", "--speed", "20"], ["--via", "gpsd", "--fast"],
                ["--via", "gpsd", "--speed", "20"],
            ])
        func receiverCourse(_ how: [String]) async throws {
            let run = try await GPSLocBinary.run(["replay", Self.fixture.path, "--json", "--max-age", "1e9"] + how)
            let locations = GPSLocBinary.jsonLines(run.stdout).filter { $0["type"] as? String == "location" }
            let motion = try Self.receiverMotion()
            let times = locations.compactMap { ($0["timestamp"] as? String).map { String($0.dropFirst(11).prefix(8)) } }
            // 120 epochs, one with its RMC lost, which gpsd reports not at all (its GGA was no cycle
            // end yet): 119, each once.
            #expect(times.count == 119 && Set(times).count == 119, "\(how): \(times.count) locations")
            var wrong: [String] = []
            for (time, location) in zip(times, locations) {
                guard let expected = motion[time] else { continue }
                let course = (location["course"] as? NSNumber)?.doubleValue
                let speed = (location["speed"] as? NSNumber)?.doubleValue
                let courseRight = course.map { abs($0 - expected.course) <= 0.001 } ?? false
                let speedRight = speed.map { abs($0 - expected.speed) <= 0.001 } ?? false
                if !courseRight || !speedRight {
                    wrong.append("\(time): course \(course ?? -1), speed \(speed ?? -1)")
                }
            }
            #expect(wrong.isEmpty, "\(how): \(wrong.count) epochs without the receiver's motion: \(wrong.prefix(3))")
        }
    }
}

extension RealGPSD.LaneB {
    /// #49, live: a receiver on a pseudo-terminal behind a real gpsd, stepped — each cycle written
    /// (in one burst, or a sentence at a time as on a 9600-baud line), and after a warm-up of four
    /// epochs the next only once the manager has delivered this one. An engine that held an epoch
    /// for the next one (or for a timer) would never deliver it. Figures: BENCHMARKS.md,
    /// `gpsloc-bench epochs`.
    @Suite(
        "every epoch whole, live: no wait for the next epoch, beside gpspipe",
        .enabled(
            if: Conditions.gpsdAvailable && FileManager.default.isExecutableFile(atPath: "/usr/bin/gpspipe"),
            Conditions.gpsdMissingReason),
        .timeLimit(.minutes(5)))
    struct LiveEpochTests {
        @Test(
            "each epoch once, complete, at the cycle's last sentence",
            arguments: EpochLatencyProbe.Order.allCases, [9600, nil] as [Int?])
        func liveEpochs(_ order: EpochLatencyProbe.Order, baud: Int?) async throws {
            let outcome = try await EpochLatencyProbe.run(order: order, baud: baud, cycles: 10)
            let how = "\(order.rawValue), \(baud.map { "\($0) baud" } ?? "burst")"
            #expect(outcome.waitedForNext.isEmpty, "\(how): held until the next epoch: \(outcome.waitedForNext)")
            #expect(outcome.incomplete.isEmpty, "\(how): \(outcome.incomplete)")
            #expect(outcome.strays.isEmpty && outcome.errors.isEmpty, "\(how): \(outcome.strays) \(outcome.errors)")
            // What the engine adds to gpsd's own client: a fraction of a millisecond when idle. A
            // location held for the engine's one-second timer would be a second behind gpspipe.
            let added = (outcome.warmup..<outcome.epochs.count).compactMap { index in
                outcome.ourDelays[index].flatMap { ours in outcome.gpsdDelays[index].map { ours - $0 } }
            }
            #expect(added.count == outcome.epochs.count - outcome.warmup, "\(how): gpspipe saw \(added.count) epochs")
            let median = try #require(EpochLatencyProbe.percentile(added, 50))
            #expect(median < 0.25, "\(how): \(median * 1000) ms after gpspipe")
        }
    }
}
