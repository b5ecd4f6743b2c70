import Dispatch
import Foundation
import GNSSCore

/// The dispatch timers behind `LocationEngine`'s `arm`/`cancel` actions, for the drivers
/// (`CLLocationManager`, gpsloc). Each timer is made on first use and fires `fired` once per
/// arming; nothing wakes up while none is armed.
package final class EngineTimers: Sendable {
    private let timers = Locked<[LocationEngine.Timer: any DispatchSourceTimer]>([:])
    private let fired: @Sendable (LocationEngine.Timer) -> Void

    /// `fired` runs on a global queue; it feeds `engine.timerFired(timer, now:)`.
    package init(fired: @escaping @Sendable (LocationEngine.Timer) -> Void) { self.fired = fired }

    deinit { for timer in timers.withLock({ Array($0.values) }) { timer.cancel() } }

    package func arm(_ timer: LocationEngine.Timer, after seconds: TimeInterval) {
        source(timer).schedule(deadline: .now() + max(0, seconds), repeating: .never, leeway: .milliseconds(50))
    }

    package func cancel(_ timer: LocationEngine.Timer) {
        timers.withLock { $0[timer] }?.schedule(deadline: .distantFuture)
    }

    package func cancelAll() {
        for timer in timers.withLock({ Array($0.values) }) { timer.schedule(deadline: .distantFuture) }
    }

    private func source(_ timer: LocationEngine.Timer) -> any DispatchSourceTimer {
        timers.withLock { timers in
            if let existing = timers[timer] { return existing }
            let source = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
            let fired = self.fired
            source.setEventHandler { fired(timer) }
            source.schedule(deadline: .distantFuture)
            source.resume()
            timers[timer] = source
            return source
        }
    }
}
