import Dispatch
import Foundation
import GNSSCore
import GPSLocation

/// A fixed list of fixes delivered in order on a private queue — for tests and examples.
/// "Now" is the latest fix time seen, so staleness follows the list's own clock. After the
/// last fix it reports the end as a terminal `locationUnknown` ("the list of N fixes ended"),
/// so a consumer never waits for fixes that cannot come.
public final class FixListSource: LocationSource {
    private let fixes: [Fix]
    private let queue = DispatchQueue(label: "gpslocation.fixlist")
    private let onQueue = DispatchSpecificKey<Bool>()
    private let interval: Double
    private let reportsEnd: Bool
    private let running = Locked(false)
    private let handedOver = Locked(0)
    private let changes = ChangeWaiters()

    /// A source that sends `fixes`, as a recording of them would.
    /// - Parameters:
    ///   - fixes: the fixes, sent in order.
    ///   - interval: seconds between fixes (0: as fast as possible).
    ///   - reportsEnd: report the end of the list (default); false: just stop sending, like a
    ///     receiver that goes quiet.
    public init(_ fixes: [Fix], interval: Double = 0, reportsEnd: Bool = true) {
        self.fixes = fixes
        self.interval = interval
        self.reportsEnd = reportsEnd
        queue.setSpecific(key: onQueue, value: true)
    }

    /// Sends the fixes in order on a queue of its own.
    public func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) {
        running.withLock { $0 = true }
        changes.changed()
        queue.async { [self] in
            for fix in fixes {
                guard running.withLock({ $0 }) else { return }
                handler(.fix(fix))
                handedOver.withLock { $0 += 1 }
                changes.changed()
                if interval > 0 { Thread.sleep(forTimeInterval: interval) }
            }
            guard reportsEnd, running.withLock({ $0 }) else { return }
            handler(
                .problem(
                    CLError(.locationUnknown, message: "the list of \(fixes.count) fixes ended", reason: .sourceEnded),
                    terminal: true))
        }
    }

    /// Stops sending; waits for a fix being handed over (unless called from the handler).
    public func stop() {
        running.withLock { $0 = false }
        changes.changed()
        // Wait for a fix being handed over right now to finish (unless this is that hand-over).
        if DispatchQueue.getSpecific(key: onQueue) == nil { queue.sync {} }
    }

    /// False: a list is a recording (its fixes' own times are the clock).
    public var isLive: Bool { false }
    /// How many fixes the handler has returned from (the engine has taken them in). A test that
    /// waits for the whole list, then for the delegate queue, knows what the app will ever get.
    public var sent: Int { handedOver.withLock { $0 } }
    /// How many fixes the list holds.
    public var count: Int { fixes.count }
    /// Between `start` and `stop`.
    public var isRunning: Bool { running.withLock { $0 } }

    /// Suspends until `condition` holds of the source (`sent`, `isRunning`): checked again at
    /// each fix handed over and at start and stop, never on a timer. False if it still does not
    /// hold after `timeout` seconds (a bound on a hang).
    public func wait(timeout: Double = 60, until condition: @escaping @Sendable (FixListSource) -> Bool) async -> Bool {
        await changes.wait(hangLimit: timeout) { [self] in condition(self) }
    }
}
