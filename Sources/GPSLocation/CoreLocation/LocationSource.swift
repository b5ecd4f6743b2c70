import Dispatch
import Foundation

/// What a location source reports to a manager.
public enum LocationSourceEvent: Sendable {
    case fix(Fix)
    case sky(SkyView)
    case device(DeviceEvent)
    /// Something went wrong; `terminal` when the source has stopped for good.
    case problem(CLError, terminal: Bool)
}

/// Where a `CLLocationManager` gets fixes: gpsd (the default), a replay, or a test's list.
/// `start` must not block; events arrive on the source's own queue, in order.
public protocol LocationSource: AnyObject, Sendable {
    func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void)
    func stop()
    /// "Now" for staleness checks: the wall clock for live sources, the recording's clock for replays.
    func now(latestFix: Fix) -> Date
}

extension LocationSource {
    public func now(latestFix: Fix) -> Date { Date() }
}

/// gpsd through libgps, as a `LocationSource`. It reconnects when gpsd goes away or is not
/// there yet (`ReconnectPolicy`), reporting the loss once as a non-terminal
/// `CLError.locationUnknown` whose `underlyingError` is the `GPSDError`.
public final class GPSDLocationSource: LocationSource {
    public let endpoint: GPSDEndpoint
    public let reconnect: ReconnectPolicy?
    private let noDataTimeout: Duration
    private let lock = NSLock()
    // Guarded by `lock`.
    nonisolated(unsafe) private var source: GPSDSource?

    public init(endpoint: GPSDEndpoint = GPSDEndpoint(), noDataTimeout: Duration = .seconds(5), reconnect: ReconnectPolicy? = ReconnectPolicy()) {
        self.endpoint = endpoint
        self.noDataTimeout = noDataTimeout
        self.reconnect = reconnect
    }

    public func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) {
        let source = GPSDSource(endpoint: endpoint, noDataTimeout: noDataTimeout, reconnect: reconnect)
        lock.withLock { self.source = source }
        source.start { event in
            switch event {
            case .connected, .report(.other): break
            case .report(.fix(let fix)): handler(.fix(fix))
            case .report(.sky(let sky)): handler(.sky(sky))
            case .report(.device(let device)): handler(.device(device))
            case .noData(let error):
                handler(.problem(CLError(.locationUnknown, message: error.description, underlyingError: error), terminal: false))
            case .reconnecting(let error, let attempt, let delay):
                if attempt == 1 {
                    let message = error.description + String(format: " Reconnecting (next try in %.1f s).", delay)
                    handler(.problem(CLError(.locationUnknown, message: message, underlyingError: error), terminal: false))
                }
            case .failed(let error):
                handler(.problem(CLError(.locationUnknown, message: error.description, underlyingError: error), terminal: true))
            }
        }
    }

    public func stop() {
        let source = lock.withLock { () -> GPSDSource? in
            defer { self.source = nil }
            return self.source
        }
        source?.stop()
    }
}

/// A fixed list of fixes delivered in order on a private queue — for tests and examples.
/// "Now" is the latest fix time seen, so staleness follows the list's own clock.
public final class FixListSource: LocationSource {
    private let fixes: [Fix]
    private let queue = DispatchQueue(label: "gpslocation.fixlist")
    private let onQueue = DispatchSpecificKey<Bool>()
    private let interval: Double
    private let lock = NSLock()
    nonisolated(unsafe) private var running = false  // guarded by `lock`
    nonisolated(unsafe) private var latest: Date?  // guarded by `lock`

    /// - Parameter interval: seconds between fixes (0: as fast as possible).
    public init(_ fixes: [Fix], interval: Double = 0) {
        self.fixes = fixes
        self.interval = interval
        queue.setSpecific(key: onQueue, value: true)
    }

    public func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) {
        lock.withLock { running = true }
        queue.async { [self] in
            for fix in fixes {
                guard lock.withLock({ running }) else { return }
                if let time = fix.time { lock.withLock { latest = max(latest ?? time, time) } }
                handler(.fix(fix))
                if interval > 0 { Thread.sleep(forTimeInterval: interval) }
            }
        }
    }

    public func stop() {
        lock.withLock { running = false }
        // Wait for a fix being handed over right now to finish (unless this is that hand-over).
        if DispatchQueue.getSpecific(key: onQueue) == nil { queue.sync {} }
    }

    public func now(latestFix: Fix) -> Date { lock.withLock { latest ?? latestFix.time ?? Date() } }
}
