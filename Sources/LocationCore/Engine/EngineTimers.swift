import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc

/// The timers behind `LocationEngine`'s `arm`/`cancel` actions, for the drivers
/// (`CLLocationManager`, gpsloc). Each arming fires `fired` once; nothing wakes up while none
/// is armed, and re-arming a timer for later wakes nothing either.
///
/// All engines' timers share one thread (`TimerThread`) that sleeps in `poll` until the
/// earliest deadline: a fire costs one thread wake-up. Dispatch timers cost four (libdispatch's
/// event thread for the timer, a worker for the handler, the event thread again to re-arm) —
/// for a 10 Hz receiver the staleness timer alone was a third of a live client's wake-ups.
final class EngineTimers: Sendable {
    private let fired: @Sendable (LocationEngine.Timer) -> Void
    let clock: any EngineClock
    private var owner: ObjectIdentifier { ObjectIdentifier(self) }

    /// `fired` runs on the clock's thread (the shared timer thread, or the caller of
    /// `ManualEngineClock.advance`); it feeds `engine.timerFired(timer, now:)`.
    init(
        clock: any EngineClock = SystemEngineClock(), fired: @escaping @Sendable (LocationEngine.Timer) -> Void
    ) {
        self.clock = clock
        self.fired = fired
    }

    deinit { clock.cancelAll(ObjectIdentifier(self)) }

    func arm(_ timer: LocationEngine.Timer, after seconds: TimeInterval) {
        let fired = self.fired
        clock.schedule(owner, timer, after: seconds) { fired(timer) }
    }

    func cancel(_ timer: LocationEngine.Timer) { clock.cancel(owner, timer) }

    func cancelAll() { clock.cancelAll(owner) }
}

/// The time an `EngineRunner` lives by: "now" for the engine and the deadlines of its timers.
/// The system clock is the wall clock, the monotonic clock and the shared timer thread; a test
/// injects `ManualEngineClock` and moves time itself, so a timer test neither waits nor guesses.
public protocol EngineClock: Sendable {
    /// The wall clock the engine is given as "now".
    var now: Date { get }
    /// A monotonic clock in seconds (the arrival order of a live source's reports).
    var uptime: Double { get }
    /// Runs `action` once, `seconds` from now, replacing `timer`'s earlier arming for `owner`.
    func schedule(
        _ owner: ObjectIdentifier, _ timer: LocationEngine.Timer, after seconds: TimeInterval,
        _ action: @escaping @Sendable () -> Void)
    /// Disarms `timer` for `owner` (a timer not armed is left alone).
    func cancel(_ owner: ObjectIdentifier, _ timer: LocationEngine.Timer)
    /// Disarms every timer of `owner` (its runner stopped).
    func cancelAll(_ owner: ObjectIdentifier)
}

/// The real clocks: `Date()`, the monotonic clock, and the process's one timer thread.
public struct SystemEngineClock: EngineClock {
    /// The system's clocks.
    public init() {}
    /// `Date()`.
    public var now: Date { Date() }
    /// `CLOCK_MONOTONIC` in seconds.
    public var uptime: Double { LocationEngine.uptime() }
    /// Arms `timer` on the process's one timer thread.
    public func schedule(
        _ owner: ObjectIdentifier, _ timer: LocationEngine.Timer, after seconds: TimeInterval,
        _ action: @escaping @Sendable () -> Void
    ) { TimerThread.shared.schedule(owner, timer, after: seconds, action) }
    /// Disarms `timer` on the timer thread.
    public func cancel(_ owner: ObjectIdentifier, _ timer: LocationEngine.Timer) {
        TimerThread.shared.cancel(owner, timer)
    }
    /// Disarms every timer of `owner` on the timer thread.
    public func cancelAll(_ owner: ObjectIdentifier) { TimerThread.shared.cancelAll(owner) }
}

/// A clock that moves only when told (`advance(by:)`): due timers fire on the caller's thread,
/// in deadline order, with "now" set to each one's deadline. For tests of what the engine does
/// when time passes — a staleness report, a one-shot deadline — and of what it then does not do.
final class ManualEngineClock: EngineClock {
    struct Entry {
        var deadline: Double
        var sequence: Int
        var action: @Sendable () -> Void
    }
    struct State {
        var now: Date
        var uptime: Double = 1000
        var sequence = 0
        var entries: [TimerKey: Entry] = [:]
    }
    let state: Locked<State>

    init(start: Date = Date()) { state = Locked(State(now: start)) }

    var now: Date { state.withLock { $0.now } }
    var uptime: Double { state.withLock { $0.uptime } }
    /// Timers armed and not yet fired or cancelled.
    var armed: Int { state.withLock { $0.entries.count } }

    func schedule(
        _ owner: ObjectIdentifier, _ timer: LocationEngine.Timer, after seconds: TimeInterval,
        _ action: @escaping @Sendable () -> Void
    ) {
        state.withLock { state in
            state.sequence += 1
            let delay = seconds.isFinite ? max(0, seconds) : 1e9
            state.entries[TimerKey(owner: owner, timer: timer)] = Entry(
                deadline: state.uptime + delay, sequence: state.sequence, action: action)
        }
    }

    func cancel(_ owner: ObjectIdentifier, _ timer: LocationEngine.Timer) {
        state.withLock { $0.entries[TimerKey(owner: owner, timer: timer)] = nil }
    }

    func cancelAll(_ owner: ObjectIdentifier) {
        state.withLock { $0.entries = $0.entries.filter { $0.key.owner != owner } }
    }

    /// Moves both clocks `seconds` on, firing every timer that comes due on the way (one armed
    /// by a fire included, when it falls inside the step).
    func advance(by seconds: TimeInterval) {
        let target = state.withLock { $0.uptime } + seconds
        while true {
            let action = state.withLock { state -> (@Sendable () -> Void)? in
                let due = state.entries.filter { $0.value.deadline <= target }
                    .min { ($0.value.deadline, $0.value.sequence) < ($1.value.deadline, $1.value.sequence) }
                guard let due else {
                    state.now.addTimeInterval(target - state.uptime)
                    state.uptime = target
                    return nil
                }
                let entry = due.value
                state.entries[due.key] = nil
                state.now.addTimeInterval(entry.deadline - state.uptime)
                state.uptime = max(state.uptime, entry.deadline)
                return entry.action
            }
            guard let action else { return }
            action()
        }
    }
}

/// One timer of one owner.
struct TimerKey: Hashable {
    var owner: ObjectIdentifier
    var timer: LocationEngine.Timer
}

/// One thread for every `EngineTimers` in the process: a table of deadlines under a lock, and a
/// thread asleep in `read` on a monotonic timer descriptor (timerfd(2)) armed for the earliest of
/// them. Arming re-sets the descriptor only when the earliest deadline changes, and moving it later
/// wakes nothing: a live source's staleness timer, pushed on while fixes flow, never wakes the
/// thread at all (with a `poll` timeout it woke at every old deadline to sleep again — 1.7
/// wake-ups a second at 10 Hz, 5 % of a live client's CPU). Actions run on that thread, outside
/// the lock, one at a time; an action may arm and cancel timers. The actions `EngineRunner` arms
/// only enqueue their engine step on the runner's own queue: no user code runs here.
final class TimerThread: Sendable {
    static let shared = TimerThread()

    private struct Entry {
        var deadline: UInt64
        var action: @Sendable () -> Void
    }

    private struct State {
        var entries: [TimerKey: Entry] = [:]
        /// What the descriptor is armed for (monotonic ns), or `.max`: disarmed. Never later than
        /// the earliest entry's deadline, so no entry can come due unnoticed.
        var armedFor = UInt64.max
        var started = false
        /// How often the thread has woken (for tests: a deadline moved later wakes nothing).
        var wakes = 0
    }
    private let state = Locked(State())
    private let descriptor = TimerDescriptor(owner: "timer thread")

    /// The process's thread is `shared`; a test makes its own to count its wake-ups.
    init() {}

    func schedule(
        _ owner: ObjectIdentifier, _ timer: LocationEngine.Timer, after seconds: TimeInterval,
        _ action: @escaping @Sendable () -> Void
    ) {
        let delay = seconds.isFinite ? min(max(0, seconds), 1e9) : 1e9
        let deadline = Self.now() &+ UInt64(delay * 1e9)
        let start = state.withLock { state in
            let previous = state.entries.updateValue(
                Entry(deadline: deadline, action: action), forKey: TimerKey(owner: owner, timer: timer))
            if deadline < state.armedFor {
                arm(&state, for: deadline)
            } else if let previous, previous.deadline == state.armedFor, deadline > previous.deadline,
                state.entries.count <= Self.exactLimit
            {
                // The earliest deadline moved later: so does the descriptor's.
                arm(&state, for: Self.earliest(state.entries))
            }
            defer { state.started = true }
            return !state.started
        }
        if start { launch() }
    }

    /// The timer does not fire for its present arming (an action already taken off the table
    /// may still be running). The descriptor stays armed: at worst the thread wakes once for
    /// nothing.
    func cancel(_ owner: ObjectIdentifier, _ timer: LocationEngine.Timer) {
        state.withLock { $0.entries[TimerKey(owner: owner, timer: timer)] = nil }
    }

    func cancelAll(_ owner: ObjectIdentifier) {
        state.withLock { $0.entries = $0.entries.filter { $0.key.owner != owner } }
    }

    /// Wake-ups so far, and the deadline the descriptor is armed for (`.max`: none).
    var wakesAndArming: (wakes: Int, armedFor: UInt64) { state.withLock { ($0.wakes, $0.armedFor) } }

    private func arm(_ state: inout State, for deadline: UInt64) {
        state.armedFor = deadline
        descriptor.arm(for: deadline)
    }

    /// Up to this many timers armed, a moved earliest deadline re-arms the descriptor for the
    /// next one (a search of them all). Beyond it (a program with hundreds of managers) the
    /// descriptor stays armed for the old deadline, and the thread wakes there once to arm for
    /// the right one: arming stays one table update, whatever the count.
    static let exactLimit = 64

    /// The monotonic clock the deadlines count in (ns).
    static func now() -> UInt64 { TimerDescriptor.now() }

    private static func earliest(_ entries: [TimerKey: Entry]) -> UInt64 {
        entries.values.reduce(UInt64.max) { min($0, $1.deadline) }
    }

    private func launch() {
        _ = WorkerThread(name: "gpslocation.timers", stackSize: 512 * 1024) { [self] in run() }
    }

    private func run() {
        while true {
            descriptor.wait()
            let now = Self.now()
            // Take what is due; arm for the earliest of the rest.
            let due = state.withLock { state -> [Entry] in
                state.wakes += 1
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
                arm(&state, for: next)
                return due
            }
            // Several due at one wake-up (a late wake) fire in deadline order.
            for entry in due.sorted(by: { $0.deadline < $1.deadline }) { entry.action() }
        }
    }
}
