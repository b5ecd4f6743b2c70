import Foundation
import GNSSCore
import GPSLocationTesting

@testable import GPSLocation
@testable import LocationCore

/// Whether a recording's source is as far ahead of its consumer as the runner lets it be: held
/// back waiting for the consumer, or ended (the runner's `flowObserver`). A consumer that takes
/// a location only then is slower than the source by construction — no clock, no sleep.
final class SourcePace: Sendable {
    private let state = Locked((heldBack: false, ended: false, timesHeldBack: 0))
    private let changes = ChangeWaiters()
    private let condition = NSCondition()

    init(_ manager: CLLocationManager) {
        manager.runner.flowObserver = { [self] flow in
            state.withLock {
                switch flow {
                case .heldBack:
                    $0.heldBack = true
                    $0.timesHeldBack += 1
                case .released: $0.heldBack = false
                case .ended: $0.ended = true
                }
            }
            changes.changed()
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }
    }

    /// How often the source has had to wait for the consumer.
    var timesHeldBack: Int { state.withLock { $0.timesHeldBack } }

    /// The source waits for the consumer, or has nothing more to give.
    var isAhead: Bool { state.withLock { $0.heldBack || $0.ended } }

    /// Suspends until `isAhead` (false only if that takes longer than `hangLimit` seconds).
    func untilAhead(hangLimit: Double = 60) async -> Bool {
        await changes.wait(hangLimit: hangLimit) { [self] in isAhead }
    }

    /// The same, blocking the calling thread: for a delegate callback, which is synchronous.
    func untilAheadBlocking() {
        condition.lock()
        while !isAhead { condition.wait() }
        condition.unlock()
    }
}
