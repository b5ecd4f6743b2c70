import Foundation
import GNSSCore
import GPSLocation

/// A `LocationSource` driven by the test: `send` hands an event to the handler on the caller's
/// thread, synchronously, so a test decides every interleaving itself.
///
/// `sendToStoppedHandler` reproduces the race a shared connection has: an event that was
/// already on its way to a handler when `stop()` ran still reaches that handler afterwards. A
/// correct consumer ignores it.
///
/// ```swift
/// let source = ManualLocationSource(isLive: false)
/// let manager = CLLocationManager(
///     source: source,
///     authorizer: LocationAuthorizer(
///         appID: "test", initial: AuthorizationDecision(status: .authorizedAlways), isInUse: true))
/// manager.startUpdatingLocation()
/// _ = source.send(.fix(Fix(mode: .threeDimensional, time: Date(), latitude: 51.45, longitude: -2.59)))
/// ```
public final class ManualLocationSource: LocationSource {
    /// As given to `init(isLive:)`.
    public let isLive: Bool
    private let state = Locked<
        (
            current: (@Sendable (LocationSourceEvent) -> Void)?, last: (@Sendable (LocationSourceEvent) -> Void)?,
            starts: Int, stops: Int
        )
    >((nil, nil, 0, 0))
    private let changes = ChangeWaiters()

    /// A source whose events the test sends (`send(_:)`); live unless told otherwise.
    public init(isLive: Bool = true) { self.isLive = isLive }

    /// Test data: always simulated, whichever clock it follows.
    public var isSimulated: Bool { true }

    /// Keeps the handler for `send(_:)`.
    public func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) {
        state.withLock {
            $0.current = handler
            $0.last = handler
            $0.starts += 1
        }
        changes.changed()
    }

    /// Forgets the handler (see `sendToStoppedHandler(_:)`).
    public func stop() {
        state.withLock {
            $0.current = nil
            $0.stops += 1
        }
        changes.changed()
    }

    /// Suspends until `condition` holds of the source (`isRunning`, `starts`, `stops`): checked
    /// again at each start and stop, never on a timer; false after `timeout` seconds.
    public func wait(
        timeout: Double = 60, until condition: @escaping @Sendable (ManualLocationSource) -> Bool
    ) async -> Bool {
        await changes.wait(hangLimit: timeout) { [self] in condition(self) }
    }

    /// True between `start` and `stop`.
    public var isRunning: Bool { state.withLock { $0.current != nil } }
    /// How often the source was started and stopped.
    public var starts: Int { state.withLock { $0.starts } }
    /// How many times `stop()` was called.
    public var stops: Int { state.withLock { $0.stops } }

    /// Hands `event` to the running handler; returns false when the source is not running.
    @discardableResult
    public func send(_ event: LocationSourceEvent) -> Bool {
        guard let handler = state.withLock({ $0.current }) else { return false }
        handler(event)
        return true
    }

    /// Hands `event` to the last handler even though the source was stopped (see the type).
    public func sendToStoppedHandler(_ event: LocationSourceEvent) {
        state.withLock { $0.last }?(event)
    }
}
