import Foundation
import GNSSCore
import GPSDProcesses
import TestSupport
import Testing

/// A box for GeoClue's clients: a private system bus (Debian's dbus-daemon, with a policy that
/// lets root own GeoClue's name), a real gpsd (gpsfake replaying a drive) and gpslocd
/// `--geoclue` on both — the programs under test (where-am-i, gammastep, Firefox, gdbus) are
/// pointed at it by `DBUS_SYSTEM_BUS_ADDRESS`, as libsystemd and GDBus read it.
final class GeoClueBox: Sendable {
    static let whereAmI = "/usr/libexec/geoclue-2.0/demos/where-am-i"
    static let dbusDaemon = "/usr/bin/dbus-daemon"
    static let gpslocd = Paths.packageRoot.appendingPathComponent(".build/debug/gpslocd").path
    /// Whether the GeoClue tests can run here (always under CI, where a missing program fails).
    static let available =
        Conditions.underCI
        || (FileManager.default.isExecutableFile(atPath: whereAmI)
            && FileManager.default.isExecutableFile(atPath: dbusDaemon))
    static let missingReason: Comment =
        "GeoClue tests skipped: install dbus-daemon and geoclue-2-demo (scripts/setup.sh does)"

    let folder: URL
    let bus: String
    let socket: String
    let state: URL
    let gpsd: GPSFakeServer
    let dbus: RunningProgram
    let daemon: RunningProgram
    let log: LineReader

    /// What the box's clients are run with: its bus, its gpslocd, a configuration of their own.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
        environment["GPSLOCATION_BROKER"] = socket
        environment["XDG_CONFIG_HOME"] = folder.appendingPathComponent("config").path
        environment["HOME"] = folder.path
        environment["DISPLAY"] = nil
        environment["WAYLAND_DISPLAY"] = nil
        environment["DBUS_SESSION_BUS_ADDRESS"] = nil
        return environment
    }

    private init(
        folder: URL, bus: String, gpsd: GPSFakeServer, dbus: RunningProgram, daemon: RunningProgram, log: LineReader
    ) {
        self.folder = folder
        self.bus = bus
        socket = folder.appendingPathComponent("socket").path
        state = folder.appendingPathComponent("state")
        self.gpsd = gpsd
        self.dbus = dbus
        self.daemon = daemon
        self.log = log
    }

    static func start(fixture: String = "drive-1hz-gp.nmea", cycle: Double = 0.05) async throws -> GeoClueBox {
        // Where other uids' clients can reach the bus (a private TMPDIR would hide it).
        let folder = OtherUserPrograms.reachableTemporaryFolder.appendingPathComponent("geoclue-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        _ = chmod(folder.path, 0o755)
        let busPath = folder.appendingPathComponent("bus").path
        let configuration = folder.appendingPathComponent("bus.conf")
        try busConfiguration(listen: busPath).write(to: configuration, atomically: true, encoding: .utf8)
        let (dbus, dbusOutput) = try launchReading(
            dbusDaemon, ["--config-file=\(configuration.path)", "--nofork", "--nopidfile", "--print-address=1"],
            environment: ProcessInfo.processInfo.environment)
        guard await dbusOutput.waitFor(timeout: 30, { $0.contains { $0.text.hasPrefix("unix:") } }) else {
            dbus.kill(SIGKILL)
            throw GeoClueBoxError("dbus-daemon did not start: \(dbusOutput.snapshot.map(\.text))")
        }
        let bus = "unix:path=\(busPath)"
        let gpsd: GPSFakeServer
        do {
            gpsd = try await GPSFakeServer.started(log: Paths.fixtures.appendingPathComponent(fixture), cycle: cycle)
        } catch {
            dbus.kill(SIGKILL)
            throw error
        }
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = bus
        let (daemon, log) = try launchReading(
            gpslocd,
            [
                "--gpsd", "127.0.0.1:\(gpsd.endpoint.port)", "--socket", folder.appendingPathComponent("socket").path,
                "--state", folder.appendingPathComponent("state").path, "--policy",
                folder.appendingPathComponent("policy.json").path, "--geoclue",
            ], environment: environment)
        let box = GeoClueBox(folder: folder, bus: bus, gpsd: gpsd, dbus: dbus, daemon: daemon, log: log)
        guard await log.waitFor(timeout: 30, { $0.contains { $0.text.hasPrefix("gpslocd: listening") } }) else {
            box.stop()
            throw GeoClueBoxError("gpslocd --geoclue did not start: \(log.snapshot.map(\.text).suffix(5))")
        }
        return box
    }

    /// Ends the box. SIGKILL for dbus-daemon: a test process that once ignored SIGTERM (for a
    /// dispatch source) passes that on to every program it starts.
    func stop() {
        daemon.terminate()
        dbus.kill(SIGKILL)
        gpsd.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    /// `gpsloc ARGUMENTS` against the box's gpslocd (decisions: `auth grant`, `revoke`, `reset`).
    func gpsloc(_ arguments: [String]) async throws -> ProgramResult {
        try await runProgram(GPSLocBinary.path, arguments, environment: environment)
    }

    /// Grants `app` (Always, full accuracy unless `reduced`) through gpslocd.
    func grant(_ app: String, reduced: Bool = false) async throws {
        let result = try await gpsloc(["auth", "grant", app, "--always"] + (reduced ? ["--reduced"] : []))
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// A program on the box's bus, running on, its stdout and stderr read as they come.
    func launch(_ executable: String, _ arguments: [String], environment extra: [String: String] = [:]) throws -> (
        RunningProgram, LineReader
    ) {
        try launchReading(executable, arguments, environment: environment.merging(extra) { $1 })
    }

    /// where-am-i (`arguments` after `-t 60`), running on, its output line by line as it prints
    /// (through stdbuf: its stdout to a pipe is otherwise written only when it exits).
    func launchWhereAmI(_ arguments: [String] = []) throws -> (RunningProgram, LineReader) {
        try launch("/usr/bin/stdbuf", ["-oL", "-eL", Self.whereAmI, "-t", "60"] + arguments)
    }

    /// gpslocd's audit log so far.
    var audit: String {
        (try? String(contentsOf: state.appendingPathComponent("audit.log"), encoding: .utf8)) ?? ""
    }

    static func busConfiguration(listen path: String) -> String {
        """
        <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
         "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
        <busconfig>
          <type>system</type>
          <listen>unix:path=\(path)</listen>
          <auth>EXTERNAL</auth>
          <policy context="default">
            <allow user="*"/>
            <allow own="*"/>
            <allow send_type="method_call"/>
            <allow send_type="signal"/>
            <allow send_type="method_return"/>
            <allow send_type="error"/>
            <allow receive_type="method_call"/>
            <allow receive_type="signal"/>
            <allow receive_type="method_return"/>
            <allow receive_type="error"/>
          </policy>
        </busconfig>
        """
    }
}

struct GeoClueBoxError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Starts a program with its stdout and stderr as one stream of lines, read as they come.
func launchReading(_ executable: String, _ arguments: [String], environment: [String: String]) throws -> (
    RunningProgram, LineReader
) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = environment
    process.standardInput = FileHandle.nullDevice
    let output = Pipe()
    process.standardOutput = output
    process.standardError = output
    let program = RunningProgram(process)
    try program.start()
    return (program, LineReader(output.fileHandleForReading))
}

/// One location as where-am-i prints it (its "New location:" block).
struct WhereAmILocation: Sendable {
    var latitude: Double
    var longitude: Double
    var accuracy: Double
    var altitude: Double?
    var speed: Double?
    var heading: Double?
    var description: String
    var timestamp: Int

    /// Every whole block in `lines`.
    static func parse(_ lines: [String]) -> [WhereAmILocation] {
        var found: [WhereAmILocation] = []
        var fields: [String: String] = [:]
        func flush() {
            guard let latitude = number(fields["Latitude"]), let longitude = number(fields["Longitude"]),
                let accuracy = number(fields["Accuracy"]), let time = fields["Timestamp"],
                let open = time.lastIndex(of: "("),
                let seconds = Int(time[time.index(after: open)...].prefix { $0.isNumber })
            else { return }
            found.append(
                WhereAmILocation(
                    latitude: latitude, longitude: longitude, accuracy: accuracy, altitude: number(fields["Altitude"]),
                    speed: number(fields["Speed"]), heading: number(fields["Heading"]),
                    description: fields["Description"] ?? "", timestamp: seconds))
        }
        for line in lines {
            if line.hasPrefix("New location") {
                fields = [:]
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let key = String(line[..<colon])
            fields[key] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if key == "Timestamp" { flush() }
        }
        return found
    }

    static func number(_ text: String?) -> Double? {
        guard let text else { return nil }
        return Double(text.prefix { $0.isNumber || $0 == "-" || $0 == "." })
    }
}
