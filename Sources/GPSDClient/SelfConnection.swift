import Glibc

/// A TCP connection whose local address is its peer's: the socket reached itself.
///
/// Connecting on loopback to a port in the kernel's ephemeral range while nothing listens there
/// can complete as a simultaneous open with itself, when the kernel picks that same port as the
/// source. It looks like a successful connection, reads back what it writes, and holds the port a
/// server was about to bind.
package enum SelfConnection {
    /// True when the connected socket `fd` is connected to itself.
    package static func check(_ fd: Int32) -> Bool {
        var local = sockaddr_storage()
        var peer = sockaddr_storage()
        var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        var peerLength = localLength
        let named = withUnsafeMutablePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &localLength) == 0 }
        }
        let peered = withUnsafeMutablePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(fd, $0, &peerLength) == 0 }
        }
        guard named, peered, localLength == peerLength else { return false }
        return withUnsafeBytes(of: &local) { a in
            withUnsafeBytes(of: &peer) { b in a.prefix(Int(localLength)).elementsEqual(b.prefix(Int(peerLength))) }
        }
    }
}
