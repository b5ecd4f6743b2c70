import CBrokerSupport
import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// gpslocd's socket and its one loop (epoll): accepts programs, identifies each by the kernel
/// (`PeerIdentity`) as it connects, reads their lines and hands them to the `BrokerService`,
/// and sends what waits for programs whose sockets were full. Every socket is non-blocking, so
/// no program — however slow, however silent — holds up another.
package final class BrokerServer: Sendable {
    let service: BrokerService
    private let listener: Int32
    private let epoll: Int32
    private let wake = WakePipe(owner: "gpslocd loop")
    private let stopping = Locked(false)
    /// The socket path this server made (removed when it stops), nil for a socket it was given.
    let socketPath: String?

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Listens on `socketPath` (made mode 0666: anyone may connect; what they get is decided
    /// per program), or on the socket systemd passed (`LISTEN_FDS`, fd 3) when `socketPath` is nil.
    package init(
        service: BrokerService, socketPath: String?, requestsPerSecond: Double? = nil
    ) throws(Failure) {
        self.service = service
        requestsPerSecondPerUid = requestsPerSecond ?? Self.defaultRequestsPerSecond
        self.socketPath = socketPath
        if let socketPath {
            listener = try Self.listen(at: socketPath)
        } else {
            guard ProcessInfo.processInfo.environment["LISTEN_FDS"] == "1" else {
                throw Failure(description: "no --socket given and no socket passed by systemd (LISTEN_FDS)")
            }
            listener = 3
            _ = fcntl(listener, F_SETFD, FD_CLOEXEC)
        }
        _ = fcntl(listener, F_SETFL, fcntl(listener, F_GETFL) | O_NONBLOCK)
        epoll = gpslocd_epoll_create()
        guard epoll >= 0 else { throw Failure(description: "epoll_create1: \(String(cString: strerror(errno)))") }
        gpslocd_epoll_add(epoll, listener, 1, -1)
        gpslocd_epoll_add(epoll, wake.readDescriptor, 1, -2)
    }

    /// Why `folder` cannot hold gpslocd's socket or state, or nil when it can: it must be a real
    /// folder (not a link), owned by gpslocd's user (or root, for the socket's), and writable by
    /// no one else — a folder another user can write lets them swap what gpslocd reads and
    /// writes there (#51: a world-writable `--state` let one user take another's grant).
    package static func unsafeFolder(_ folder: String, allowRoot: Bool) -> String? {
        var status = stat()
        guard lstat(folder, &status) == 0 else {
            return "\(folder) cannot be read: \(String(cString: strerror(errno)))"
        }
        guard status.st_mode & S_IFMT == S_IFDIR else { return "\(folder) is not a folder (a link or a file)" }
        let owners: Set<uid_t> = allowRoot ? [geteuid(), 0] : [geteuid()]
        guard owners.contains(status.st_uid) else {
            return "\(folder) belongs to uid \(status.st_uid), not to gpslocd's user (uid \(geteuid()))"
        }
        guard status.st_mode & (S_IWGRP | S_IWOTH) == 0 else {
            return "others can write in \(folder) (mode \(String(status.st_mode & 0o7777, radix: 8))): "
                + "make it 0755 or 0700 (`chmod go-w \(folder)`)"
        }
        return nil
    }

    private static func listen(at path: String) throws(Failure) -> Int32 {
        let folder = parentFolder(of: path)
        try? FileManager.default.createDirectory(
            atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        if let problem = unsafeFolder(folder, allowRoot: true) {
            throw Failure(description: "refusing the socket folder: \(problem)")
        }
        var status = stat()
        if lstat(path, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFSOCK else {
                throw Failure(description: "\(path) exists and is not a socket — remove it or choose another --socket")
            }
            // A socket some gpslocd still answers on is never taken over: the first would be
            // left running and unreachable.
            let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            let answered = BrokerProtocol.withSocketAddress(path) { connect(probe, $0, $1) } == 0
            close(probe)
            if answered {
                throw Failure(
                    description: "another gpslocd is listening on \(path) — stop it first (`systemctl stop gpslocd`), "
                        + "or choose another --socket")
            }
            unlink(path)
        }
        // Bound in a private folder and given its mode there, then moved into place: the socket
        // is never reachable, nor its path swappable, before it is 0666 (#51: bind then chmod on
        // the final path once made a root-owned 0600 file 0666).
        let staging = "\(folder)/.gpslocd-bind-\(getpid())"
        rmdir(staging)
        guard mkdir(staging, 0o700) == 0 else {
            throw Failure(description: "cannot make \(staging): \(String(cString: strerror(errno)))")
        }
        defer { rmdir(staging) }
        let staged = "\(staging)/socket"
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard let bound = BrokerProtocol.withSocketAddress(staged, { bind(fd, $0, $1) }) else {
            close(fd)
            throw Failure(description: "the socket path \(path) is too long")
        }
        guard bound == 0, chmod(staged, 0o666) == 0, Glibc.listen(fd, 512) == 0, rename(staged, path) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            unlink(staged)
            throw Failure(description: "cannot listen on \(path): \(reason)")
        }
        return fd
    }

    /// Connections one uid may hold at once: a program that opens more is refused with a
    /// reason (each costs gpslocd two descriptors; another uid's programs must still get in).
    static let connectionsPerUid = 1024
    /// Connections accepted per turn of the loop, and bytes read from one program per turn:
    /// a program that floods requests, or a flood of connections, waits its turn like the rest
    /// (#51: it once kept every other WELCOME and a revocation waiting for seconds).
    static let acceptsPerTurn = 32
    static let bytesPerTurn = 4 << 10
    /// Requests (lines) the programs of one uid may make per second, together, after a burst of
    /// twice that: past it gpslocd stops reading that uid's programs until the budget has grown
    /// again (their own writes then block — the kernel's backpressure, no memory here); a
    /// throttled uid is read again once it has regained a tenth of a second's budget.
    /// #51: one program flooding WHO requests kept gpslocd's loop at 0.6 of a core and other
    /// programs' fixes 52 ms late at p99 (`scripts/soak-broker.py --only flood`).
    /// (`gpslocd --requests-per-second`.)
    static let defaultRequestsPerSecond = 400.0
    private let requestsPerSecondPerUid: Double
    private var requestBurst: Double { requestsPerSecondPerUid * 2 }
    private var requestsPerResume: Double { max(1, requestsPerSecondPerUid / 10) }

    /// Runs the loop on the calling thread until `stop()`.
    ///
    /// Fair: each turn accepts at most `acceptsPerTurn` connections and reads at most
    /// `bytesPerTurn` from each program with something to read; a program with more left goes
    /// to the back of the queue (its socket is edge-triggered, so the loop keeps its own list
    /// of who still has unread input) and the loop polls without waiting until the list is
    /// empty. No one program's input can hold up another's turn, nor the replies and
    /// authorization changes the service sends as it goes.
    package func run() {
        var clients: [Int32: BrokerClient] = [:]
        var nextID = 1
        var ready = [Int64](repeating: 0, count: 64)
        var events = [UInt32](repeating: 0, count: 64)
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var unread: [Int32] = []
        var queued = Set<Int32>()
        var listenerReady = false
        var reserve = open("/dev/null", O_RDONLY | O_CLOEXEC)
        // Each uid's request budget, and the programs waiting for theirs to grow (kept in
        // `queued`, so their new input does not put them back in the turn before then).
        var budgets: [UInt32: (tokens: Double, at: Double)] = [:]
        var throttled: [(fd: Int32, until: Double)] = []
        func drop(_ client: BrokerClient) {
            gpslocd_epoll_remove(epoll, client.fd)
            clients[client.fd] = nil
            queued.remove(client.fd)
            service.disconnected(client)
            close(client.fd)
        }
        while !stopping.withLock({ $0 }) {
            let busy = listenerReady || !unread.isEmpty
            var timeout: Int32 = busy ? 0 : -1
            if !busy, let soonest = throttled.map(\.until).min() {
                timeout = Int32(max(1, min(1000, ((soonest - Self.now()) * 1000).rounded(.up))))
            }
            let count = gpslocd_epoll_wait(epoll, &ready, &events, 64, timeout)
            if count < 0 { if errno == EINTR { continue } else { break } }
            if !throttled.isEmpty {
                let now = Self.now()
                for waiting in throttled where waiting.until <= now { unread.append(waiting.fd) }
                throttled.removeAll { $0.until <= now }
            }
            for index in 0..<Int(count) {
                let data = ready[index]
                if data == -2 {
                    wake.drain()
                    continue
                }
                if data == -1 {
                    listenerReady = true
                    continue
                }
                guard let client = clients[Int32(data)] else { continue }
                if events[index] & 2 != 0 { client.flush() }
                if events[index] & 1 != 0, queued.insert(client.fd).inserted { unread.append(client.fd) }
            }
            if listenerReady {
                listenerReady = acceptSome(into: &clients, nextID: &nextID, reserve: &reserve)
            }
            // One turn for each program that had input at the turn's start.
            let turn = unread
            unread = []
            for fd in turn {
                guard let client = clients[fd] else { continue }
                let uid = client.identity.uid
                let now = Self.now()
                var budget = budgets[uid] ?? (requestBurst, now)
                budget.tokens = min(requestBurst, budget.tokens + (now - budget.at) * requestsPerSecondPerUid)
                budget.at = now
                let outcome = readSome(client, &buffer, &budget.tokens)
                budgets[uid] = budget
                if outcome == .gone || client.overflowed {
                    drop(client)
                } else if outcome == .more {
                    unread.append(fd)
                } else if outcome == .throttled {
                    let wait = (requestsPerResume - budget.tokens) / requestsPerSecondPerUid
                    throttled.append((fd, now + max(wait, 0.001)))
                } else {
                    queued.remove(fd)
                }
            }
            // A uid's budget is forgotten once it is full again and none of its programs waits.
            if budgets.count > 64 {
                let now = Self.now()
                let waiting = Set(throttled.compactMap { clients[$0.fd]?.identity.uid })
                budgets = budgets.filter {
                    waiting.contains($0.key)
                        || $0.value.tokens + (now - $0.value.at) * requestsPerSecondPerUid
                            < requestBurst
                }
            }
        }
        for client in clients.values {
            service.disconnected(client)
            close(client.fd)
        }
        if reserve >= 0 { close(reserve) }
        close(listener)
        if let socketPath { unlink(socketPath) }
    }

    /// Accepts up to `acceptsPerTurn` programs; true when more may be waiting.
    private func acceptSome(into clients: inout [Int32: BrokerClient], nextID: inout Int, reserve: inout Int32) -> Bool
    {
        for _ in 0..<Self.acceptsPerTurn {
            let fd = gpslocd_accept(listener)
            guard fd >= 0 else {
                if errno == EMFILE || errno == ENFILE {
                    // Out of descriptors: the waiting program is told why (with the descriptor
                    // kept in reserve for this), not left to hang; the loop does not spin on it.
                    refuseForLackOfDescriptors(reserve: &reserve)
                    return true
                }
                return false
            }
            let identity: PeerIdentity
            do throws(PeerIdentity.Failure) {
                identity = try PeerIdentity.of(socket: fd, acceptedAt: PeerIdentity.bootSeconds())
            } catch {
                refuse(fd, "gpslocd cannot identify this program: \(error.description)")
                continue
            }
            let held = clients.values.count { $0.identity.uid == identity.uid }
            if held >= Self.connectionsPerUid {
                if identity.pidfd >= 0 { close(identity.pidfd) }
                refuse(
                    fd,
                    "uid \(identity.uid) already holds \(held) connections to gpslocd, the most one user may: close "
                        + "some (a program that opens a connection per request leaks them)")
                continue
            }
            // Watched for input; for room to write only while output waits (`BrokerClient`).
            gpslocd_epoll_add(epoll, fd, 1 | 4, Int64(fd))
            let client = BrokerClient(fd: fd, id: nextID, identity: identity, epoll: epoll)
            nextID += 1
            clients[fd] = client
            service.connected(client)
        }
        return true
    }

    /// Tells a program why it is refused, logs it, and closes its connection.
    private func refuse(_ fd: Int32, _ reason: String) {
        var line = BrokerLine("ERROR")
        line.add("message", reason)
        _ = BrokerProtocol.sendAll(fd, line.line)
        Self.log("refused a connection: \(reason)")
        close(fd)
    }

    /// EMFILE/ENFILE: frees the reserve descriptor, accepts the waiting program to tell it,
    /// and takes the reserve back.
    private func refuseForLackOfDescriptors(reserve: inout Int32) {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let reason =
            "gpslocd has run out of file descriptors (its limit is \(limit.rlim_cur); each program takes two): "
            + "raise LimitNOFILE in gpslocd.service, or find the program holding many connections (`gpsloc auth who`)"
        if reserve >= 0 {
            close(reserve)
            reserve = -1
        }
        let fd = gpslocd_accept(listener)
        if fd >= 0 {
            refuse(fd, reason)
        } else {
            Self.log(reason)
        }
        reserve = open("/dev/null", O_RDONLY | O_CLOEXEC)
    }

    /// gpslocd's stderr (the journal under systemd), bounded (#51: 36 MB in 10 s of a hostile
    /// program's connection churn): the same text at most once a second, and at most
    /// `logLinesPerSecond` lines in any second — what is held back is counted and said in one
    /// line when the next second's first message is written.
    private static let logged = Locked<(text: String, at: Double, second: Double, written: Int, held: Int)>(
        ("", 0, 0, 0, 0))
    static let logLinesPerSecond = 20
    static func log(_ text: String) {
        let now = PeerIdentity.bootSeconds()
        let (write, held) = logged.withLock { state -> (Bool, Int) in
            if state.text == text && now - state.at < 1 { return (false, 0) }
            var heldBefore = 0
            if now - state.second >= 1 {
                heldBefore = state.held
                state.second = now
                state.written = 0
                state.held = 0
            }
            guard state.written < logLinesPerSecond else {
                state.held += 1
                return (false, 0)
            }
            state.written += 1
            state.text = text
            state.at = now
            return (true, heldBefore)
        }
        var output = ""
        if held > 0 {
            output +=
                "gpslocd: \(held) more message(s) held back in one second (at most \(logLinesPerSecond) a second; "
                + "the audit log has every connection)\n"
        }
        if write { output += "gpslocd: \(text)\n" }
        if !output.isEmpty { DescriptorWrite.write(output, to: STDERR_FILENO) }
    }

    private enum ReadOutcome { case drained, more, gone, throttled }

    /// `CLOCK_MONOTONIC` now, in seconds.
    private static func now() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }

    /// Reads up to `bytesPerTurn` of what the program sent and hands its lines over, one
    /// `requests` token each: lines already read wait in the program's reader when the uid's
    /// budget runs out (`.throttled`), and nothing more is read until it has grown.
    private func readSome(_ client: BrokerClient, _ buffer: inout [UInt8], _ requests: inout Double) -> ReadOutcome {
        func handleLines() {
            while requests >= 1, let line = client.reader.next() {
                requests -= 1
                if let message = BrokerMessage(line: line) {
                    service.handle(message, from: client)
                } else {
                    var error = BrokerLine("ERROR")
                    error.add("message", "not a JSON object with a class")
                    client.send(error.line)
                }
            }
        }
        handleLines()
        if requests < 1 { return .throttled }
        var budget = Self.bytesPerTurn
        while budget > 0 {
            let count = buffer.withUnsafeMutableBytes {
                recv(client.fd, $0.baseAddress, min($0.count, budget), Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                budget -= count
                buffer.withUnsafeBytes { client.reader.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                handleLines()
                if client.reader.pendingCount > BrokerProtocol.maximumLineLength { return .gone }
                if requests < 1 { return .throttled }
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return .drained }
            return .gone
        }
        return .more
    }

    /// Ends `run()` (from a signal handler's queue or another thread).
    package func stop() {
        stopping.withLock { $0 = true }
        wake.signal()
    }
}
