import Foundation

/// sd_notify without libsystemd: one datagram to the AF_UNIX socket named by `NOTIFY_SOCKET`
/// (a path, or `@name` for the abstract namespace). Without the variable (not run by systemd)
/// it does nothing.
final class SystemdNotifier: Sendable {
    private let address: String?
    /// How often systemd wants `WATCHDOG=1` (`WATCHDOG_USEC`), if it does — and only when
    /// `WATCHDOG_PID` is unset or this process.
    let watchdogMicroseconds: Int?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        address = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        if let text = environment["WATCHDOG_USEC"], let microseconds = Int(text), microseconds > 0,
            environment["WATCHDOG_PID"].map({ Int32($0) == getpid() }) ?? true
        {
            watchdogMicroseconds = microseconds
        } else {
            watchdogMicroseconds = nil
        }
    }

    func send(_ message: String) {
        guard let address else { return }
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        var socketAddress = sockaddr_un()
        socketAddress.sun_family = sa_family_t(AF_UNIX)
        var path = Array(address.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }
        guard path.count < MemoryLayout.size(ofValue: socketAddress.sun_path) else { return }
        withUnsafeMutableBytes(of: &socketAddress.sun_path) { buffer in
            for (index, byte) in path.enumerated() { buffer[index] = byte }
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count)
        let bytes = Array(message.utf8)
        _ = withUnsafePointer(to: &socketAddress) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                sendto(descriptor, bytes, bytes.count, 0, address, length)
            }
        }
    }
}
