import FoundationEssentials
import GPSDClient

#if canImport(Glibc)
    import Glibc
#endif

/// A real gpsd (not gpsfake) on a loopback port, reading the given devices, with its control
/// socket in its own directory so `gpsdctl` can add and remove devices as udev would.
public final class GPSDServer: Sendable {
    /// Where Debian's gpsd package installs the daemon.
    public static let executable = "/usr/sbin/gpsd"
    public static var isInstalled: Bool { FileManager.default.isExecutableFile(atPath: executable) }

    public let endpoint: GPSDEndpoint
    /// gpsd's control socket (`-F`).
    public let controlSocket: String
    private let child: ChildProcess
    private let workDirectory: URL

    /// Starts `gpsd -N -n -b` on `devices`. `port`: a free one when nil.
    public init(devices: [String], port requestedPort: Int? = nil) throws {
        guard Self.isInstalled else { throw GPSFakeError.notInstalled }
        let port = try requestedPort ?? FreePort.find()
        if let requestedPort { FreePort.hold(requestedPort) }
        endpoint = GPSDEndpoint(host: "127.0.0.1", port: port)
        workDirectory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gpslocation-gpsd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workDirectory, withIntermediateDirectories: true)
        controlSocket = workDirectory.appendingPathComponent("gpsd.sock").path
        // -N: foreground; -n: read the devices without waiting for a client; -b: never write to
        // them (a broken-device-safe mode, as for a receiver that must not be reconfigured).
        let arguments = ["-N", "-n", "-b", "-S", String(port), "-F", controlSocket] + devices
        child = try ChildProcess(
            executable: Self.executable, arguments: arguments, environment: ProcessInfo.processInfo.environment,
            stderrPath: workDirectory.appendingPathComponent("stderr.txt").path)
    }

    deinit { stop() }

    /// Waits (blocking, ≤ `timeout` seconds) until gpsd accepts connections.
    public func waitUntilListening(timeout: Double = 10) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if FreePort.accepts(port: endpoint.port) { return }
            if child.exited != nil { throw GPSFakeError.exitedEarly("gpsd exited: \(stderr)") }
            usleep(10_000)
        }
        throw GPSFakeError.notListening(endpoint.port)
    }

    /// Runs `gpsdctl add|remove DEVICE` against this gpsd, as udev does on hotplug.
    /// Returns gpsdctl's exit status (0: done).
    @discardableResult
    public func gpsdctl(_ action: String, device: String) throws -> Int32 {
        var environment = ProcessInfo.processInfo.environment
        environment["GPSD_SOCKET"] = controlSocket
        let process = try ChildProcess(
            executable: Self.gpsdctlExecutable, arguments: [action, device], environment: environment)
        for _ in 0..<500 where process.isRunning { usleep(10_000) }
        process.terminate()
        return process.exited.map { ($0 >> 8) & 0xFF } ?? -1
    }

    /// Where Debian's gpsd package installs gpsdctl.
    public static let gpsdctlExecutable = "/usr/sbin/gpsdctl"

    public func stop() {
        child.terminate()
        try? FileManager.default.removeItem(at: workDirectory)
        FreePort.release(endpoint.port)
    }

    private var stderr: String { daemonMessages(in: workDirectory.appendingPathComponent("stderr.txt")) }
}
