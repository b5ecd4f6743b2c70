import Dispatch
import FoundationEssentials
import GNSSCore
import Glibc
import Synchronization

extension EngineRunner {
    /// Where a recording's source stands against the adapter, for `flowObserver`.
    enum SourceFlow: Sendable {
        /// `maximumBatch` locations wait for the adapter: the source's thread waits too.
        case heldBack
        /// The adapter caught up; the source reads on.
        case released
        /// The source has ended (told before its last event is handled).
        case ended
    }
}

/// Where a producer waits for its consumer (a recording's thread for the adapter, an adapter
/// for an async stream's reader): one condition for the process. Whoever changes what a waiter
/// waits for calls `changed()`; each waiter checks its own condition again. The condition's lock
/// is never taken while a state lock is held, so the two cannot deadlock.
public enum FlowControl {
    private static let condition = ConditionLock()
    /// Threads inside `wait`. `changed()` takes the condition only when there are any: a waiter
    /// counts itself (holding the condition) before it checks `ready()`, and a changer changes
    /// its state before it reads the count, so either the waiter sees the change or the changer
    /// sees the waiter — and then broadcasts once the waiter sleeps (it holds the condition
    /// until then).
    private static let waiters = Atomic<Int>(0)

    /// Blocks the calling thread until `ready()` is true. Never call it on a concurrency thread.
    public static func wait(until ready: () -> Bool) {
        condition.lock()
        waiters.add(1, ordering: .sequentiallyConsistent)
        defer {
            waiters.subtract(1, ordering: .sequentiallyConsistent)
            condition.unlock()
        }
        while !ready() { condition.wait() }
    }

    /// Wakes every waiter to check its condition again (cheap when none waits).
    public static func changed() {
        guard waiters.load(ordering: .sequentiallyConsistent) > 0 else { return }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }
}
