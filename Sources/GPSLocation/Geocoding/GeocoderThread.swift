import Foundation
import GNSSCore

/// The one thread geocoding requests run on. Loading the place table takes seconds (tens of
/// thousands of GeoNames entries; 11–25 s in a debug build on a busy machine), and a lookup scans
/// it. On `DispatchQueue.global()` every request that came during the load held a worker of the
/// shared global pool for all of it (three at once were seen blocked in the table's one-time
/// initializer). Here requests queue in order on a thread of their own, started at the first
/// request; the program's shared threads never wait on the table.
final class GeocoderThread: Sendable {
    static let shared = GeocoderThread()

    private struct Queue {
        var jobs: [@Sendable () -> Void] = []
        var started = false
    }
    private let queue = Locked(Queue())
    private let wake = DispatchSemaphore(value: 0)

    /// Runs `job` on the geocoding thread, after the requests before it.
    func enqueue(_ job: @escaping @Sendable () -> Void) {
        let start = queue.withLock { queue in
            queue.jobs.append(job)
            defer { queue.started = true }
            return !queue.started
        }
        if start {
            let thread = Thread { [self] in run() }
            thread.name = "gpslocation.geocoder"
            thread.start()
        }
        wake.signal()
    }

    private func run() {
        while true {
            wake.wait()
            let job = queue.withLock { queue in queue.jobs.isEmpty ? nil : queue.jobs.removeFirst() }
            job?()
        }
    }
}
