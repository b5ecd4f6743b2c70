import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import GPSLocationBroker
import Glibc
import LocationCore

/// gpslocd: the system location service (docs/broker.md, `man gpslocd`).
let usage = """
    usage: gpslocd [--gpsd HOST:PORT] [--socket PATH] [--state DIR] [--policy FILE] [--geoclue]

    The only client of gpsd on this machine: programs connect to its Unix socket and get the
    locations their decision allows — identified by the kernel, with consent, the in-use rule and
    reduced accuracy applied here, out of their reach. Runs in the foreground (systemd runs it the
    same way); logs to stderr.

      --gpsd HOST:PORT   the gpsd to read (default $GPSLOCATION_GPSD, else 127.0.0.1:2947)
      --socket PATH      where to listen (default /run/gpslocd/socket; with systemd's socket
                         activation the socket it passes)
      --state DIR        decisions, reduced-accuracy state and the audit log (default
                         /var/lib/gpslocd; systemd's StateDirectory)
      --policy FILE      the administrator's policy (default /etc/gpslocation/policy.json)
      --requests-per-second N
                         requests the programs of one uid may make per second, together (default
                         400, after a burst of twice that); past it gpslocd reads that uid's
                         programs more slowly, and no one else waits for them
      --geoclue          also serve GeoClue 2's D-Bus API (org.freedesktop.GeoClue2 on the system
                         bus, or $DBUS_SYSTEM_BUS_ADDRESS): Firefox, GNOME, gammastep and every
                         GeoClue client get the receiver, with the same decisions, agents and
                         reduced accuracy (docs/geoclue.md); GeoClue's own service must be stopped
    """

var options: [String: String] = [:]
var geoClue = false
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    if argument == "--help" || argument == "-h" {
        print(usage)
        exit(0)
    }
    if argument == "--geoclue" {
        geoClue = true
        continue
    }
    guard ["--gpsd", "--socket", "--state", "--policy", "--requests-per-second"].contains(argument),
        let value = arguments.popFirst()
    else {
        DescriptorWrite.write("gpslocd: unknown or incomplete option \(argument)\n\n\(usage)\n", to: STDERR_FILENO)
        exit(2)
    }
    options[String(argument.dropFirst(2))] = value
}

var requestsPerSecond: Double?  // nil: BrokerServer's default (400)
if let text = options["requests-per-second"] {
    guard let value = Double(text), value >= 1, value.isFinite else {
        DescriptorWrite.write(
            "gpslocd: --requests-per-second must be a number of at least 1, not \(text)\n", to: STDERR_FILENO)
        exit(2)
    }
    requestsPerSecond = value
}
let endpoint: GPSDEndpoint
if let text = options["gpsd"] {
    guard let parsed = GPSDEndpoint.parse(text) else {
        DescriptorWrite.write("gpslocd: --gpsd must be HOST[:PORT], not \(text)\n", to: STDERR_FILENO)
        exit(2)
    }
    endpoint = parsed
} else {
    endpoint = .fromEnvironment()
}
let stateDirectory = URL(
    fileURLWithPath: options["state"] ?? ProcessInfo.processInfo.environment["STATE_DIRECTORY"] ?? "/var/lib/gpslocd")
umask(0o077)
do {
    try FileManager.default.createDirectory(
        at: stateDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
} catch {
    DescriptorWrite.write(
        "gpslocd: cannot create the state folder \(stateDirectory.path): \(error)\n", to: STDERR_FILENO)
    exit(1)
}
if let problem = BrokerServer.unsafeFolder(stateDirectory.path, allowRoot: false) {
    DescriptorWrite.write("gpslocd: refusing the state folder: \(problem)\n", to: STDERR_FILENO)
    exit(1)
}
// Two descriptors per program: the soft limit (1,024 outside systemd) up to the hard one.
var descriptors = rlimit()
if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &descriptors) == 0, descriptors.rlim_cur < descriptors.rlim_max {
    descriptors.rlim_cur = descriptors.rlim_max
    _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &descriptors)
}
signal(SIGPIPE, SIG_IGN)
let service = BrokerService(
    stateDirectory: stateDirectory, endpoint: endpoint, policyPath: options["policy"] ?? LocationPolicy.defaultPath)
let socketPath: String? =
    options["socket"]
    ?? (ProcessInfo.processInfo.environment["LISTEN_FDS"] == nil ? BrokerProtocol.defaultSocketPath : nil)
let server: BrokerServer
do {
    server = try BrokerServer(service: service, socketPath: socketPath, requestsPerSecond: requestsPerSecond)
} catch {
    DescriptorWrite.write("gpslocd: \(error.description)\n", to: STDERR_FILENO)
    exit(1)
}
if geoClue, let problem = service.serveGeoClue() {
    DescriptorWrite.write("gpslocd: --geoclue: \(problem)\n", to: STDERR_FILENO)
    exit(1)
}
/// SIGINT and SIGTERM end the loop (the handlers run on a global queue, not the main actor);
/// live before gpslocd says it listens (a stop at start-up is never lost).
nonisolated func stopOnSignals(_ server: BrokerServer) -> [any DispatchSourceSignal] {
    SignalSources.install([SIGINT, SIGTERM]) { _ in server.stop() }
}
// Kept for the life of the process: a released signal source is cancelled.
let signalSources = stopOnSignals(server)
DescriptorWrite.write(
    "gpslocd: listening on \(socketPath ?? "the socket systemd passed")\(geoClue ? " and as org.freedesktop.GeoClue2" : ""), reading gpsd at \(endpoint), state in \(stateDirectory.path)\n",
    to: STDERR_FILENO)
server.run()
service.stop()
for source in signalSources { source.cancel() }
DescriptorWrite.write("gpslocd: stopped\n", to: STDERR_FILENO)
