import Dispatch
import Foundation

/// The process-wide table of gpsd connections shared by `GPSDLocationSource`s.
final class SharedGPSDConnections: @unchecked Sendable {
    // @unchecked Sendable: `entries` is guarded by `lock`.
    static let shared = SharedGPSDConnections()

    struct Key: Hashable, Sendable {
        var endpoint: GPSDEndpoint
        var noDataTimeout: Duration?
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
