import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// A value behind a lock, for the package's shared state.
///
/// Why not `Synchronization.Mutex`: on Linux its lock is built from atomics in a module that
/// Thread Sanitizer does not instrument, so every access it guards is reported as a race
/// (measured here: `swift test --sanitize=thread` flagged the manager's pending queue, which is
/// only touched inside `withLock`). A pthread mutex is what TSan understands, so the sanitizer
/// run stays meaningful.
///
/// The value and the mutex live in memory of their own rather than in stored properties: an
/// `inout` access to a class's stored property is checked for exclusivity at run time (two
/// runtime calls), and a fast replay took this lock about 17 times per location — those checks
/// were 4 % of its instructions. The lock already makes every access exclusive.
public final class Locked<Value>: @unchecked Sendable where Value: Sendable {
    // @unchecked Sendable: `value` is only reached through `withLock`. Only for a Sendable
    // value: a lock does not make a value that holds a non-Sendable reference safe to share
    // (whoever took it out could keep using it outside the lock).
    @usableFromInline let value: UnsafeMutablePointer<Value>
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>

    public init(_ value: Value) {
        self.value = .allocate(capacity: 1)
        self.value.initialize(to: value)
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
        value.deinitialize(count: 1)
        value.deallocate()
    }

    /// Inlinable, so each caller gets a copy specialized for its value and result: the generic
    /// version moved every result through value witnesses (a retain and a release per class
    /// reference in it), once per lock taken.
    @inlinable
    public func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value.pointee)
    }
}
