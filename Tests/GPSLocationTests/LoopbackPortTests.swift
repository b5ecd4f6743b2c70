import Foundation
import GPSDClient
import GPSDProcesses
import Testing

/// The ports tests (and `gpsloc replay --via gpsd`) give gpsd, and the readiness probe's defence
/// against a connection that reached itself (docs/testing.md, session 20).
@Suite("loopback ports for gpsd: outside the ephemeral range, no self-connection")
struct LoopbackPortTests {
    @Test("a found port lies outside the kernel's ephemeral range and is free on both loopbacks")
    func foundPortIsOutsideEphemeralRange() throws {
        let text = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        try #require(bounds.count == 2)
        var seen = Set<Int>()
        for _ in 0..<50 {
            let port = try FreePort.find()
            #expect(!(bounds[0]...bounds[1]).contains(port), "\(port) is in \(bounds[0])–\(bounds[1])")
            #expect(FreePort.isFree(port: port))
            seen.insert(port)
        }
        // Random, so that concurrent test processes rarely try the same one.
        #expect(seen.count > 40)
    }

    @Test("a socket connected to itself is recognised, a real connection is not")
    func selfConnectionIsRecognised() throws {
        // A socket bound to a port and then connected to that same address connects to itself:
        // the simultaneous open a readiness poll can hit by chance.
        let port = try FreePort.find()
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                    && connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        try #require(connected, "errno \(errno)")
        #expect(SelfConnection.check(fd))
        // While that socket holds the port, the probe does not take it for a listener.
        #expect(!FreePort.accepts(port: port))

        // A listener's accepted connection is not a self-connection.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(listener >= 0)
        defer { close(listener) }
        let other = try FreePort.find()
        address.sin_port = UInt16(other).bigEndian
        let listening = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 && listen(listener, 4) == 0
            }
        }
        try #require(listening)
        #expect(FreePort.accepts(port: other))
    }
}
