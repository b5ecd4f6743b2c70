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
        /// What each event goes to, held by the connection's own callback: an event reaches the
        /// subscribers without looking its connection up in the table (hashing its key's host
        /// for every report of a 10 Hz receiver) or loading a weak reference.
        let fan = Fan()

        init(source: GPSDConnection) { self.source = source }

        /// Adds or removes a subscriber; the connection's trouble as of that moment (in the
        /// same critical section as the events': a subscriber hears a trouble once, either way).
        @discardableResult
        mutating func set(_ token: UUID, _ handler: Handler?) -> GPSDEvent? {
            subscribers[token] = handler
            let handlers = Array(subscribers.values)
            return fan.state.withLock { state in
                state.handlers = handlers
                return state.trouble
            }
        }
    }

    /// A connection's subscribers and trouble, shared by its entry and its callback.
    final class Fan: Sendable {
        struct State {
            /// The subscribers' handlers, as an array: each event copies it (a retain).
            var handlers: [Handler] = []
            /// The connection's trouble now (gpsd unreachable or lost while it retries, or
            /// silent), until it connects or reports again: a subscriber that joins meanwhile
            /// hears it at once, not at the next once-a-minute notice.
            var trouble: GPSDEvent?
        }
        let state = Locked(State())

        /// Hands `event` to every subscriber, noting the trouble it is or ends.
        func deliver(_ event: GPSDEvent) {
            let handlers = state.withLock { state -> [Handler] in
                switch event {
                case .reconnecting(_, let attempt, _) where attempt == 1: state.trouble = event
                case .noData: state.trouble = event
                case .reconnecting, .failed: break
                default: if state.trouble != nil { state.trouble = nil }  // connected, or a report
                }
                return state.handlers
            }
            for handler in handlers { handler(event) }
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
                trouble = entries[key]!.set(token, handler)
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
            let fan = entry.fan
            entry.source.start { [weak self] event in
                fan.deliver(event)
                // The connection is gone for good: the next subscriber opens a new one.
                if case .failed = event { self?.entries.withLock { if $0[key]?.id == id { $0[key] = nil } } }
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
}
