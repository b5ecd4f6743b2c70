import Dispatch
import FoundationEssentials
import GNSSCore
import Glibc

extension EngineRunner {
    /// Where a runner hands its outputs to the adapter.
    public enum Delivery: Sendable {
        /// On the thread that produced them (the source's, or the work queue's for a timer),
        /// one at a time: gpsloc writes its output so.
        case inline
        /// On the main queue (the main actor's executor): a manager made on the main thread.
        case main
        /// On a serial queue of the adapter's (never the main queue: that is `main`).
        case queue(DispatchQueue)
        /// Through a target of the adapter's own (the CoreLocation face's: a thread's run loop,
        /// for a manager made on a thread that runs one, as Apple does).
        case performer(any DeliveryPerformer)

        /// True for the targets that run only when a program's thread lets them: the main queue
        /// and a run loop (a private queue always runs).
        var mayStall: Bool {
            switch self {
            case .inline, .queue: false
            case .main, .performer: true
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
            let thread: String? =
                if case .performer(let target) = self {
                    target.stalledThread
                } else {
                    nil
                }
            return LocationDiagnostic(
                code: "delegateThreadBlocked", .delegateThreadBlocked(seconds: seconds, thread: thread))
        }
    }
}

/// Where an adapter's own target runs the runner's deliveries (`EngineRunner.Delivery.performer`):
/// the CoreLocation face's run loop of the thread that made a manager.
public protocol DeliveryPerformer: Sendable {
    /// Runs `block` on the target at its next turn.
    func perform(_ block: @escaping @Sendable () -> Void)
    /// True when called on the target's thread.
    var isCurrent: Bool { get }
    /// The runner is gone: the target may end when nothing else keeps it.
    func release()
    /// What the stall watchdog names as not running.
    var stalledThread: String { get }
}
