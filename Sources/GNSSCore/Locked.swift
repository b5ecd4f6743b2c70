import Foundation

/// A value behind a lock, for the package's shared state.
///
/// Why not `Synchronization.Mutex`: on Linux its lock is built from atomics in a module that
/// Thread Sanitizer does not instrument, so every access it guards is reported as a race
/// (measured here: `swift test --sanitize=thread` flagged the manager's pending queue, which is
/// only touched inside `withLock`). `NSLock` is a pthread mutex, which TSan understands, so the
/// sanitizer run stays meaningful.
package final class Locked<Value>: @unchecked Sendable {
    // @unchecked Sendable: `value` is only reached through `withLock`.
    private var value: Value
    private let lock = NSLock()

    package init(_ value: Value) { self.value = value }

    package func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
