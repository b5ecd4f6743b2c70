import Dispatch
import FoundationEssentials

/// A thread of its own that runs jobs one at a time, in the order they were asked for: started
/// at the first job and kept for the life of the process. For work that may wait long — a disk
/// that does not answer, a table that takes seconds to load — and must hold neither the thread
/// that asked nor a worker of the shared dispatch pool (a dispatch queue would also make and end
/// a worker for each job that comes seconds apart).
public final class JobThread: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var started = false
    }
    private let name: String
    private let stackSize: Int?
    private let state = Locked(State())
    /// Signalled once per job queued.
    private let queued = DispatchSemaphore(value: 0)

    /// A thread, not started yet (`name` says what it is; `stackSize`: nil, the system's).
    public init(name: String, stackSize: Int? = nil) {
        self.name = name
        self.stackSize = stackSize
    }

    /// Runs `job` on the thread, after the jobs queued before it; returns at once.
    public func async(_ job: @escaping @Sendable () -> Void) {
        let start = state.withLock { state -> Bool in
            state.jobs.append(job)
            defer { state.started = true }
            return !state.started
        }
        if start { _ = WorkerThread(name: name, stackSize: stackSize) { [self] in run() } }
        queued.signal()
    }

    /// Runs `job` on the thread after the jobs queued before it, and returns its result; with a
    /// `timeout`, waits at most that many seconds for it (nil: it has not finished by then — it
    /// still runs, later). (Never from a job: the thread would wait for itself.)
    public func sync<Result: Sendable>(timeout: TimeInterval? = nil, _ job: @escaping @Sendable () -> Result)
        -> Result?
    {
        let done = DispatchSemaphore(value: 0)
        let result = Locked<Result?>(nil)
        async {
            let value = job()
            result.withLock { $0 = value }
            done.signal()
        }
        if let timeout {
            guard done.wait(timeout: .now() + timeout) == .success else { return nil }
        } else {
            done.wait()
        }
        return result.withLock { $0 }
    }

    private func run() {
        while true {
            queued.wait()
            let job = state.withLock { $0.jobs.removeFirst() }
            job()
        }
    }
}
