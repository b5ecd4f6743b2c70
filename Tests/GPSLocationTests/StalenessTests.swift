import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

extension RealGPSD.LaneA {
    @Suite("staleness: no usable fix for a few receiver cycles")
    struct StalenessTests {
        let t0 = Date(timeIntervalSince1970: 1_781_510_400)

        @Test("the automatic timeout is three learned cycles, at least 1 s")
        func automaticTimeout() {
            for (rate, expected) in [(1.0, 3.0), (10.0, 1.0), (0.2, 15.0), (2.0, 1.5)] {
                var monitor = FixStalenessMonitor()
                #expect(monitor.effectiveTimeout == 3, "a 1 s cycle is assumed before any fix")
                for index in 0..<20 {
                    let time = t0.addingTimeInterval(Double(index) / rate)
                    monitor.fix(time: time, clock: time)
                }
                #expect(abs(monitor.effectiveTimeout - expected) < 1e-9, "\(rate) Hz")
            }
            var fixed = FixStalenessMonitor(timeout: 7)
            fixed.fix(time: t0, clock: t0)
            fixed.fix(time: t0 + 0.1, clock: t0 + 0.1)
            #expect(fixed.effectiveTimeout == 7)
        }

        @Test("one outage gap does not change the learned cycle")
        func gapIgnored() {
            var monitor = FixStalenessMonitor()
            var time = t0
            for _ in 0..<8 {
                monitor.fix(time: time, clock: time)
                time += 1
            }
            time += 40  // an outage
            monitor.fix(time: time, clock: time)
            #expect(monitor.cycle == 1)
        }

        @Test("reported once per stretch, kept stale, cleared by the next fix")
        func once() {
            var monitor = FixStalenessMonitor()
            monitor.heard(clock: t0)
            var result = monitor.check(clock: t0 + 2.9)
            #expect(result == nil)
            result = monitor.check(clock: t0 + 3)
            #expect(result == 3, "no fix yet after 3 s")
            result = monitor.check(clock: t0 + 10)
            #expect(result == nil, "only once")
            #expect(monitor.isStale)
            for index in 0..<10 { monitor.fix(time: t0 + 20 + Double(index), clock: t0 + 20 + Double(index)) }
            #expect(!monitor.isStale)
            result = monitor.check(clock: t0 + 31.5)
            #expect(result == nil)
            result = monitor.check(clock: t0 + 33)
            #expect(result == 4)
            result = monitor.check(clock: t0 + 38)
            #expect(result == nil, "nothing more while stale")
            let ended = monitor.fix(time: t0 + 40, clock: t0 + 40)
            #expect(ended, "the next fix ends the stretch")
            monitor.reportedElsewhere()
            result = monitor.check(clock: t0 + 50)
            #expect(result == nil, "gpsd's loss was already reported")
            #expect(monitor.isStale)
        }

        @Test("messages say what is kept and what to do")
        func messages() {
            func words(_ silence: Double, _ last: Date?, _ rejection: FixRejection? = nil) -> String {
                CLError.Facts.stale(silence: silence, lastLocation: last, rejection: rejection).words
            }
            #expect(words(3, nil).contains("no usable position fix yet after 3.0 s"))
            let refused = words(3, nil, .missingTime)
            #expect(
                refused.contains("fixes arrive but are not used — the fix carries no time")
                    && !refused.contains("satellites"))
            let lost = words(4.2, t0)
            #expect(
                lost.contains("for 4.2 s") && lost.contains("2026-06-15T08:00:00.000Z")
                    && lost.contains("gpsloc doctor"))
        }

        @Test("a replay: the manager reports the start and the tunnel once each, and recovers silently")
        func managerReplay() async throws {
            // gpsd's own TPVs for the drive: 8 s without a fix, then a fix, a 15 s tunnel at 60 %.
            let fixes = try FixtureFixes.load("drive-1hz-gp")
            let manager = CLLocationManager(source: FixListSource(fixes), authorizer: grantedAuthorizer())
            manager.maximumBatch = .max
            let delegate = RecordingDelegate()
            manager.delegate = delegate
            manager.startUpdatingLocation()
            #expect(await delegate.wait { $0.locationCount >= 270 })
            manager.stopUpdatingLocation()
            let reports = delegate.errorContexts.filter { $0.error.reason != .sourceEnded }
            #expect(reports.map(\.error.reason) == [.stale, .stale], "\(reports.map(\.error.message))")
            // In the stream: the start (before any location), then the tunnel (between locations);
            // each recovery silent: no other error. (Not the manager's state in the callback: a
            // recording runs ahead of its delegate.)
            #expect(reports.first?.locationsBefore == 0)
            #expect(reports.last.map { $0.locationsBefore > 0 && $0.locationsBefore < delegate.locationCount } == true)
        }

        @Test("in the tunnel the last location is kept, marked stale, with its age by the recording's clock")
        func keptAndMarked() async throws {
            let fixes = try FixtureFixes.load("drive-1hz-gp")
            let tunnel = try #require(fixes.indices.dropFirst(30).first { fixes[$0].mode == .noFix })
            let lastGood = try #require(fixes[..<tunnel].last { $0.mode == .threeDimensional })
            let source = FixListSource(Array(fixes[..<(tunnel + 8)]), reportsEnd: false)
            let manager = CLLocationManager(source: source, authorizer: grantedAuthorizer())
            let delegate = RecordingDelegate()
            manager.delegate = delegate
            manager.startUpdatingLocation()
            #expect(await delegate.wait { $0.errorContexts.count == 2 })
            #expect(manager.isLocationStale)
            #expect(manager.location?.timestamp == lastGood.time, "the last location is kept")
            let silence = try #require(fixes[tunnel + 7].time).timeIntervalSince(try #require(lastGood.time))
            // The replay clock moves with each fix the list sends: wait for the last one.
            #expect(await source.wait { $0.sent == $0.count })
            #expect(manager.locationAge == silence, "\(String(describing: manager.locationAge)) vs \(silence)")
            manager.stopUpdatingLocation()
        }

        @Test("live: the timer reports a receiver that stops sending anything, once, with no events to drive it")
        func managerTimer() async throws {
            // Time is the test's: 15 fixes 0.1 s apart (their own times) arrive at one instant,
            // then the receiver says nothing; the clock is moved by hand.
            let clock = ManualEngineClock()
            let start = clock.now
            let times = (0..<15).map { start.addingTimeInterval(Double($0 - 14) * 0.1) }
            let source = LiveBurstSource(times: times)
            let manager = CLLocationManager(
                source: source, authorizer: grantedAuthorizer(), delegateQueue: nil, clock: clock)
            let delegate = RecordingDelegate()
            manager.delegate = delegate
            manager.startUpdatingLocation()
            #expect(await delegate.waitForLocations(15))
            await settled(manager)
            // Steps that binary fractions hold exactly: the clock stops on the deadline itself.
            clock.advance(by: 0.5)
            await settled(manager)
            #expect(delegate.errorContexts.isEmpty, "10 Hz → 1 s: not yet at 0.5 s")
            clock.advance(by: 0.5)
            await settled(manager)
            let report = try #require(delegate.errorContexts.first)
            #expect(report.error.reason == .stale, "\(report.error)")
            #expect(report.locationWasStale && report.managerHadLocation)
            #expect(
                report.locationAge.map { abs($0 - 1.0) < 1e-6 } == true, "\(String(describing: report.locationAge))")
            // An hour more of silence: still the one report, the location kept and aging.
            clock.advance(by: 3600)
            await settled(manager)
            #expect(delegate.errorContexts.count == 1, "once")
            #expect(manager.isLocationStale && manager.location != nil)
            #expect(manager.locationAge.map { abs($0 - 3601) < 1e-6 } == true)
            manager.stopUpdatingLocation()
            #expect(!manager.isLocationStale, "stopping forgets the state")
        }

        @Test(
            "live against a real gpsd: the tunnel is reported once and locations resume",
            .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason))
        func managerGPSD() async throws {
            // The drive around its 15 s tunnel (20 cycles before, 45 after), played at five times its rate
            // by a simulated receiver on a pseudo-terminal that a real gpsd reads.
            let text = try String(
                contentsOf: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea"), encoding: .utf8)
            var cycles: [[Substring]] = []
            for line in text.split(whereSeparator: \.isNewline) where line.hasPrefix("$") {
                if line.dropFirst(3).hasPrefix("RMC") || cycles.isEmpty { cycles.append([]) }
                cycles[cycles.count - 1].append(line)
            }
            let tunnel = try #require(cycles.indices.dropFirst(40).first { cycles[$0][0].contains(",V,") })
            let excerpt = cycles[(tunnel - 20)..<(tunnel + 60)].flatMap { $0 }.joined(separator: "\r\n")
            let receiver = try GPSDOnPseudoTerminal(recording: excerpt, interval: 0.2, loop: false)
            defer { receiver.stop() }
            let server = receiver.server

            let manager = CLLocationManager(
                source: GPSDLocationSource(endpoint: server.endpoint, noDataTimeout: .seconds(30), reconnect: nil),
                authorizer: grantedAuthorizer())
            manager.maximumLocationAge = 1e9
            manager.maximumBatch = .max
            manager.staleFixTimeout = 1  // cycles come every 0.2 s; the tunnel lasts 3 s
            let delegate = RecordingDelegate()
            manager.delegate = delegate
            manager.startUpdatingLocation()
            // Stop before the excerpt ends (which would be reported too).
            #expect(
                await delegate.wait(timeout: 30) {
                    $0.errorContexts.first.map { delegate.locationCount >= $0.locationsBefore + 15 } ?? false
                })
            manager.stopUpdatingLocation()
            // The tunnel (after locations), once, with the last location kept and marked; the
            // recovery silent. (A "no fix yet" report may come first, while gpsd starts.)
            let reports = delegate.errorContexts.filter { $0.locationsBefore > 0 }
            #expect(reports.map(\.error.reason) == [.stale], "\(reports.map(\.error.message))")
            #expect(reports.first.map { $0.managerHadLocation && $0.locationWasStale } == true)
            #expect(delegate.errorContexts.allSatisfy { $0.error.reason == .stale })
        }
    }
}

/// A live source (the wall clock is "now") that sends `count` 3D fixes at `interval` and then
/// nothing at all — a receiver unplugged while gpsd stays up.
final class LiveBurstSource: LocationSource, @unchecked Sendable {
    // @unchecked Sendable: `running` is read and written under `lock` only.
    private let times: [Date]
    private let queue = DispatchQueue(label: "test.burst")
    private let lock = NSLock()
    private var running = false

    /// Fixes with these times, sent at once (tests that move a `ManualEngineClock` themselves).
    init(times: [Date]) { self.times = times }

    func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) {
        lock.withLock { running = true }
        queue.async { [self] in
            for (index, time) in times.enumerated() {
                guard lock.withLock({ running }) else { return }
                let fix = Fix(
                    mode: .threeDimensional, time: time, latitude: 51.45,
                    longitude: -2.58 + Double(index) * 1e-5, altitudeMSL: 10,
                    errors: FixErrors(longitude: 3, latitude: 3, vertical: 5))
                handler(.fix(fix))
            }
        }
    }

    func stop() {
        lock.withLock { running = false }
        queue.sync {}
    }
}
