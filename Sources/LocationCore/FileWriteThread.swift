import Dispatch
import FoundationEssentials
import GNSSCore

/// One thread in the process for the files kept up to date while locations come (the last
/// location of each app): their writes wait for the disk here, never on the thread that delivers
/// locations. It is started on first use and stays (a dispatch queue's worker would be made and
/// ended again at every write, twice a minute, a thread's cost each time). Jobs run one at a
/// time, in the order they were asked for.
final class FileWriteThread: Sendable {
    static let shared = FileWriteThread()

    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var started = false
    }
    private let state = Locked(State())
    /// Signalled once per job queued.
    private let queued = DispatchSemaphore(value: 0)

    /// A thread of its own (the process has `shared`; tests make their own).
    init() {}

    /// Runs `job` on the thread, after the jobs queued before it; returns at once.
    func async(_ job: @escaping @Sendable () -> Void) {
        let start = state.withLock { state -> Bool in
            state.jobs.append(job)
            defer { state.started = true }
            return !state.started
        }
        if start { _ = WorkerThread(name: "gpslocation.files", stackSize: 256 * 1024) { [self] in run() } }
        queued.signal()
    }

    /// Runs `job` on the thread after the jobs queued before it, and returns its result; with
    /// a `timeout`, waits at most that many seconds for it (nil: it has not finished by then —
    /// it still runs, later). (Never from a job: the thread would wait for itself.)
    func sync<Result: Sendable>(timeout: TimeInterval? = nil, _ job: @escaping @Sendable () -> Result) -> Result? {
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
