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
        /// Whether the connection decodes SKY when it opens (a source may switch it later).
        var decodesSky: Bool
        /// Whose subscribers hear the end of each burst of reports (`GPSDConnection.start`).
        var reportsBursts = false
    }

    typealias Handler = @Sendable (GPSDEvent) -> Void
    typealias BurstHandler = @Sendable () -> Void

    /// One shared connection.
    private struct Entry {
        let source: GPSDConnection
        /// Which connection this is: a key's entry is replaced when its connection failed.
        let id = UUID()
        /// Each subscriber's handler of events, and of burst ends when it asked for them.
        var subscribers: [UUID: (events: Handler, burstEnded: BurstHandler?)] = [:]
        /// What each event goes to, held by the connection's own callback: an event reaches the
        /// subscribers without looking its connection up in the table (hashing its key's host
        /// for every report of a 10 Hz receiver) or loading a weak reference.
        let fan = Fan()

        init(source: GPSDConnection) { self.source = source }

        /// Adds or removes a subscriber; the connection's trouble as of that moment (in the
        /// same critical section as the events': a subscriber hears a trouble once, either way).
        @discardableResult
        mutating func set(_ token: UUID, _ handler: Handler?, burstEnded: BurstHandler? = nil) -> GPSDEvent? {
            subscribers[token] = handler.map { ($0, burstEnded) }
            let handlers = subscribers.values.map(\.events)
            let burstHandlers = subscribers.values.compactMap(\.burstEnded)
            return fan.state.withLock { state in
                state.handlers = handlers
                state.burstHandlers = burstHandlers
                return state.trouble
            }
        }
    }

    /// A connection's subscribers and trouble, shared by its entry and its callback.
    final class Fan: Sendable {
        struct State {
            /// The subscribers' handlers, as an array: each event copies it (a retain).
            var handlers: [Handler] = []
            /// Those that asked to hear the end of each burst.
            var burstHandlers: [BurstHandler] = []
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

        /// Tells the subscribers that asked that a burst of reports has been handed over.
        func burstEnded() {
            for handler in state.withLock({ $0.burstHandlers }) { handler() }
        }
    }

    private let entries = Locked<[Key: Entry]>([:])

    /// The number of open shared connections to `endpoint` (for tests and diagnostics).
    func connectionCount(to endpoint: GPSDEndpoint) -> Int {
        entries.withLock { $0.keys.count { $0.endpoint == endpoint } }
    }

    func subscribe(_ key: Key, _ handler: @escaping Handler, burstEnded: BurstHandler? = nil) -> UUID {
        let token = UUID()
        var trouble: GPSDEvent?
        let started = entries.withLock { entries -> Entry? in
            if entries[key] != nil {
                trouble = entries[key]!.set(token, handler, burstEnded: burstEnded)
                return nil
            }
            var entry = Entry(
                source: GPSDConnection(
                    endpoint: key.endpoint, noDataTimeout: key.noDataTimeout, reconnect: key.reconnect,
                    decodesSky: key.decodesSky))
            entry.set(token, handler, burstEnded: burstEnded)
            entries[key] = entry
            return entry
        }
        if let entry = started {
            let id = entry.id
            let fan = entry.fan
            var burstEnded: BurstHandler?
            if key.reportsBursts { burstEnded = { fan.burstEnded() } }
            let events: Handler = { [weak self] event in
                fan.deliver(event)
                // The connection is gone for good: the next subscriber opens a new one.
                if case .failed = event { self?.entries.withLock { if $0[key]?.id == id { $0[key] = nil } } }
            }
            entry.source.start(events, burstEnded: burstEnded)
        }
        if let trouble {
            // Not from inside the caller's start(): its own state may be locked there.
            DispatchQueue.global().async { handler(trouble) }
        }
        return token
    }

    /// Switches SKY decoding of `key`'s connection, if it is open (`GPSDConnection.decodesSky`).
    func setDecodesSky(_ decodes: Bool, _ key: Key) {
        entries.withLock { $0[key]?.source.decodesSky = decodes }
    }

    /// Whether `key`'s connection decodes SKY now (nil: not open), for tests.
    func decodesSky(_ key: Key) -> Bool? {
        entries.withLock { $0[key]?.source.decodesSky }
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
