import FoundationEssentials
import GPSDClient
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real gpsd replaying an NMEA file, through gpsd's own `gpsfake`, on a free loopback port.
///
/// Used by `gpsloc replay --via gpsd` and by the integration tests. gpsfake runs with `-1`
/// (play once, then exit) and `-p` (attach its own watcher and wait about 1.4 s before
/// feeding); a client must connect inside that window, so call `waitUntilListening()` and
/// connect at once. Each server gets its own port and its own TMPDIR (gpsfake keeps its
/// control socket there), so any number can run side by side.
public final class GPSFakeServer: Sendable {
    /// Where Debian's gpsd-clients package installs gpsfake.
    public static let executable = "/usr/bin/gpsfake"
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    public let log: URL
    public let endpoint: GPSDEndpoint
    private let child: ChildProcess
    private let workDirectory: URL
    private let watcherFile: URL

    /// Starts gpsfake. `cycle` is the delay between sentences in seconds (gpsfake `-c`);
    /// `baudRate` the fake serial speed (`-s`).
    /// `port`: listen there (e.g. to restart gpsd where clients expect it), or nil for a free one.
    /// `moreLogs`: further recordings, each played on its own pseudo-terminal, so gpsd sees
    /// several receivers at once.
    public init(
        log: URL, moreLogs: [URL] = [], cycle: Double? = nil, baudRate: Int = 38400, port requestedPort: Int? = nil
    ) throws(GPSFakeError) {
        guard Self.isInstalled else { throw .notInstalled }
        for file in [log] + moreLogs where !FileManager.default.isReadableFile(atPath: file.path) {
            throw .unreadableLog(file.path)
        }
        self.log = log
        let port: Int
        if let requestedPort {
            port = requestedPort
            FreePort.hold(requestedPort)
        } else {
            do { port = try FreePort.find() } catch { throw .noFreePort }
        }
        endpoint = GPSDEndpoint(host: "127.0.0.1", port: port)
        workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gpslocation-gpsfake-\(UUID().uuidString)")
        watcherFile = workDirectory.appendingPathComponent("watcher.json")
        do {
            try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
        } catch {
            throw .spawnFailed("cannot create \(workDirectory.path): \(error)")
        }
        var arguments = ["-P", String(port), "-1", "-p", "-q", "-s", String(baudRate)]
        if let cycle { arguments += ["-c", String(cycle)] }
        arguments += ([log] + moreLogs).map(\.path)
        var environment = ProcessInfo.processInfo.environment
        environment["TMPDIR"] = workDirectory.path
        do {
            child = try ChildProcess(
                executable: Self.executable, arguments: arguments, environment: environment,
                stdoutPath: watcherFile.path, stderrPath: workDirectory.appendingPathComponent("stderr.txt").path)
        } catch {
            throw .spawnFailed("\(error)")
        }
    }

    deinit { stop() }

    /// Starts gpsfake and waits until its gpsd listens, trying again (on a new port) when a
    /// start fails — under heavy load gpsfake occasionally exits before its gpsd is up.
    public static func started(log: URL, moreLogs: [URL] = [], cycle: Double? = nil, attempts: Int = 3)
        async throws(GPSFakeError) -> GPSFakeServer
    {
        var attempt = 0
        while true {
            attempt += 1
            let server = try GPSFakeServer(log: log, moreLogs: moreLogs, cycle: cycle)
            do {
                try await server.waitUntilListening()
                return server
            } catch {
                server.stop()
                if attempt >= attempts { throw error }
                try? await Task.sleep(for: .milliseconds(200 * attempt))
            }
        }
    }

    /// The same, blocking the calling thread (for command-line tools).
    public static func startedBlocking(log: URL, cycle: Double? = nil, attempts: Int = 3) throws(GPSFakeError)
        -> GPSFakeServer
    {
        var attempt = 0
        while true {
            attempt += 1
            let server = try GPSFakeServer(log: log, cycle: cycle)
            do {
                try server.waitUntilListeningBlocking()
                return server
            } catch {
                server.stop()
                if attempt >= attempts { throw error }
                usleep(UInt32(200_000 * attempt))
            }
        }
    }

    /// Polls the port every 10 ms until gpsd accepts connections.
    public func waitUntilListening(timeout: Duration = .seconds(60)) async throws(GPSFakeError) {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if FreePort.accepts(port: endpoint.port) { return }
            if let status = child.exited { throw .exitedEarly("\(ChildProcess.describe(status)); \(stderr)") }
            try? await Task.sleep(for: .milliseconds(10))
        }
        throw .notListening(endpoint.port)
    }

    /// The same wait, blocking the calling thread — for command-line tools, never for a Swift
    /// concurrency thread.
    public func waitUntilListeningBlocking(timeout: Duration = .seconds(60)) throws(GPSFakeError) {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if FreePort.accepts(port: endpoint.port) { return }
            if let status = child.exited { throw .exitedEarly("\(ChildProcess.describe(status)); \(stderr)") }
            usleep(10_000)
        }
        throw .notListening(endpoint.port)
    }

    /// After `waitUntilListeningBlocking`: waits until gpsfake has attached its pseudo-terminal
    /// to gpsd (gpsd's `?DEVICES;` lists it), so a client that connects next is not told "no
    /// receiver open" — gpsfake adds the device a moment after its gpsd listens, and starts
    /// feeding it 1.4 s after that. Returns false when no device appeared within `timeout` (30 s:
    /// well under a second when idle, more than 5 s seen on a loaded machine).
    @discardableResult
    public func waitUntilDeviceAttachedBlocking(timeout: Duration = .seconds(30)) -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if FreePort.gpsdListsDevice(port: endpoint.port) { return true }
            if child.exited != nil { return false }
            usleep(10_000)
        }
        return false
    }

    /// The same wait without blocking a thread.
    @discardableResult
    public func waitUntilDeviceAttached(timeout: Duration = .seconds(30)) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if FreePort.gpsdListsDevice(port: endpoint.port) { return true }
            if child.exited != nil { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return false
    }

    /// Waits until gpsfake has played the log and exited.
    @discardableResult
    public func waitForExit(timeout: Duration = .seconds(120)) async -> Bool {
        await child.waitForExit(timeout: timeout)
    }

    /// Stops gpsfake (and with it its gpsd) by PID, and removes its TMPDIR.
    public func stop() {
        // gpsfake stops its gpsd when it handles SIGTERM; if it is too slow to (a loaded
        // machine) it gets SIGKILL, and its gpsd would live on, holding the port: stop that too.
        let daemons = child.isRunning ? child.grandchildren() : []
        child.terminate()
        for daemon in daemons where kill(daemon, 0) == 0 {
            kill(daemon, SIGTERM)
            for _ in 0..<100 where kill(daemon, 0) == 0 { usleep(10_000) }
            if kill(daemon, 0) == 0 { kill(daemon, SIGKILL) }
        }
        try? FileManager.default.removeItem(at: workDirectory)
        FreePort.release(endpoint.port)
    }

    /// gpsd's JSON as gpsfake's own watcher received it (complete once gpsfake has exited).
    public var watcherOutput: String { (try? String(contentsOf: watcherFile, encoding: .utf8)) ?? "" }

    private var stderr: String { daemonMessages(in: workDirectory.appendingPathComponent("stderr.txt")) }

    /// After the replay: gpsfake's failure, when it ended with one — its exit status and what it
    /// wrote on stderr (its "Test timed out" when gpsd never reported its device gone). gpsfake
    /// stops its gpsd before it exits, so a client that saw gpsd go may ask before gpsfake is
    /// gone: this waits for it up to `timeout` (blocking; for command-line tools). Nil after a
    /// clean exit, or while it still runs.
    public func failureAfterExit(timeout: Duration = .seconds(2)) -> String? {
        let deadline = ContinuousClock.now + timeout
        while child.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        guard let status = child.exited, status != 0 else { return nil }
        let text = stderr
        return "gpsfake ended with \(ChildProcess.describe(status))" + (text.isEmpty ? "" : ": \(text)")
    }
}

public enum GPSFakeError: Error, Sendable, CustomStringConvertible {
    case notInstalled
    case unreadableLog(String)
    case noFreePort
    case spawnFailed(String)
    case exitedEarly(String)
    case notListening(Int)
    /// gpsd listens but never listed gpsfake's pseudo-terminal as a device.
    case noReceiver(Int)

    public var description: String {
        switch self {
        case .notInstalled:
            "gpsfake is not installed (\(GPSFakeServer.executable)) — install it with `sudo apt-get install gpsd gpsd-clients`, or replay with `--via nmea`"
        case .unreadableLog(let path): "cannot read the recording \(path) — check the path and its permissions"
        case .noFreePort: "no free TCP port on 127.0.0.1 for gpsfake"
        case .spawnFailed(let why): "could not start gpsfake: \(why)"
        case .exitedEarly(let why): "gpsfake exited before gpsd listened: \(why.isEmpty ? "no message" : why)"
        case .notListening(let port): "gpsfake's gpsd never listened on 127.0.0.1:\(port)"
        case .noReceiver(let port): "gpsfake's gpsd on 127.0.0.1:\(port) never opened gpsfake's receiver"
        }
    }
}

/// A daemon's stderr file as one line, without gpsd's harmless "unable to connect to the DBUS
/// system bus" (containers have no system bus).
func daemonMessages(in file: URL) -> String {
    let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
    return text.split(whereSeparator: \.isNewline).filter { !$0.contains("DBUS") }.joined(separator: " ")
}

/// Loopback port helpers.
///
/// The ports handed out lie *below* the kernel's ephemeral range
/// (`/proc/sys/net/ipv4/ip_local_port_range`, 32768–60999 on Debian), picked at random and
/// checked free on 127.0.0.1 and ::1 (gpsd binds both). A port from that range (what `bind` to
/// port 0 gives) is one the kernel may also hand to an outgoing connection as its source port,
/// and a connection to it while nothing listens can, in principle, connect to itself (TCP's
/// simultaneous open). Linux makes that rare (connect prefers even source ports, bind(0) odd
/// ones; 60,000 connects to such a port here never reached themselves), so this is a defence,
/// not the proven cause of a failure: ports a test gives gpsd simply never meet a client's.
package enum FreePort {
    /// A port that is free on 127.0.0.1 (and on ::1, where gpsd also listens) and lies outside
    /// the ephemeral range, picked at random so that concurrent callers rarely try the same one.
    ///
    /// The port is also *reserved* until `release(_:)` (or the process ends): an abstract Unix
    /// socket `@gpslocation-port-PORT` is bound, which no other process can bind while this one
    /// holds it. Checking that a port is free does not keep it free: two test processes (the
    /// suite and a `gpsloc replay --via gpsd` it runs) that picked the same port in the second
    /// before either gpsd listened both started gpsfake on it, and one program read the other's
    /// recording (seen once in CI: a Munich fix in a Bristol replay).
    package static func find() throws -> Int {
        let candidates = candidateRange()
        for _ in 0..<200 {
            let port = Int.random(in: candidates)
            guard let reservation = reserve(port) else { continue }
            if isFree(port: port) {
                reservations.withLock { $0[port] = reservation }
                return port
            }
            close(reservation)
        }
        throw POSIXError(.EADDRINUSE)
    }

    /// Reserves `port` as `find()` does, when the caller chose it (a gpsd restarted where its
    /// clients expect it); false when another process holds it.
    @discardableResult
    static func hold(_ port: Int) -> Bool {
        if reservations.withLock({ $0[port] != nil }) { return true }
        guard let reservation = reserve(port) else { return false }
        reservations.withLock { $0[port] = reservation }
        return true
    }

    /// Gives up this process's reservation of `port` (its gpsd has stopped).
    static func release(_ port: Int) {
        if let reservation = reservations.withLock({ $0.removeValue(forKey: port) }) { close(reservation) }
    }

    private static let reservations = Mutex<[Int: Int32]>([:])

    /// Binds the abstract Unix socket that stands for `port`; its descriptor, or nil when
    /// another process holds it.
    private static func reserve(_ port: Int) -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let name = Array("gpslocation-port-\(port)".utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path[0] = 0  // abstract: no file, gone with the process
            for (index, byte) in name.enumerated() { path[index + 1] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + 1 + name.count)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 }
        }
        if bound { return fd }
        close(fd)
        return nil
    }

    /// The ports below the ephemeral range (above it when that leaves too few below).
    static func candidateRange() -> ClosedRange<Int> {
        let text = (try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)) ?? ""
        let bounds = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" }).compactMap { Int($0) }
        let low = bounds.count == 2 ? bounds[0] : 32768
        let high = bounds.count == 2 ? bounds[1] : 60999
        if low - 1 >= 20000 { return 20000...(low - 1) }
        if high + 1 <= 64000 { return (high + 1)...65535 }
        return 20000...32767
    }

    /// True when both loopback addresses can bind `port` now (SO_REUSEADDR, as gpsd binds).
    package static func isFree(port: Int) -> Bool {
        guard canBind(family: AF_INET, port: port) else { return false }
        // ::1 may not exist (IPv6 disabled): then only 127.0.0.1 matters.
        return canBind(family: AF_INET6, port: port) || !hasIPv6Loopback
    }

    private static let hasIPv6Loopback: Bool = {
        let fd = socket(AF_INET6, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
            }
        }
    }()

    private static func canBind(family: Int32, port: Int) -> Bool {
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET {
            var address = loopback(port: port)
            return withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
        }
        var address = sockaddr_in6()
        address.sin6_family = sa_family_t(AF_INET6)
        address.sin6_addr = in6addr_loopback
        address.sin6_port = UInt16(port).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) == 0
            }
        }
    }

    /// Connects a new socket to 127.0.0.1:port; nil when nothing accepts there, or when the
    /// socket connected to itself (its own address is the peer's: nothing listens at all).
    private static func connected(port: Int) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = loopback(port: port)
        let ok = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard ok, !SelfConnection.check(fd) else {
            close(fd)
            return nil
        }
        return fd
    }

    /// True when something other than the probe itself accepts a TCP connection on 127.0.0.1:port.
    package static func accepts(port: Int) -> Bool {
        guard let fd = connected(port: port) else { return false }
        close(fd)
        return true
    }

    /// True when the gpsd on 127.0.0.1:port answers `?DEVICES;` with at least one device
    /// (within 300 ms).
    static func gpsdListsDevice(port: Int) -> Bool {
        guard let fd = connected(port: port) else { return false }
        defer { close(fd) }
        let query = Array("?DEVICES;\n".utf8)
        guard write(fd, query, query.count) == query.count else { return false }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .milliseconds(300)
        while ContinuousClock.now < deadline {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 50) >= 0 else { return false }
            guard poller.revents != 0 else { continue }
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else { return false }
            received.append(contentsOf: buffer[..<count])
            let text = String(decoding: received, as: UTF8.self)
            for line in text.split(separator: "\n") where line.contains("\"class\":\"DEVICES\"") {
                return line.contains("\"devices\":[{")
            }
        }
        return false
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        address.sin_port = UInt16(port).bigEndian
        return address
    }
}
