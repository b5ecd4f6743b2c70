import CBrokerSupport
import Foundation
import GNSSCore
import GPSLocation

/// gpslocd's socket and its one loop (epoll): accepts programs, identifies each by the kernel
/// (`PeerIdentity`) as it connects, reads their lines and hands them to the `BrokerService`,
/// and sends what waits for programs whose sockets were full. Every socket is non-blocking, so
/// no program — however slow, however silent — holds up another.
package final class BrokerServer: Sendable {
    package let service: BrokerService
    private let listener: Int32
    private let epoll: Int32
    private let wake = WakePipe(owner: "gpslocd loop")
    private let stopping = Locked(false)
    /// The socket path this server made (removed when it stops), nil for a socket it was given.
    package let socketPath: String?

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// Listens on `socketPath` (made mode 0666: anyone may connect; what they get is decided
    /// per program), or on the socket systemd passed (`LISTEN_FDS`, fd 3) when `socketPath` is nil.
    package init(service: BrokerService, socketPath: String?) throws(Failure) {
        self.service = service
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

    private static func listen(at path: String) throws(Failure) -> Int32 {
        var status = stat()
        if lstat(path, &status) == 0 {
            guard status.st_mode & S_IFMT == S_IFSOCK else {
                throw Failure(description: "\(path) exists and is not a socket — remove it or choose another --socket")
            }
            unlink(path)
        }
        try? FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o755])
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard let bound = BrokerProtocol.withSocketAddress(path, { bind(fd, $0, $1) }) else {
            close(fd)
            throw Failure(description: "the socket path \(path) is too long")
        }
        guard bound == 0, chmod(path, 0o666) == 0, Glibc.listen(fd, 512) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw Failure(description: "cannot listen on \(path): \(reason)")
        }
        return fd
    }

    /// Runs the loop on the calling thread until `stop()`.
    package func run() {
        var clients: [Int32: BrokerClient] = [:]
        var nextID = 1
        var ready = [Int64](repeating: 0, count: 64)
        var events = [UInt32](repeating: 0, count: 64)
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while !stopping.withLock({ $0 }) {
            let count = gpslocd_epoll_wait(epoll, &ready, &events, 64, -1)
            if count < 0 { if errno == EINTR { continue } else { break } }
            for index in 0..<Int(count) {
                let data = ready[index]
                if data == -2 {
                    wake.drain()
                    continue
                }
                if data == -1 {
                    acceptAll(into: &clients, nextID: &nextID)
                    continue
                }
                guard let client = clients[Int32(data)] else { continue }
                if events[index] & 2 != 0 { client.flush() }
                if events[index] & 1 != 0 {
                    if !readAll(client, &buffer) {
                        gpslocd_epoll_remove(epoll, client.fd)
                        clients[client.fd] = nil
                        service.disconnected(client)
                        close(client.fd)
                    }
                }
            }
        }
        for client in clients.values {
            service.disconnected(client)
            close(client.fd)
        }
        close(listener)
        if let socketPath { unlink(socketPath) }
    }

    private func acceptAll(into clients: inout [Int32: BrokerClient], nextID: inout Int) {
        while true {
            let fd = gpslocd_accept(listener)
            guard fd >= 0 else { return }
            let identity: PeerIdentity
            do throws(PeerIdentity.Failure) {
                identity = try PeerIdentity.of(socket: fd, acceptedAt: PeerIdentity.bootSeconds())
            } catch {
                var line = BrokerLine("ERROR")
                line.add("message", "gpslocd cannot identify this program: \(error.description)")
                _ = BrokerLink.sendAll(fd, line.line)
                FileHandle.standardError.write(Data("gpslocd: refused a connection: \(error.description)\n".utf8))
                close(fd)
                continue
            }
            let client = BrokerClient(fd: fd, id: nextID, identity: identity)
            nextID += 1
            clients[fd] = client
            service.connected(client)
            gpslocd_epoll_add(epoll, fd, 1 | 2 | 4, Int64(fd))
        }
    }

    /// Reads what the program sent; false when it has gone (or broke the protocol).
    private func readAll(_ client: BrokerClient, _ buffer: inout [UInt8]) -> Bool {
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count > 0 {
                buffer.withUnsafeBytes { client.reader.append(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
                while let line = client.reader.next() {
                    if let message = BrokerMessage(line: line) {
                        service.handle(message, from: client)
                    } else {
                        var error = BrokerLine("ERROR")
                        error.add("message", "not a JSON object with a class")
                        client.send(error.line)
                    }
                }
                if client.reader.pendingCount > BrokerProtocol.maximumLineLength { return false }
                continue
            }
            if count < 0 && errno == EINTR { continue }
            if count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return true }
            return false
        }
    }

    /// Ends `run()` (from a signal handler's queue or another thread).
    package func stop() {
        stopping.withLock { $0 = true }
        wake.signal()
    }
}
