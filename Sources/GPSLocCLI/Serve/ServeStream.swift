import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// One page's Server-Sent Events (`GET /api/events`), read on its connection's own thread:
/// `locations` (a JSON array — one batch — with the id of its last location), `sky`, `status`,
/// `authorization` and `tracking`, each a JSON object as `gpsloc watch --json` prints it.
///
/// It keeps only cursors into the hub (the last location id, the versions it sent) and at most
/// one chunk of text being sent: a client that reads slowly, or never, blocks its own thread and
/// holds no more than that; when it comes back it continues from its cursor.
final class ServeStream: HTTPStream {
    /// Locations per event when catching up (a day of them goes as 173 events of 500).
    static let chunk = 500
    /// A comment line this often keeps proxies and phones from closing an idle stream, and
    /// finds a vanished client.
    static let keepAlive: Double = 15

    private struct Cursor {
        var location: Int
        var sky = 0
        var authorization = 0
        var tracking = 0
        var status: Int
        var pending: [UInt8] = []
        var offset = 0
        var started = false
        /// The first fill sends up to the newest location, published or not.
        var caughtUp = false
        var ended = false
        var waiter: Int?
    }

    private let hub: ServeHub
    private let semaphore = DispatchSemaphore(value: 0)
    private let cursor: Locked<Cursor>

    /// `after`: the `Last-Event-ID` a returning client sent (every held location after it is
    /// sent); nil for a new client, which gets the latest location and what follows.
    init(hub: ServeHub, after: Int?) {
        self.hub = hub
        let (location, status) = hub.state.withLock { state -> (Int, Int) in
            let newest = state.newestID
            // An id this server never gave (another run's) counts as a new client.
            let from = after.flatMap { $0 <= newest ? $0 : nil } ?? max(0, newest - 1)
            return (from, max(0, state.statusSequence - 1))
        }
        cursor = Locked(Cursor(location: location, status: status))
        hub.stream(opened: true)
    }

    deinit {
        if let waiter = cursor.withLock({ $0.waiter }) { hub.removeWaiter(waiter) }
        hub.stream(opened: false)
    }

    func next(max: Int) -> [UInt8]? {
        let registered = cursor.withLock { cursor -> Bool in
            defer { cursor.started = true }
            return cursor.started
        }
        if !registered {
            let token = hub.addWaiter(semaphore)
            cursor.withLock { $0.waiter = token }
        }
        while true {
            if let bytes = cursor.withLock({ cursor -> [UInt8]? in
                guard cursor.offset < cursor.pending.count else { return nil }
                let end = min(cursor.pending.count, cursor.offset + max)
                defer {
                    cursor.offset = end
                    if end == cursor.pending.count {
                        cursor.pending.removeAll(keepingCapacity: true)
                        cursor.offset = 0
                    }
                }
                return Array(cursor.pending[cursor.offset..<end])
            }) {
                return bytes
            }
            if cursor.withLock({ $0.ended }) { return nil }
            if fill() { continue }
            if semaphore.wait(timeout: .now() + Self.keepAlive) == .timedOut {
                cursor.withLock { $0.pending = Array(": keep-alive\n\n".utf8) }
            }
        }
    }

    /// Everything there is to send now, without waiting (the tests' view of a stream).
    func sendableNow() -> [UInt8] {
        var out: [UInt8] = []
        while fill() {
            let taken = cursor.withLock { cursor -> [UInt8] in
                defer {
                    cursor.pending = []
                    cursor.offset = 0
                }
                return Array(cursor.pending[cursor.offset...])
            }
            if taken.isEmpty { break }
            out += taken
        }
        return out
    }

    /// Formats what is new since the cursors into `pending`; false when nothing is.
    private func fill() -> Bool {
        var current = cursor.withLock { $0 }
        var out: [UInt8] = []
        var writer = NDJSONWriter()
        hub.state.withLock { state in
            if state.stopped {
                current.ended = true
                return
            }
            if current.authorization != state.authorizationVersion {
                current.authorization = state.authorizationVersion
                writer.authorization(
                    status: state.authorization.status, accuracy: state.authorization.accuracy,
                    reason: state.authorization.reason)
                Self.event("authorization", id: nil, line: writer.buffer, into: &out)
                writer.removeAll()
            }
            if current.tracking != state.trackingVersion {
                current.tracking = state.trackingVersion
                Self.event(
                    "tracking", id: nil, line: ServeJSON.tracking(state, replay: hub.settings.replay), into: &out)
            }
            let missed = state.statuses.filter { $0.sequence > current.status }
            for status in missed { Self.event("status", id: nil, line: status.line, into: &out) }
            current.status = state.statusSequence
            if current.sky != state.skyVersion {
                current.sky = state.skyVersion
                if let sky = state.sky, state.permits {
                    writer.sky(sky)
                    Self.event("sky", id: nil, line: writer.buffer, into: &out)
                    writer.removeAll()
                }
            }
            // A new client's first location goes at once; after it, what each batch published.
            let limit = current.caughtUp ? state.published : state.newestID
            if current.location < state.firstID - 1 {
                // Fell behind what the box holds: say how much is gone, go on from the oldest.
                let gone = state.firstID - 1 - current.location
                var line = NDJSONWriter()
                line.diagnostic(
                    code: "locationsDropped",
                    message:
                        "\(gone) locations since id \(current.location) are no longer held (the box keeps the newest \(hub.settings.capacity))"
                )
                Self.event("status", id: nil, line: line.buffer, into: &out)
                current.location = state.firstID - 1
            }
            if current.location < limit {
                let last = min(limit, current.location + Self.chunk)
                out.append(contentsOf: Array("event: locations\nid: \(last)\ndata: [".utf8))
                for id in (current.location + 1)...last {
                    guard let location = state.location(id: id) else { continue }
                    writer.location(location)
                    if id > current.location + 1 { out.append(UInt8(ascii: ",")) }
                    out.append(contentsOf: writer.buffer.dropLast())  // without its newline
                    writer.removeAll()
                }
                out.append(contentsOf: Array("]\n\n".utf8))
                current.location = last
            }
        }
        current.caughtUp = true
        current.pending = out
        current.offset = 0
        cursor.withLock { $0 = current }
        return !out.isEmpty || current.ended
    }

    /// `event: NAME`, `id: N` when given, `data: LINE` (its newline dropped), a blank line.
    static func event(_ name: String, id: Int?, line: [UInt8], into out: inout [UInt8]) {
        out.append(contentsOf: Array("event: \(name)\n".utf8))
        if let id { out.append(contentsOf: Array("id: \(id)\n".utf8)) }
        out.append(contentsOf: Array("data: ".utf8))
        out.append(contentsOf: line.last == UInt8(ascii: "\n") ? Array(line.dropLast()) : line)
        out.append(contentsOf: Array("\n\n".utf8))
    }
}
