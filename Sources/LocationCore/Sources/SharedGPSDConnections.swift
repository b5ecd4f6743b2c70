import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc

/// The process-wide table of gpsd connections shared by `GPSDLocationSource`s.
final class SharedGPSDConnections: Sendable {
    static let shared = SharedGPSDConnections()

    struct Key: Hashable, Sendable {
        var endpoint: GPSDEndpoint
        var noDataTimeout: Duration?
        var reconnect: ReconnectPolicy?
        var decodesSky: Bool
    }

    typealias Handler = @Sendable (GPSDEvent) -> Void

    /// One shared connection.
    private struct Entry {
        let source: GPSDConnection
        /// Which connection this is: a key's entry is replaced when its connection failed.
        let id = UUID()
        var subscribers: [UUID: Handler] = [:]
        /// `subscribers`' handlers, kept as an array: each event copies it (a retain), not the
        /// dictionary's values.
        var handlers: [Handler] = []
        /// The connection's trouble now (gpsd unreachable or lost while it retries, or silent),
        /// until it connects or reports again: a subscriber that joins meanwhile hears it at once,
        /// not at the next once-a-minute notice.
        var trouble: GPSDEvent?

        init(source: GPSDConnection) { self.source = source }

        mutating func set(_ token: UUID, _ handler: Handler?) {
            subscribers[token] = handler
            handlers = Array(subscribers.values)
        }
    }

    private let entries = Locked<[Key: Entry]>([:])

    /// The number of open shared connections to `endpoint` (for tests and diagnostics).
    func connectionCount(to endpoint: GPSDEndpoint) -> Int {
        entries.withLock { $0.keys.count { $0.endpoint == endpoint } }
    }

    func subscribe(_ key: Key, _ handler: @escaping Handler) -> UUID {
        let token = UUID()
        var trouble: GPSDEvent?
        let started = entries.withLock { entries -> Entry? in
            if entries[key] != nil {
                entries[key]!.set(token, handler)
                trouble = entries[key]!.trouble
                return nil
            }
            var entry = Entry(
                source: GPSDConnection(
                    endpoint: key.endpoint, noDataTimeout: key.noDataTimeout, reconnect: key.reconnect,
                    decodesSky: key.decodesSky))
            entry.set(token, handler)
            entries[key] = entry
            return entry
        }
        if let entry = started {
            let id = entry.id
            entry.source.start { [weak self] event in
                self?.fanOut(key, id, event)
            }
        }
        if let trouble {
            // Not from inside the caller's start(): its own state may be locked there.
            DispatchQueue.global().async { handler(trouble) }
        }
        return token
    }

    func unsubscribe(_ key: Key, _ token: UUID) {
        let stop = entries.withLock { entries -> GPSDConnection? in
            guard entries[key] != nil else { return nil }
            entries[key]!.set(token, nil)
            guard entries[key]!.subscribers.isEmpty else { return nil }
            return entries.removeValue(forKey: key)?.source
        }
        stop?.stop()
    }

    private func fanOut(_ key: Key, _ id: UUID, _ event: GPSDEvent) {
        let handlers = entries.withLock { entries -> [Handler] in
            guard let entry = entries[key], entry.id == id else { return [] }
            switch event {
            case .reconnecting(_, let attempt, _) where attempt == 1: entries[key]!.trouble = event
            case .noData: entries[key]!.trouble = event
            case .reconnecting, .failed: break
            default: if entry.trouble != nil { entries[key]!.trouble = nil }  // connected, or a report
            }
            return entry.handlers
        }
        for handler in handlers { handler(event) }
        if case .failed = event {
            // The connection is gone for good: the next subscriber opens a new one.
            entries.withLock { if $0[key]?.id == id { $0[key] = nil } }
        }
    }
}
