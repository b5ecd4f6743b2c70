import Dispatch
import Foundation

extension EngineRunner {
    /// Where a runner hands its outputs to the adapter.
    package enum Delivery: Sendable {
        /// On the thread that produced them (the source's, or the work queue's for a timer),
        /// one at a time: gpsloc writes its output so.
        case inline
        /// On the main queue (the main actor's executor): a manager made on the main thread.
        case main
        /// On a serial queue of the adapter's (never the main queue: that is `main`).
        case queue(DispatchQueue)
        /// On a thread's run loop (a manager made on a thread that runs one, as Apple does).
        case runLoop(RunLoopTarget)

        /// A manager's delivery, by Apple's rule: the run loop of the thread that creates it.
        /// On the main thread that is the main queue, which `dispatchMain()`, `RunLoop.main.run()`
        /// and an `async` main all serve. On another thread whose run loop is running (the
        /// manager is made inside a run loop callout), that run loop. Elsewhere — a dispatch
        /// queue, a Swift concurrency thread, a thread that never runs its loop — Apple's
        /// callbacks would never come; here `fallback`, a private serial queue, serves instead
        /// (`usesFallback` is then true).
        static func creatingThread(fallback: @autoclosure () -> DispatchQueue) -> (Delivery, usesFallback: Bool) {
            if Thread.isMainThread { return (.main, false) }
            if RunLoop.current.currentMode != nil { return (.runLoop(RunLoopTarget()), false) }
            return (.queue(fallback()), true)
        }

        /// True for the targets that run only when a program's thread lets them: the main queue
        /// and a run loop (a private queue always runs).
        var mayStall: Bool {
            switch self {
            case .inline, .queue: false
            case .main, .runLoop: true
            }
        }

        /// `queue` as a delivery: the main queue is recognised by its label (each
        /// `DispatchQueue.main` is a new Swift object on Linux, so identity cannot tell).
        static func on(_ queue: DispatchQueue?) -> Delivery {
            guard let queue else { return .inline }
            return queue.label == DispatchQueue.main.label ? .main : .queue(queue)
        }

        /// What the stall watchdog says: which thread is not running, and the fixes.
        func stallDiagnostic(waited seconds: TimeInterval) -> LocationDiagnostic {
            let thread =
                if case .runLoop = self {
                    "the run loop of the thread that created the location manager has not run"
                } else {
                    "the main thread has not run its run loop or the main queue"
                }
            return LocationDiagnostic(
                code: "delegateThreadBlocked",
                message: String(format: "delegate callbacks have waited %.0f s: ", seconds) + thread
                    + " (blocked in readLine(), a semaphore or a sleep?) — end the program's set-up with "
                    + "dispatchMain() or RunLoop.main.run(), or give the manager a queue of its own "
                    + "(CLLocationManager(delegateQueue: DispatchQueue(label: \"location\")) or manager.delegateQueue = …)"
            )
        }
    }

    /// A thread's run loop, and the thread, to deliver on. @unchecked Sendable: a run loop is
    /// only ever given timers from other threads (`RunLoop.add`, which CoreFoundation locks);
    /// everything else is read on its own thread.
    package struct RunLoopTarget: @unchecked Sendable {
        let runLoop: RunLoop
        let thread: pthread_t
        /// Keeps the run loop running while the manager lives (Apple's manager keeps a source of
        /// its own on it): without one, `RunLoop.run()` returns once its last timer has fired.
        let keepAlive: Timer

        /// The calling thread's run loop.
        init() {
            runLoop = RunLoop.current
            thread = pthread_self()
            keepAlive = Timer(timeInterval: 1e9, repeats: true) { _ in }
            runLoop.add(keepAlive, forMode: .common)
        }

        /// The manager is gone: the run loop may end when nothing else keeps it.
        func release() { keepAlive.invalidate() }

        var isCurrent: Bool { pthread_equal(pthread_self(), thread) != 0 }

        /// Runs `block` on the run loop, in its common modes, at its next turn. A timer due now
        /// rather than `RunLoop.perform`: adding a timer wakes a sleeping run loop, a performed
        /// block waits for something else to wake it.
        func perform(_ block: @escaping @Sendable () -> Void) {
            let timer = Timer(fire: Date.distantPast, interval: 0, repeats: false) { _ in block() }
            runLoop.add(timer, forMode: .common)
        }
    }
}
