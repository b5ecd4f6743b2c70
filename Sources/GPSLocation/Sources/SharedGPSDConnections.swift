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
        var decodesSky: Bool
    }

    typealias Handler = @Sendable (GPSDEvent) -> Void

    /// One shared connection. Its fields are guarded by the table's `lock`.
    private final class Entry: @unchecked Sendable {
        let source: GPSDSource
        var subscribers: [UUID: Handler] = [:]
        /// `subscribers`' handlers, kept as an array: each event copies it (a retain), not the
        /// dictionary's values.
        var handlers: [Handler] = []

        init(source: GPSDSource) { self.source = source }

        func set(_ token: UUID, _ handler: Handler?) {
            subscribers[token] = handler
            handlers = Array(subscribers.values)
        }
    }

    private let lock = NSLock()
    private var entries: [Key: Entry] = [:]

    /// The number of open shared connections to `endpoint` (for tests and diagnostics).
    func connectionCount(to endpoint: GPSDEndpoint) -> Int {
        lock.withLock { entries.keys.count { $0.endpoint == endpoint } }
    }

    func subscribe(_ key: Key, _ handler: @escaping Handler) -> UUID {
        let token = UUID()
        let started = lock.withLock { () -> Entry? in
            if let entry = entries[key] {
                entry.set(token, handler)
                return nil
            }
            let entry = Entry(
                source: GPSDSource(
                    endpoint: key.endpoint, noDataTimeout: key.noDataTimeout, reconnect: key.reconnect,
                    decodesSky: key.decodesSky))
            entry.set(token, handler)
            entries[key] = entry
            return entry
        }
        if let entry = started {
            entry.source.start { [weak self, weak entry] event in
                guard let self, let entry else { return }
                fanOut(key, entry, event)
            }
        }
        return token
    }

    func unsubscribe(_ key: Key, _ token: UUID) {
        let stop = lock.withLock { () -> GPSDSource? in
            guard let entry = entries[key] else { return nil }
            entry.set(token, nil)
            guard entry.subscribers.isEmpty else { return nil }
            entries[key] = nil
            return entry.source
        }
        stop?.stop()
    }

    private func fanOut(_ key: Key, _ entry: Entry, _ event: GPSDEvent) {
        let handlers = lock.withLock { entry.handlers }
        for handler in handlers { handler(event) }
        if case .failed = event {
            // The connection is gone for good: the next subscriber opens a new one.
            lock.withLock { if entries[key] === entry { entries[key] = nil } }
        }
    }
}
