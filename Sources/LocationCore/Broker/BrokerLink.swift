import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import NMEA0183

/// What gpslocd said of the connecting program when it connected (its WELCOME).
public struct BrokerWelcome: Sendable, Equatable {
    /// The uid the kernel gave for the program (`SO_PEERCRED`).
    public var uid: Int
    /// The app id gpslocd keys decisions by: the systemd unit, the Flatpak id, or the label
    /// the program gave (which only a sandbox or a uid of its own makes more than a label).
    public var app: String
    /// How the app id was established: `unit`, `flatpak` or `label`.
    var identity: String
    /// Whether gpslocd judges the program in use (the foreground process group of a terminal).
    public var inUse: Bool
    /// The decision gpslocd holds for this (uid, app) now.
    public var decision: AuthorizationDecision
    /// The last location this app received through gpslocd (kept there, not in the app's files),
    /// when it may see it now: authorized (and in use, for When In Use), and under reduced
    /// accuracy only a reduced one. Its timestamp is the fix's own.
    public var last: LocationValue?

    init?(_ message: BrokerMessage) {
        guard message.messageClass == "WELCOME", let uid = message.int("uid"), let app = message.string("app") else {
            return nil
        }
        self.uid = uid
        self.app = app
        identity = message.string("identity") ?? "label"
        inUse = message.bool("inUse") ?? false
        decision = BrokerWelcome.decision(message)
        last = message.object("last").flatMap {
            BrokerProtocol.lastLocation(from: $0, estimate: message.object("lastEstimate"))
        }
    }

    /// The decision an AUTHORIZATION or WELCOME line carries (not determined when unreadable).
    static func decision(_ message: BrokerMessage) -> AuthorizationDecision {
        AuthorizationDecision(
            status: message.string("status").flatMap(BrokerProtocol.status(named:)) ?? .notDetermined,
            accuracy: message.string("accuracy").flatMap(BrokerProtocol.accuracy(named:)) ?? .reducedAccuracy)
    }
}

/// Why gpslocd could not be used, as values (LocationWords says it, with what to do).
public enum BrokerUnavailable: Error, Sendable, Hashable {
    /// `socket(2)` failed (`cause`: the system's `strerror`).
    case socket(cause: String)
    /// The socket path does not fit a `sockaddr_un`.
    case pathTooLong(path: String)
    /// Nothing listens at `path` (`cause`: `strerror` of `connect`); `brokerRequired`: the
    /// policy allows no direct mode; `named`: `GPSLOCATION_BROKER` named the socket.
    case unreachable(path: String, cause: String, brokerRequired: Bool, named: Bool)
    /// gpslocd refused `app` with an ERROR line (`said`: its words).
    case refused(app: String, said: String)
    /// gpslocd closed the connection right after it was made.
    case closedAtOnce(path: String)
    /// gpslocd sent no WELCOME (`failure`: why the read ended; nil: it closed).
    case noWelcome(path: String, failure: BrokerLineReader.Failure?)
    /// The first WELCOME did not come within `seconds` (`startAndWait`).
    case noAnswerAtStart(path: String, seconds: Int)
    /// A request's REPLY did not come within `seconds`.
    case noAnswer(path: String, seconds: Int)
    /// A request found the link not connected.
    case notConnected(path: String)
    /// The link was closed while a request waited.
    case linkClosed
    /// The connection was lost after it had worked (`failure` as for `noWelcome`).
    case lost(path: String, failure: BrokerLineReader.Failure?)
}

/// One connection to gpslocd, kept: it connects, says HELLO, and reconnects (every second,
/// woken early by `close`) when gpslocd goes away. Lines reach `onMessage` on the link's own
/// thread, in order; `onState` hears of each connection (with its WELCOME) and each loss.
/// Requests wait for their REPLY (`request`).
public final class BrokerLink: Sendable {
    /// What the link reports to `onState`.
    public enum State: Sendable {
        /// Connected, with gpslocd's WELCOME.
        case connected(BrokerWelcome)
        /// Not connected (gpslocd gone or refusing), and why.
        case lost(BrokerUnavailable)
    }

    let path: String
    let app: String
    /// Lines sent right after each WELCOME (a WATCH).
    private let afterWelcome: [String]
    private let onMessage: @Sendable (BrokerMessage) -> Void
    private let onState: @Sendable (State) -> Void
    private let wake = WakePipe(owner: "gpslocd link")

    private struct Shared {
        var fd: Int32 = -1
        var closed = false
        var thread: pthread_t?
        var nextID = 1
        var waiting: [Int: BrokerMessage?] = [:]
        var welcome: BrokerWelcome?
    }
    private let shared = Locked(Shared())
    private let replies = ConditionLock()
    /// Held while a line is handed over, so that after `close` returns none is (unless `close`
    /// is called from a handler, on the link's thread).
    private let delivering = PlainLock()

    /// A link to the socket at `path` for app label `app` (not started): `afterWelcome` are
    /// lines sent after each WELCOME, `onMessage` hears each other line, `onState` each change.
    public init(
        path: String, app: String, afterWelcome: [String] = [],
        onMessage: @escaping @Sendable (BrokerMessage) -> Void, onState: @escaping @Sendable (State) -> Void
    ) {
        self.path = path
        self.app = app
        self.afterWelcome = afterWelcome
        self.onMessage = onMessage
        self.onState = onState
    }

    /// The WELCOME of the current connection, if connected.
    var welcome: BrokerWelcome? { shared.withLock { $0.welcome } }

    /// Starts the link's thread; returns at once.
    func start() {
        _ = WorkerThread(name: "gpslocd link") { [self] in run() }
    }

    /// Connects once and waits for the WELCOME (up to `timeout` seconds), then keeps the link
    /// on its thread. Throws when gpslocd cannot be reached or does not answer; the link goes on
    /// trying every second until `close` (callers that want one attempt close it).
    public func startAndWait(timeout: TimeInterval = 5) throws(BrokerUnavailable) -> BrokerWelcome {
        let outcome = Locked<Result<BrokerWelcome, BrokerUnavailable>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let first = Locked(true)
        _ = WorkerThread(name: "gpslocd link") { [self] in
            run { result in
                guard
                    first.withLock({ value in
                        defer { value = false }
                        return value
                    })
                else { return }
                outcome.withLock { $0 = result }
                done.signal()
            }
        }
        if done.wait(timeout: .now() + timeout) == .timedOut {
            throw BrokerUnavailable.noAnswerAtStart(path: path, seconds: Int(timeout))
        }
        switch outcome.withLock({ $0 })! {
        case .success(let welcome): return welcome
        case .failure(let failure): throw failure
        }
    }

    /// Stops the link: its connection is shut and no line reaches `onMessage` after this returns.
    public func close() {
        let (fd, thread) = shared.withLock { state -> (Int32, pthread_t?) in
            state.closed = true
            return (state.fd, state.thread)
        }
        if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
        wake.signal()
        replies.lock()
        replies.broadcast()
        replies.unlock()
        if let thread, pthread_equal(thread, pthread_self()) != 0 { return }
        delivering.lock()
        delivering.unlock()
    }

    /// Sends one line; false when not connected.
    @discardableResult
    public func send(_ line: String) -> Bool {
        shared.withLock { state in
            guard state.fd >= 0 else { return false }
            return BrokerProtocol.sendAll(state.fd, line)
        }
    }

    /// Sends a request (a line with an `id`) and waits up to `timeout` for its REPLY.
    public func request(_ build: (inout BrokerLine) -> Void, className: String, timeout: TimeInterval)
        throws(BrokerUnavailable) -> BrokerMessage
    {
        let id = shared.withLock { state in
            defer { state.nextID += 1 }
            state.waiting[state.nextID] = .some(nil)
            return state.nextID
        }
        defer { _ = shared.withLock { $0.waiting.removeValue(forKey: id) } }
        var line = BrokerLine(className)
        line.add("id", id)
        build(&line)
        guard send(line.line) else {
            throw BrokerUnavailable.notConnected(path: path)
        }
        let deadline = Date().addingTimeInterval(timeout)
        replies.lock()
        defer { replies.unlock() }
        while true {
            if let reply = shared.withLock({ $0.waiting[id] ?? nil }) { return reply }
            if shared.withLock({ $0.closed }) {
                throw BrokerUnavailable.linkClosed
            }
            if !replies.wait(until: deadline) {
                throw BrokerUnavailable.noAnswer(path: path, seconds: Int(timeout))
            }
        }
    }

    // MARK: The thread

    private func run(first: ((Result<BrokerWelcome, BrokerUnavailable>) -> Void)? = nil) {
        shared.withLock { $0.thread = pthread_self() }
        var reportedLoss = false
        while !shared.withLock({ $0.closed }) {
            switch connect() {
            case .failure(let failure):
                if !reportedLoss {
                    reportedLoss = true
                    deliver { onState(.lost(failure)) }
                }
                first?(.failure(failure))
            case .success(let (fd, welcome, rest)):
                reportedLoss = false
                // The handler hears of the connection before `startAndWait` returns: a caller
                // then sees what the WELCOME said, and no later line is overtaken by it.
                deliver { onState(.connected(welcome)) }
                first?(.success(welcome))
                for line in afterWelcome { send(line) }
                let failure = read(fd, pending: rest)
                shared.withLock { state in
                    state.fd = -1
                    state.welcome = nil
                }
                Glibc.close(fd)
                if shared.withLock({ $0.closed }) { break }
                reportedLoss = true
                deliver { onState(.lost(failure)) }
            }
            wake.wait(until: DispatchTime.now().uptimeNanoseconds + 1_000_000_000)
        }
    }

    private func deliver(_ body: () -> Void) {
        delivering.lock()
        defer { delivering.unlock() }
        guard !shared.withLock({ $0.closed }) else { return }
        body()
    }

    private func connect() -> Result<(Int32, BrokerWelcome, [UInt8]), BrokerUnavailable> {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            return .failure(.socket(cause: String(cString: strerror(errno))))
        }
        guard let connected = BrokerProtocol.withSocketAddress(path, { Glibc.connect(fd, $0, $1) }) else {
            Glibc.close(fd)
            return .failure(.pathTooLong(path: path))
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            let named = ProcessInfo.processInfo.environment["GPSLOCATION_BROKER"].map { !$0.isEmpty } == true
            return .failure(
                .unreachable(
                    path: path, cause: reason, brokerRequired: LocationPolicy.effective().brokerRequired, named: named))
        }
        var hello = BrokerLine("HELLO")
        hello.add("version", BrokerProtocol.version)
        hello.add("app", app)
        guard BrokerProtocol.sendAll(fd, hello.line) else {
            // Refused at connect (gpslocd could not identify it, a uid over its connections…):
            // its ERROR line may already be here — say why, not only that it closed.
            var timeout = timeval(tv_sec: 1, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var reader = BrokerLineReader()
            _ = reader.fill(from: fd)
            Glibc.close(fd)
            while let line = reader.next() {
                if let message = BrokerMessage(line: line), message.messageClass == "ERROR" {
                    return .failure(.refused(app: app, said: message.string("message") ?? ""))
                }
            }
            return .failure(.closedAtOnce(path: path))
        }
        // The WELCOME comes first; anything after it is kept for the reading loop.
        var reader = BrokerLineReader()
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        while true {
            if let line = reader.next() {
                guard let message = BrokerMessage(line: line) else { continue }
                if message.messageClass == "ERROR" {
                    Glibc.close(fd)
                    return .failure(.refused(app: app, said: message.string("message") ?? ""))
                }
                guard let welcome = BrokerWelcome(message) else { continue }
                var zero = timeval()
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &zero, socklen_t(MemoryLayout<timeval>.size))
                let closed = shared.withLock { state -> Bool in
                    guard !state.closed else { return true }
                    state.fd = fd
                    state.welcome = welcome
                    return false
                }
                if closed {
                    Glibc.close(fd)
                    return .failure(.linkClosed)
                }
                return .success((fd, welcome, reader.remainder))
            }
            guard reader.fill(from: fd) else {
                Glibc.close(fd)
                return .failure(.noWelcome(path: path, failure: reader.failure))
            }
        }
    }

    /// Reads lines until the connection ends; returns why it ended.
    func read(_ fd: Int32, pending: [UInt8]) -> BrokerUnavailable {
        var reader = BrokerLineReader(pending: pending)
        while true {
            while let line = reader.next() {
                guard let message = BrokerMessage(line: line) else { continue }
                if message.messageClass == "REPLY", let id = message.int("id") {
                    replies.lock()
                    shared.withLock { state in
                        if state.waiting[id] != nil { state.waiting[id] = .some(message) }
                    }
                    replies.broadcast()
                    replies.unlock()
                    continue
                }
                deliver { onMessage(message) }
            }
            guard reader.fill(from: fd) else {
                return .lost(path: path, failure: reader.failure)
            }
        }
    }
}
