import Dispatch
import Foundation
import GNSSCore

/// The timers behind `LocationEngine`'s `arm`/`cancel` actions, for the drivers
/// (`CLLocationManager`, gpsloc). Each arming fires `fired` once; nothing wakes up while none
/// is armed, and re-arming a timer for later wakes nothing either.
///
/// All engines' timers share one thread (`TimerThread`) that sleeps in `poll` until the
/// earliest deadline: a fire costs one thread wake-up. Dispatch timers cost four (libdispatch's
/// event thread for the timer, a worker for the handler, the event thread again to re-arm) —
/// for a 10 Hz receiver the staleness timer alone was a third of a live client's wake-ups.
package final class EngineTimers: Sendable {
    private let fired: @Sendable (LocationEngine.Timer) -> Void
    private let owner = TimerThread.Owner()

    /// `fired` runs on the shared timer thread; it feeds `engine.timerFired(timer, now:)`.
    package init(fired: @escaping @Sendable (LocationEngine.Timer) -> Void) { self.fired = fired }

    deinit { TimerThread.shared.cancelAll(owner) }

    package func arm(_ timer: LocationEngine.Timer, after seconds: TimeInterval) {
        let fired = self.fired
        TimerThread.shared.schedule(owner, timer, after: seconds) { fired(timer) }
    }

    package func cancel(_ timer: LocationEngine.Timer) { TimerThread.shared.cancel(owner, timer) }

    package func cancelAll() { TimerThread.shared.cancelAll(owner) }
}

/// One thread for every `EngineTimers` in the process: a table of deadlines under a lock, and a
/// thread sleeping in `poll` until the earliest of them (woken through a pipe only when a
/// deadline comes earlier than the one it sleeps for). Actions run on that thread, outside the
/// lock, one at a time; an action may arm and cancel timers. The actions `EngineRunner` arms only
/// enqueue their engine step on the runner's own queue: no user code runs here.
final class TimerThread: Sendable {
    static let shared = TimerThread()

    /// Identifies one `EngineTimers`.
    final class Owner: Sendable {}

    private struct Key: Hashable {
        var owner: ObjectIdentifier
        var timer: LocationEngine.Timer
    }

    private struct Entry {
        var deadline: UInt64
        var action: @Sendable () -> Void
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// The deadline the thread sleeps until (uptime ns), or `.max`: none (or not sleeping yet).
        var sleepingUntil = UInt64.max
        var started = false
    }
    private let state = Locked(State())
    private let wake = WakePipe(owner: "timer thread")

    private init() {}

    func schedule(
        _ owner: Owner, _ timer: LocationEngine.Timer, after seconds: TimeInterval,
        _ action: @escaping @Sendable () -> Void
    ) {
        let delay = seconds.isFinite ? min(max(0, seconds), 1e9) : 1e9
        let deadline = Self.uptime() &+ UInt64(delay * 1e9)
        let (start, earlier) = state.withLock { state in
            state.entries[Key(owner: ObjectIdentifier(owner), timer: timer)] = Entry(deadline: deadline, action: action)
            defer { state.started = true }
            return (!state.started, deadline < state.sleepingUntil)
        }
        if start { launch() }
        if earlier { wake.signal() }
    }

    /// The timer does not fire for its present arming (an action already taken off the table
    /// may still be running).
    func cancel(_ owner: Owner, _ timer: LocationEngine.Timer) {
        state.withLock { $0.entries[Key(owner: ObjectIdentifier(owner), timer: timer)] = nil }
    }

    func cancelAll(_ owner: Owner) {
        let id = ObjectIdentifier(owner)
        state.withLock { $0.entries = $0.entries.filter { $0.key.owner != id } }
    }

    private func launch() {
        let thread = Thread { [self] in run() }
        thread.name = "gpslocation.timers"
        thread.stackSize = 512 * 1024
        thread.start()
    }

    private func run() {
        while true {
            let now = Self.uptime()
            // Take what is due; note when the next one is.
            let (due, next) = state.withLock { state -> ([Entry], UInt64) in
                var due: [Entry] = []
                var next = UInt64.max
                for (key, entry) in state.entries {
                    if entry.deadline <= now {
                        due.append(entry)
                        state.entries[key] = nil
                    } else {
                        next = min(next, entry.deadline)
                    }
                }
                state.sleepingUntil = due.isEmpty ? next : 0
                return (due, next)
            }
            if !due.isEmpty {
                // Several due at one wake-up (a late wake) still fire in deadline order.
                for entry in due.sorted(by: { $0.deadline < $1.deadline }) { entry.action() }
                continue
            }
            wake.wait(until: next == .max ? nil : next)
        }
    }

    private static func uptime() -> UInt64 { DispatchTime.now().uptimeNanoseconds }
}
