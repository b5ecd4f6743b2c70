import Foundation
import GNSSCore
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

@Suite("NMEA replay source", .timeLimit(.minutes(5)))
struct ReplaySourceTests {
    /// Everything `source` reports until its end, waited for off the Swift concurrency threads.
    static func collect(_ source: NMEAReplaySource) async throws -> (fixes: [Fix], problems: [CLError]) {
        try await offConcurrencyThreads { collectBlocking(source) }
    }

    static func collectBlocking(_ source: NMEAReplaySource) -> (fixes: [Fix], problems: [CLError]) {
        let lock = NSLock()
        nonisolated(unsafe) var fixes: [Fix] = []
        nonisolated(unsafe) var problems: [CLError] = []
        let done = DispatchSemaphore(value: 0)
        source.start { event in
            switch event {
            case .fix(let fix): lock.withLock { fixes.append(fix) }
            case .problem(let error, let terminal):
                lock.withLock { problems.append(error) }
                if terminal { done.signal() }
            default: break
            }
        }
        done.wait()
        source.stop()
        return lock.withLock { (fixes, problems) }
    }

    @Test("real-time pacing follows the recording's clock, scaled by the speed")
    func pacing() async throws {
        let clock = ManualReplayClock()
        let path = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
        let (fixes, problems) = try await Self.collect(
            NMEAReplaySource(path: path, pacing: .realTime(speed: 10), clock: clock))
        let times = fixes.compactMap(\.time)
        let span = times.last!.timeIntervalSince(times.first!)
        #expect(abs(clock.slept - span / 10) < 0.5, "slept \(clock.slept) s for a \(span) s recording at 10×")
        #expect(problems.count == 1 && problems[0].reason == .sourceEnded)
    }

    @Test("as fast as possible never sleeps, and gives the same fixes")
    func fast() async throws {
        let clock = ManualReplayClock()
        let path = Paths.fixtures.appendingPathComponent("drive-10hz-multi.nmea").path
        let (fixes, _) = try await Self.collect(NMEAReplaySource(path: path, pacing: .asFastAsPossible, clock: clock))
        #expect(clock.slept == 0)
        #expect(fixes == NMEADecoder.fixes(in: try Data(contentsOf: URL(fileURLWithPath: path))).fixes)
    }

    @Test("a missing file is a clear terminal problem")
    func missing() async throws {
        let (fixes, problems) = try await Self.collect(NMEAReplaySource(path: "/nonexistent.nmea"))
        #expect(fixes.isEmpty)
        #expect(problems.first?.message.contains("cannot read the recording /nonexistent.nmea") == true)
    }

    @Test("a manager on a replay: staleness and the tunnel follow the recording's time")
    func managerOnReplay() async {
        let path = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
        let source = NMEAReplaySource(path: path, pacing: .asFastAsPossible)
        let manager = CLLocationManager(source: source, authorizer: grantedAuthorizer())
        manager.maximumBatch = .max
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.startUpdatingLocation()
        #expect(await delegate.wait { $0.errors.contains { $0.reason == .sourceEnded } })
        manager.stopUpdatingLocation()
        // 300 s recording: 8 s no fix at the start and a 15 s tunnel, each reported once by the
        // recording's clock; everything else delivered; then the end of the recording.
        #expect(delegate.locations.count == 300 - 8 - 15)
        #expect(delegate.errors.map(\.code) == [.locationUnknown, .locationUnknown, .locationUnknown])
        #expect(delegate.errors.map(\.reason) == [.stale, .stale, .sourceEnded])
        // In the stream: the first before any location (no fix yet), the second in the tunnel,
        // between locations. (Not the manager's state in the callback: a recording runs ahead.)
        let before = delegate.errorContexts.map(\.locationsBefore)
        #expect(before.first == 0 && before.count == 3)
        #expect(before.count == 3 && before[1] > 0 && before[1] < delegate.locations.count)
    }

    /// A stop and a start made from the reading thread's own callback (the engine does so when a
    /// one-shot ends and the delegate asks again at once): the first run stops, and only the new
    /// one reads — before, the old thread read on, because `running` was true again.
    @Test("a restart from the reading thread's own callback leaves one thread reading")
    func restartFromOwnThread() async throws {
        let source = NMEAReplaySource(path: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path)
        let counts = Locked((old: 0, new: 0, oldAfterRestart: 0, restarted: false))
        let done = ExitLatch()
        let fresh: @Sendable (LocationSourceEvent) -> Void = { event in
            switch event {
            case .fix: counts.withLock { $0.new += 1 }
            case .problem(_, terminal: true): done.finish(0)
            default: break
            }
        }
        source.start { event in
            guard case .fix = event else { return }
            let restart = counts.withLock { counts -> Bool in
                counts.old += 1
                if counts.restarted { counts.oldAfterRestart += 1 }
                return !counts.restarted
            }
            if restart {
                source.stop()
                source.start(fresh)
                counts.withLock { $0.restarted = true }
            }
        }
        await done.wait()
        source.stop()
        let (old, new, oldAfterRestart, _) = counts.withLock { $0 }
        #expect(old == 1 && oldAfterRestart == 0, "the first run read on after its restart")
        #expect(new > 10)
        // The second run's end is what waitUntilFinished() waits for, and it has come.
        source.waitUntilFinished()
    }

    /// A fast replay parses on one thread and calls the handler on another (`Handoff`): a stop
    /// from a third thread returns only once the handler has been called for the last time.
    @Test("a stop during a fast replay: no event reaches the handler after it returns")
    func stopDuringFastReplay() async throws {
        let path = Paths.fixtures.appendingPathComponent("drive-10hz-multi.nmea").path
        let source = NMEAReplaySource(path: path, pacing: .asFastAsPossible)
        let seen = Locked((fixes: 0, afterStop: 0, stopped: false))
        let hundred = DispatchSemaphore(value: 0)
        source.start { event in
            guard case .fix = event else { return }
            let count = seen.withLock { seen -> Int in
                seen.fixes += 1
                if seen.stopped { seen.afterStop += 1 }
                return seen.fixes
            }
            guard count == 100 else { return }
            hundred.signal()
            // Held here (a gate, not a sleep) until the other thread's stop() is under way and
            // waiting for this call: the rest of the recording is still to come.
            while !source.stopRequested { sched_yield() }
        }
        try await offConcurrencyThreads {
            hundred.wait()
            source.stop()
        }
        seen.withLock { $0.stopped = true }
        // A whole second run, start to end, while a late event of the first could still come.
        let (fixes, problems) = try await Self.collect(source)
        #expect(fixes.count > 100 && problems.last?.reason == .sourceEnded)
        let (total, afterStop, _) = seen.withLock { $0 }
        #expect(afterStop == 0, "\(afterStop) fixes after stop() returned")
        #expect(total == 100, "the first run went on after its stop (\(total) fixes of \(fixes.count))")
    }
}
