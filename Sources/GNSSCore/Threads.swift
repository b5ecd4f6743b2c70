import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// A thread of the package's own (`Foundation.Thread` without Foundation): a detached pthread
/// that runs `body` once. Compare with `isCurrent` to know whether code runs on it.
public struct WorkerThread: Sendable {
    /// An identifier (an integer on Linux), compared with pthread_equal.
    private let thread: pthread_t

    /// Starts `body` on a new thread. (Unnamed: Glibc's Swift module does not export
    /// `pthread_setname_np`; `name` says what it is in the code.)
    public init(name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void) {
        final class Box: Sendable {
            let body: @Sendable () -> Void
            init(_ body: @escaping @Sendable () -> Void) { self.body = body }
        }
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        if let stackSize { pthread_attr_setstacksize(&attributes, stackSize) }
        var created = pthread_t()
        let result = pthread_create(
            &created, &attributes,
            { raw in
                let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
                box.body()
                return nil
            }, box)
        pthread_attr_destroy(&attributes)
        precondition(result == 0, "cannot start a thread: \(String(cString: strerror(result)))")
        thread = created
    }

    /// True when called on this thread.
    public var isCurrent: Bool { pthread_equal(pthread_self(), thread) != 0 }

    /// True on the process's main thread (`Thread.isMainThread`): its thread id is the process
    /// id (`/proc/thread-self` names "PID/task/TID"; Glibc's Swift module has no `gettid`).
    public static var isMainThread: Bool {
        if let main = mainThread.withLock({ $0 }) { return pthread_equal(main, pthread_self()) != 0 }
        guard askKernelIsMain() else { return false }
        mainThread.withLock { $0 = pthread_self() }
        return true
    }

    /// The main thread, once it has been seen: later answers compare without a system call.
    private static let mainThread = Locked<pthread_t?>(nil)

    /// Called on the main thread by code that knows it is there (the CoreLocation face asks
    /// Foundation): the answer then holds where `/proc` is not mounted.
    public static func noteMainThread() { mainThread.withLock { $0 = pthread_self() } }

    private static func askKernelIsMain() -> Bool {
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard count > 0 else { return false }
        let text = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let parts = text.split(separator: "/")
        return parts.count == 3 && parts[0] == parts[2]
    }
}

/// A pthread mutex (`NSLock`, or `NSRecursiveLock` with `recursive`, without Foundation), which
/// Thread Sanitizer understands (see `Locked`). `ConditionLock` waits on one.
public final class PlainLock: @unchecked Sendable {
    // @unchecked Sendable: the mutex is the synchronisation itself.
    fileprivate let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// `recursive`: the holder may take it again (an adapter's callback that stops its runner).
    public init(recursive: Bool = false) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        if recursive { pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE)) }
        pthread_mutex_init(mutex, &attributes)
        pthread_mutexattr_destroy(&attributes)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func lock() { pthread_mutex_lock(mutex) }
    public func unlock() { pthread_mutex_unlock(mutex) }
}

/// A lock with a condition (`NSCondition` without Foundation): a `PlainLock` and a pthread
/// condition variable.
public final class ConditionLock: @unchecked Sendable {
    // @unchecked Sendable: the mutex and condition are the synchronisation itself.
    private let mutex = PlainLock()
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    public init() {
        condition = .allocate(capacity: 1)
        condition.initialize(to: pthread_cond_t())
        pthread_cond_init(condition, nil)
    }

    deinit {
        pthread_cond_destroy(condition)
        condition.deallocate()
    }

    public func lock() { mutex.lock() }
    public func unlock() { mutex.unlock() }
    /// Waits (the lock held) until signalled.
    public func wait() { pthread_cond_wait(condition, mutex.mutex) }
    /// Waits (the lock held) until signalled or `deadline` (wall clock) passes; false on timeout.
    public func wait(until deadline: Date) -> Bool {
        let seconds = deadline.timeIntervalSince1970
        guard seconds.isFinite else {
            wait()
            return true
        }
        let whole = seconds.rounded(.down)
        var time = timespec(tv_sec: Int(whole), tv_nsec: Int((seconds - whole) * 1e9))
        return pthread_cond_timedwait(condition, mutex.mutex, &time) != ETIMEDOUT
    }
    func signal() { pthread_cond_signal(condition) }
    public func broadcast() { pthread_cond_broadcast(condition) }
}
