import Foundation
import GNSSCore
import Testing

@testable import GPSLocation
@testable import LocationCore

/// The timers behind the engine's `arm`/`cancel` actions, on their one shared thread. Times are
/// checked loosely (the suite runs in parallel); the order and the counts are exact. "Nothing
/// else fired" is proved by a sentinel, not a sleep: the thread fires in deadline order, so once
/// a timer armed for later has fired, every earlier deadline has had its fire.
@Suite("engine timers: one thread, fires once per arming", .timeLimit(.minutes(5)))
struct EngineTimersTests {
    /// A recorder of fires: which timer, and how long after `start`.
    final class Fires: Sendable {
        let start = Date()
        let list = Watched<[(LocationEngine.Timer, TimeInterval)]>([])
        func record(_ timer: LocationEngine.Timer) {
            list.withLock { $0.append((timer, Date().timeIntervalSince(start))) }
        }
        var timers: [LocationEngine.Timer] { list.withLock { $0.map(\.0) } }
        func at(_ timer: LocationEngine.Timer) -> [TimeInterval] {
            list.withLock { $0.filter { $0.0 == timer }.map(\.1) }
        }
    }

    /// Arms a timer of its own `seconds` from now and waits for it.
    func sentinel(after seconds: TimeInterval) async -> Bool {
        let fired = Watched(false)
        let timers = EngineTimers { _ in fired.withLock { $0 = true } }
        timers.arm(.staleness, after: seconds)
        let ok = await fired.wait(timeout: 60) { $0 }
        withExtendedLifetime(timers) {}
        return ok
    }

    @Test("each armed timer fires once, in deadline order")
    func order() async throws {
        let fires = Fires()
        let timers = EngineTimers { fires.record($0) }
        // Each deadline as it really was: on a starved machine (a TSan run beside the suite) the
        // thread arming them can be held off between two arms for longer than their spacing, and
        // the fires follow the deadlines, not the order the test meant.
        // Each deadline is known to lie between the clock read just before its arm and the one
        // just after (a thread held off inside `arm` moves it by as much).
        var deadlines: [(timer: LocationEngine.Timer, earliest: TimeInterval, latest: TimeInterval)] = []
        for (timer, delay) in [
            (LocationEngine.Timer.monitoringGap, 0.15), (.staleness, 0.05), (.requestLocation, 0.10),
        ] {
            let before = Date().timeIntervalSince(fires.start)
            timers.arm(timer, after: delay)
            deadlines.append((timer, before + delay, Date().timeIntervalSince(fires.start) + delay))
        }
        #expect(await sentinel(after: 0.3))
        let sorted = deadlines.sorted { $0.earliest < $1.earliest }
        let expected = sorted.map(\.timer)
        // Deadlines whose spans overlap (or come within the clocks' difference) may fire either
        // way; otherwise in their order.
        let close = zip(sorted, sorted.dropFirst()).contains { $1.earliest - $0.latest < 0.005 }
        #expect(fires.timers.count == 3)
        if !close { #expect(fires.timers == expected, "deadlines \(deadlines)") }
        #expect(fires.at(.staleness).first! >= 0.05)
    }

    @Test("timers that came due together (the thread was busy) fire in deadline order")
    func dueTogether() async throws {
        // Another owner's action holds the shared thread for one second — bounded by the action
        // itself, so the other timer tests (the thread is the process's) wait at most that long,
        // whatever happens to this test's task — while three deadlines 0.2 s apart pass.
        let held = Watched(false)
        let blocker = EngineTimers { _ in
            held.withLock { $0 = true }
            _ = DispatchSemaphore(value: 0).wait(timeout: .now() + 1.0)
        }
        let fires = Fires()
        let timers = EngineTimers { fires.record($0) }
        blocker.arm(.staleness, after: 0)
        #expect(await held.wait(timeout: 10) { $0 })
        timers.arm(.monitoringGap, after: 0.5)
        timers.arm(.staleness, after: 0.1)
        timers.arm(.requestLocation, after: 0.3)
        #expect(await fires.list.wait(timeout: 10) { $0.count == 3 })
        #expect(fires.timers == [.staleness, .requestLocation, .monitoringGap])
        withExtendedLifetime(blocker) {}
    }

    @Test("re-arming replaces the deadline: later fires once, later; earlier wakes the thread early")
    func rearm() async throws {
        let fires = Fires()
        let timers = EngineTimers { fires.record($0) }
        timers.arm(.staleness, after: 0.05)
        timers.arm(.staleness, after: 0.3)
        timers.arm(.requestLocation, after: 30)  // the thread sleeps for this one…
        timers.arm(.requestLocation, after: 0.1)  // …and must wake for the earlier deadline
        #expect(await sentinel(after: 0.5))
        #expect(fires.at(.staleness).count == 1)
        #expect(fires.at(.staleness).first! >= 0.3, "not at the replaced deadline")
        #expect(fires.at(.requestLocation).count == 1)
        #expect(fires.at(.requestLocation).first! < 10)
    }

    /// Owners for a thread of the test's own.
    final class Owner: Sendable {}

    @Test("the timer descriptor is armed for the earliest deadline: moved later, so is it")
    func armedForTheEarliest() {
        let thread = TimerThread()
        let (first, second) = (Owner(), Owner())
        let now = Double(TimerThread.now()) / 1e9
        func armedIn() -> Double { Double(thread.wakesAndArming.armedFor) / 1e9 - now }
        thread.schedule(ObjectIdentifier(first), .staleness, after: 100) {}
        #expect((100..<150).contains(armedIn()))
        thread.schedule(ObjectIdentifier(second), .staleness, after: 50) {}
        #expect((50..<99).contains(armedIn()), "an earlier deadline re-arms it")
        thread.schedule(ObjectIdentifier(second), .staleness, after: 200) {}
        #expect((100..<150).contains(armedIn()), "the earliest moved later: armed for the next one")
        thread.schedule(ObjectIdentifier(first), .staleness, after: 300) {}
        #expect((200..<250).contains(armedIn()))
        thread.schedule(ObjectIdentifier(first), .requestLocation, after: 250) {}
        #expect((200..<249).contains(armedIn()), "a later deadline than the earliest changes nothing")
        // Past `exactLimit` timers, arming is one table update: a moved earliest deadline leaves
        // the descriptor armed for the old one (the thread wakes there once, and arms anew).
        thread.cancelAll(ObjectIdentifier(first))
        thread.cancelAll(ObjectIdentifier(second))
        let crowded = TimerThread()
        let many = (0...TimerThread.exactLimit).map { _ in Owner() }
        for (index, owner) in many.enumerated() {
            crowded.schedule(ObjectIdentifier(owner), .staleness, after: 400 + Double(index)) {}
        }
        crowded.schedule(ObjectIdentifier(first), .staleness, after: 350) {}
        let crowdedIn = { Double(crowded.wakesAndArming.armedFor) / 1e9 - now }
        #expect((350..<399).contains(crowdedIn()))
        crowded.schedule(ObjectIdentifier(first), .staleness, after: 900) {}
        #expect((350..<399).contains(crowdedIn()), "left armed for the old deadline")
        for owner in many + [first] { crowded.cancelAll(ObjectIdentifier(owner)) }
    }

    @Test("a deadline moved later wakes nothing (a live staleness timer, pushed on by every fix)")
    func movedLaterWakesNothing() async throws {
        let thread = TimerThread()
        let owner = Owner()
        let start = Date()
        thread.schedule(ObjectIdentifier(owner), .staleness, after: 2) {}
        thread.schedule(ObjectIdentifier(owner), .staleness, after: 1000) {}
        // Only when the second arming came before the first deadline does the test say anything
        // (a machine that held this thread off for seconds between two lines proves nothing).
        let movedInTime = Date().timeIntervalSince(start) < 1.5
        let fired = Watched(false)
        thread.schedule(ObjectIdentifier(owner), .requestLocation, after: 2.5) { fired.withLock { $0 = true } }
        #expect(await fired.wait(timeout: 60) { $0 })
        if movedInTime {
            #expect(thread.wakesAndArming.wakes == 1, "woken for the sentinel only, not at the old deadline")
        }
        thread.cancelAll(ObjectIdentifier(owner))
    }

    @Test("cancel, cancelAll and the end of the owner stop fires; owners are independent")
    func cancelling() async throws {
        let fires = Fires()
        let other = Fires()
        let timers = EngineTimers { fires.record($0) }
        let second = EngineTimers { other.record($0) }
        timers.arm(.staleness, after: 0.05)
        timers.arm(.requestLocation, after: 0.05)
        second.arm(.staleness, after: 0.05)
        timers.cancel(.staleness)
        var third: EngineTimers? = EngineTimers { other.record($0) }
        third!.arm(.monitoringGap, after: 0.05)
        third = nil
        #expect(await sentinel(after: 0.1))
        #expect(fires.timers == [.requestLocation])
        #expect(other.timers == [.staleness], "the second owner's staleness fired; the ended owner's did not")
        timers.arm(.staleness, after: 0.05)
        timers.cancelAll()
        #expect(await sentinel(after: 0.1))
        #expect(fires.timers == [.requestLocation])
    }

    @Test("a fire may arm again (the engine re-arms from inside timerFired)")
    func rearmFromFire() async throws {
        let count = Watched(0)
        let box = Locked<EngineTimers?>(nil)
        let timers = EngineTimers { timer in
            let fired = count.withLock { value -> Int in
                value += 1
                return value
            }
            if fired < 5 { box.withLock { $0 }?.arm(timer, after: 0.01) }
        }
        box.withLock { $0 = timers }
        timers.arm(.staleness, after: 0.01)
        #expect(await count.wait(timeout: 5) { $0 == 5 })
        #expect(await sentinel(after: 0.05), "a sixth arming would have been for 0.01 s")
        #expect(count.withLock { $0 } == 5)
        box.withLock { $0 = nil }
    }

    @Test("the injected clock: fires only when moved, in deadline order, re-armings inside a step included")
    func manualClock() {
        let clock = ManualEngineClock(start: Date(timeIntervalSince1970: 1_000))
        let fires = Locked<[(LocationEngine.Timer, Date)]>([])
        let box = Locked<EngineTimers?>(nil)
        let timers = EngineTimers(clock: clock) { timer in
            fires.withLock { $0.append((timer, clock.now)) }
            if timer == .requestLocation { box.withLock { $0 }?.arm(.monitoringGap, after: 0.5) }
        }
        box.withLock { $0 = timers }
        timers.arm(.staleness, after: 3)
        timers.arm(.requestLocation, after: 1)
        #expect(fires.withLock { $0.isEmpty } && clock.armed == 2)
        clock.advance(by: 0.99)
        #expect(fires.withLock { $0.isEmpty })
        clock.advance(by: 0.6)
        #expect(fires.withLock { $0.map(\.0) } == [.requestLocation, .monitoringGap])
        let at = fires.withLock { $0.map(\.1.timeIntervalSince1970) }
        #expect(
            at.count == 2 && abs(at[0] - 1_001) < 1e-6 && abs(at[1] - 1_001.5) < 1e-6, "now is each deadline: \(at)")
        #expect(abs(clock.now.timeIntervalSince1970 - 1_001.59) < 1e-6)
        timers.cancel(.staleness)
        clock.advance(by: 3600)
        #expect(fires.withLock { $0.count } == 2 && clock.armed == 0)
        box.withLock { $0 = nil }
    }
}
