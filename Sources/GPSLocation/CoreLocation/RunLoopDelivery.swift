import Dispatch
import Foundation
import GNSSCore
import LocationCore

// Apple's run-loop rule for a manager's callbacks: the CoreLocation face's part of the driver's
// delivery (`EngineRunner.Delivery`, in LocationCore), since a run loop is Foundation's.

extension EngineRunner.Delivery {
    /// A manager's delivery, by Apple's rule: the run loop of the thread that creates it.
    /// On the main thread that is the main queue, which `dispatchMain()`, `RunLoop.main.run()`
    /// and an `async` main all serve. On another thread whose run loop is running (the
    /// manager is made inside a run loop callout), that run loop. Elsewhere — a dispatch
    /// queue, a Swift concurrency thread, a thread that never runs its loop — Apple's
    /// callbacks would never come; here `fallback`, a private serial queue, serves instead
    /// (`usesFallback` is then true).
    static func creatingThread(fallback: @autoclosure () -> DispatchQueue) -> (
        EngineRunner.Delivery, usesFallback: Bool
    ) {
        if Thread.isMainThread {
            // The core's own check reads /proc; Foundation knows without it.
            WorkerThread.noteMainThread()
            return (.main, false)
        }
        if RunLoop.current.currentMode != nil { return (.performer(RunLoopTarget()), false) }
        return (.queue(fallback()), true)
    }
}

/// A thread's run loop, and the thread, to deliver on. @unchecked Sendable: a run loop is
/// only ever given timers from other threads (`RunLoop.add`, which CoreFoundation locks);
/// everything else is read on its own thread.
struct RunLoopTarget: DeliveryPerformer, @unchecked Sendable {
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

    var stalledThread: String { "the run loop of the thread that created the location manager has not run" }
}
