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
    /// True (the default) when the source's clock is the wall clock; false for replays, whose
    /// clock is the recording's own and is known only from fixes that carry a time.
    var isLive: Bool { get }
}

extension LocationSource {
    public func now(latestFix: Fix) -> Date { Date() }
    public var isLive: Bool { true }
}

/// gpsd through libgps, as a `LocationSource`. It reconnects when gpsd goes away or is not
/// there yet (`ReconnectPolicy`), reporting the loss once as a non-terminal
/// `CLError.locationUnknown` whose `underlyingError` is the `GPSDError`.
///
/// Sources for the same endpoint share one gpsd connection (reference-counted): several
/// managers in one process open one socket, and each keeps its own filters and gate. The
/// connection opens with the first started source and closes when the last one stops.
public final class GPSDLocationSource: LocationSource {
    public let endpoint: GPSDEndpoint
    private let key: SharedGPSDConnections.Key
    private let lock = NSLock()
    nonisolated(unsafe) private var subscription: UUID?  // guarded by `lock`

    public init(
        endpoint: GPSDEndpoint = GPSDEndpoint(), noDataTimeout: Duration = .seconds(5),
        reconnect: ReconnectPolicy? = ReconnectPolicy()
    ) {
        self.endpoint = endpoint
        key = SharedGPSDConnections.Key(endpoint: endpoint, noDataTimeout: noDataTimeout, reconnect: reconnect)
    }

    public func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) {
        let token = SharedGPSDConnections.shared.subscribe(key) { event in
            switch event {
            case .connected, .report(.other): break
            case .report(.fix(let fix)): handler(.fix(fix))
            case .report(.sky(let sky)): handler(.sky(sky))
            case .report(.device(let device)): handler(.device(device))
            case .report(.devices(let devices)):
                for device in devices { handler(.device(device)) }
                if devices.isEmpty {
                    let error = GPSDError.noDevice(at: self.endpoint)
                    handler(
                        .problem(
                            CLError(.locationUnknown, message: error.description, underlyingError: error),
                            terminal: false))
                }
            case .noData(let error):
                handler(
                    .problem(
                        CLError(.locationUnknown, message: error.description, underlyingError: error), terminal: false))
            case .reconnecting(let error, let attempt, let delay):
                if attempt == 1 {
                    let message = error.description + String(format: " Reconnecting (next try in %.1f s).", delay)
                    handler(
                        .problem(CLError(.locationUnknown, message: message, underlyingError: error), terminal: false))
                }
            case .failed(let error):
                handler(
                    .problem(
                        CLError(.locationUnknown, message: error.description, underlyingError: error), terminal: true))
            }
        }
        let previous = lock.withLock { () -> UUID? in
            defer { subscription = token }
            return subscription
        }
        if let previous { SharedGPSDConnections.shared.unsubscribe(key, previous) }
    }

    public func stop() {
        let token = lock.withLock { () -> UUID? in
            defer { subscription = nil }
            return subscription
        }
        if let token { SharedGPSDConnections.shared.unsubscribe(key, token) }
    }
}

/// The process-wide table of gpsd connections shared by `GPSDLocationSource`s.
final class SharedGPSDConnections: @unchecked Sendable {
    // @unchecked Sendable: `entries` is guarded by `lock`.
    static let shared = SharedGPSDConnections()

    struct Key: Hashable, Sendable {
        var endpoint: GPSDEndpoint
        var noDataTimeout: Duration
        var reconnect: ReconnectPolicy?
    }

    private struct Entry {
        var source: GPSDSource
        var subscribers: [UUID: @Sendable (GPSDEvent) -> Void]
    }

    private let lock = NSLock()
    private var entries: [Key: Entry] = [:]

    /// The number of open shared connections to `endpoint` (for tests and diagnostics).
    func connectionCount(to endpoint: GPSDEndpoint) -> Int {
        lock.withLock { entries.keys.count { $0.endpoint == endpoint } }
    }

    func subscribe(_ key: Key, _ handler: @escaping @Sendable (GPSDEvent) -> Void) -> UUID {
        let token = UUID()
        let start = lock.withLock { () -> GPSDSource? in
            if entries[key] != nil {
                entries[key]!.subscribers[token] = handler
                return nil
            }
            let source = GPSDSource(endpoint: key.endpoint, noDataTimeout: key.noDataTimeout, reconnect: key.reconnect)
            entries[key] = Entry(source: source, subscribers: [token: handler])
            return source
        }
        start?.start { [weak self] event in self?.fanOut(key, event) }
        return token
    }

    func unsubscribe(_ key: Key, _ token: UUID) {
        let stop = lock.withLock { () -> GPSDSource? in
            guard var entry = entries[key] else { return nil }
            entry.subscribers[token] = nil
            if entry.subscribers.isEmpty {
                entries[key] = nil
                return entry.source
            }
            entries[key] = entry
            return nil
        }
        stop?.stop()
    }

    private func fanOut(_ key: Key, _ event: GPSDEvent) {
        let handlers = lock.withLock { entries[key].map { Array($0.subscribers.values) } ?? [] }
        for handler in handlers { handler(event) }
        if case .failed = event {
            // The connection is gone for good: the next subscriber opens a new one.
            lock.withLock { entries[key] = nil }
        }
    }
}

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
    private let lock = NSLock()
    nonisolated(unsafe) private var running = false  // guarded by `lock`
    nonisolated(unsafe) private var latest: Date?  // guarded by `lock`

    /// - Parameters:
    ///   - interval: seconds between fixes (0: as fast as possible).
    ///   - reportsEnd: report the end of the list (default); false: just stop sending, like a
    ///     receiver that goes quiet.
    public init(_ fixes: [Fix], interval: Double = 0, reportsEnd: Bool = true) {
        self.fixes = fixes
        self.interval = interval
        self.reportsEnd = reportsEnd
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
            guard reportsEnd, lock.withLock({ running }) else { return }
            handler(
                .problem(CLError(.locationUnknown, message: "the list of \(fixes.count) fixes ended"), terminal: true))
        }
    }

    public func stop() {
        lock.withLock { running = false }
        // Wait for a fix being handed over right now to finish (unless this is that hand-over).
        if DispatchQueue.getSpecific(key: onQueue) == nil { queue.sync {} }
    }

    public func now(latestFix: Fix) -> Date { lock.withLock { latest ?? latestFix.time ?? Date() } }
    public var isLive: Bool { false }
    /// Between `start` and `stop`.
    public var isRunning: Bool { lock.withLock { running } }
}
