import Dispatch
import GNSSCore

/// Waiters on a condition over state that changes by events, so a test waits for what it needs
/// instead of polling or sleeping: each `changed()` re-checks every waiter's condition and
/// resumes those that hold; `end()` (no more changes can come) resumes the rest with their
/// condition's value then. The wall-clock bound of `wait` only ends a hang: a wait whose
/// condition comes true never waits on it.
package final class ChangeWaiters: Sendable {
    private struct Waiter {
        let check: @Sendable () -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }
    private let state = Locked<(waiters: [Int: Waiter], next: Int, ended: Bool)>(([:], 0, false))

    package init() {}

    /// Re-checks every waiter (call after each change of the state the conditions read).
    package func changed() {
        let ready = state.withLock { state -> [Waiter] in
            let keys = state.waiters.filter { $0.value.check() }.map(\.key)
            return keys.compactMap { state.waiters.removeValue(forKey: $0) }
        }
        for waiter in ready { waiter.continuation.resume(returning: true) }
    }

    /// No change will come again: every waiter gets its condition's value now, and later waits
    /// return at once.
    package func end() {
        let rest = state.withLock { state -> [Waiter] in
            state.ended = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in rest { waiter.continuation.resume(returning: waiter.check()) }
    }

    /// Suspends until `condition` holds (true), or the changes end or `hangLimit` seconds pass
    /// with it false (false).
    package func wait(hangLimit: Double, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
        await withCheckedContinuation { continuation in
            // The condition is read once, under the lock: read again after it, a condition that
            // held for a moment (a source held back, then released) could already be false.
            enum Now {
                case holds, endedFalse
                case waiting(Int)
            }
            let now = state.withLock { state -> Now in
                if condition() { return .holds }
                if state.ended { return .endedFalse }
                state.next += 1
                state.waiters[state.next] = Waiter(check: condition, continuation: continuation)
                return .waiting(state.next)
            }
            let key: Int
            switch now {
            case .holds: return continuation.resume(returning: true)
            case .endedFalse: return continuation.resume(returning: false)
            case .waiting(let registered): key = registered
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + hangLimit) { [self] in
                guard let waiter = state.withLock({ $0.waiters.removeValue(forKey: key) }) else { return }
                waiter.continuation.resume(returning: waiter.check())
            }
        }
    }
}
