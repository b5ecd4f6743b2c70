import CBrokerSupport
import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// One program connected to gpslocd: its socket, who the kernel says it is, what it asked for,
/// and its unsent output. Writes never block: what the socket does not take waits here (up to
/// `maximumPending`), and the server's loop sends it when the socket is writable again. A
/// program that stops reading loses its location lines (counted, and told when it reads again),
/// never its control replies — and never slows anyone else.
package final class BrokerClient: @unchecked Sendable {
    let fd: Int32
    let id: Int
    let identity: PeerIdentity
    /// Bytes of location lines that may wait for a program that does not read.
    static let maximumPending = 256 << 10
    /// Bytes of replies and authorization changes (never dropped) that may wait: a program that
    /// asks and never reads the answers is disconnected past this (#51: 0.7 MB of requests once
    /// queued 1.4 GB of replies).
    static let maximumReplies = 4 << 20

    private let lock = PlainLock()
    private var pending: [UInt8] = []
    /// The lines in `pending`, in order: bytes left of each (the first may be partly sent), and
    /// what it is — an AUTHORIZATION line moves ahead of lines still waiting (`sendAuthorization`).
    private var lines: [(bytes: Int, kind: LineKind)] = []
    /// Whether the first of `lines` is partly on the wire (it must be finished first).
    private var firstStarted = false
    private enum LineKind { case location, reply, authorization }
    private var closed = false
    /// The loop's epoll set, and whether it watches this connection for room to write: only while
    /// output waits. Watched always (edge-triggered), every read the program made woke the loop —
    /// a wake-up per program per cycle, and a lock taken from the reader's hand (session 38).
    private let epoll: Int32
    private var watchingWritable = false
    /// Holding lines until `uncork()`: gpslocd's reader is handing over a burst of gpsd's reports
    /// (a receiver cycle's FIX and ESTIMATE go in one write: the program wakes once a cycle).
    private var corked = false
    private var dropped = 0
    private var repliesOverflowed = false
    /// Set by the loop's thread only.
    var reader = BrokerLineReader()

    // What the program said (under the service's lock).
    var app: String?
    var watching = false
    var wantsSky = false
    var isAgent = false
    var connectedAt = Date()
    /// In use now: the foreground of a terminal (asked again every second for When In Use).
    var inUse: Bool
    /// An agent's "allow once" for this connection: it ends with the connection (and with any
    /// later decision for the app), never reaching another connection of the same app.
    var once: AuthorizationDecision?
    /// Counts the AUTHORIZATION lines queued (under `lock`). A location line is queued only if
    /// no AUTHORIZATION line was queued since its authorization was checked (`send(_:epoch:)`):
    /// after a revocation's line the program gets no fix, full or reduced.
    private var authorizationEpoch = 0

    /// `epoll`: the loop's epoll set, which this connection is in (-1: none, a test's socket).
    init(fd: Int32, id: Int, identity: PeerIdentity, epoll: Int32 = -1) {
        self.epoll = epoll
        self.fd = fd
        self.id = id
        self.identity = identity
        inUse = identity.inUse
    }

    deinit {
        if identity.pidfd >= 0 { close(identity.pidfd) }
    }

    /// The AUTHORIZATION lines queued so far: taken when a location's authorization is checked,
    /// given back to `send(_:droppable:epoch:)`.
    var epoch: Int {
        lock.lock()
        defer { lock.unlock() }
        return authorizationEpoch
    }

    /// Queues an AUTHORIZATION line: every location line checked before it and not yet queued
    /// is dropped from now on. For a program that is behind, the line goes ahead of what waits
    /// (after the line on the wire and any AUTHORIZATION lines already ahead), and the location
    /// lines waiting behind it — checked against the decision it replaces — are dropped: a
    /// program that buries itself under its own replies still learns of a revocation first
    /// (#51: 14 s, and 15 fixes after it was sent), and never reads a fix after it.
    func sendAuthorization(_ line: String) {
        lock.lock()
        defer { lock.unlock() }
        authorizationEpoch += 1
        guard !closed else { return }
        // A burst being held (`cork`) does not hold this line back: it goes now.
        defer { if corked { sendPending() } }
        guard !pending.isEmpty else {
            append(line, kind: .authorization)
            return
        }
        var index = firstStarted ? 1 : 0
        var offset = firstStarted ? lines[0].bytes : 0
        while index < lines.count, lines[index].kind == .authorization {
            offset += lines[index].bytes
            index += 1
        }
        // Behind the insertion point: keep the replies, drop the locations.
        var kept: [UInt8] = Array(pending[..<offset])
        kept.append(contentsOf: line.utf8)
        var keptLines = Array(lines[..<index])
        keptLines.append((line.utf8.count, .authorization))
        var position = offset
        for entry in lines[index...] {
            if entry.kind != .location {
                kept.append(contentsOf: pending[position..<(position + entry.bytes)])
                keptLines.append(entry)
            }
            position += entry.bytes
        }
        pending = kept
        lines = keptLines
    }

    /// Queues `line`; `droppable` lines (locations, satellites) are dropped while the program is
    /// too far behind. `epoch` (a location line): the `epoch` its authorization was checked at —
    /// if an AUTHORIZATION line has been queued since, the line is not sent.
    func send(_ line: String, droppable: Bool = false, epoch: Int? = nil) {
        _ = sendLocation(line, droppable: droppable, epoch: epoch)
    }

    /// `send`, saying whether the line was queued: false when an AUTHORIZATION line has been
    /// queued since `epoch` (the location is then not the program's, and is not kept as its last).
    func sendLocation(_ line: String, droppable: Bool, epoch: Int?, accepted: () -> Void = {}) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if let epoch, epoch != authorizationEpoch { return false }
        // Before the line can reach the program: what it was sent is known to every later
        // connection by the time it could have read it.
        accepted()
        queue(line, droppable: droppable)
        return true
    }

    /// `send`'s work, under `lock`.
    private func queue(_ line: String, droppable: Bool) {
        guard !closed else { return }
        if droppable && pending.count > Self.maximumPending {
            dropped += 1
            return
        }
        if pending.count > Self.maximumReplies {
            // It does not read what it asked for: the connection ends (the loop sees it closed).
            repliesOverflowed = true
            closed = true
            pending = []
            lines = []
            shutdown(fd, Int32(SHUT_RDWR))
            return
        }
        if dropped > 0 && pending.isEmpty {
            var note = BrokerLine("NOTICE")
            note.add("code", "brokerDropped")
            note.add(
                "message",
                "gpslocd dropped \(dropped) report(s) for this program: it did not read them in time (its other "
                    + "clients were not held up)")
            dropped = 0
            append(note.line, kind: .reply)
        }
        append(line, kind: droppable ? .location : .reply)
    }

    private func append(_ line: String, kind: LineKind) {
        if pending.isEmpty && !corked {
            let bytes = Array(line.utf8)
            let sent = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            if sent == bytes.count { return }
            if sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK {
                closed = true
                shutdown(fd, Int32(SHUT_RDWR))
                return
            }
            pending.append(contentsOf: bytes[max(sent, 0)...])
            lines = [(pending.count, kind)]
            firstStarted = sent > 0
            watchWritable(true)
        } else {
            if pending.isEmpty { firstStarted = false }
            pending.append(contentsOf: line.utf8)
            lines.append((line.utf8.count, kind))
            // Only reports wait for the burst's end: a reply (or news of gpsd) goes now, with
            // what was held before it.
            if corked && kind != .location { sendPending() }
        }
    }

    /// Holds the lines queued from now on until `uncork()`.
    func cork() {
        lock.lock()
        corked = true
        lock.unlock()
    }

    /// Sends what `cork()` held, in one write (what the socket takes; the rest when it is
    /// writable again).
    func uncork() {
        lock.lock()
        defer { lock.unlock() }
        corked = false
        sendPending()
    }

    /// Sends what waits (the socket became writable).
    func flush() {
        lock.lock()
        defer { lock.unlock() }
        sendPending()
    }

    /// `flush`'s work, under `lock`.
    private func sendPending() {
        guard !closed, !pending.isEmpty else { return }
        let sent = pending.withUnsafeBytes {
            Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
        if sent > 0 {
            pending.removeFirst(sent)
            var left = sent
            while left > 0, let first = lines.first {
                if left >= first.bytes {
                    left -= first.bytes
                    lines.removeFirst()
                    firstStarted = false
                } else {
                    lines[0].bytes -= left
                    left = 0
                    firstStarted = true
                }
            }
        } else if sent < 0 && errno != EAGAIN && errno != EWOULDBLOCK {
            closed = true
            shutdown(fd, Int32(SHUT_RDWR))
            return
        }
        watchWritable(!pending.isEmpty)
    }

    /// Watches the connection for room to write, or stops, as output waits or not (under `lock`).
    private func watchWritable(_ wanted: Bool) {
        guard epoll >= 0, wanted != watchingWritable, !closed else { return }
        watchingWritable = wanted
        // Edge-triggered either way; adding room-to-write reports it at once if there is room.
        _ = gpslocd_epoll_modify(epoll, fd, wanted ? 1 | 2 | 4 : 1 | 4, Int64(fd))
    }

    /// Its replies went unread past `maximumReplies`: the loop disconnects it.
    var overflowed: Bool {
        lock.lock()
        defer { lock.unlock() }
        return repliesOverflowed
    }

    /// Stops all output (the program is gone).
    func markClosed() {
        lock.lock()
        closed = true
        pending = []
        lines = []
        lock.unlock()
    }
}
