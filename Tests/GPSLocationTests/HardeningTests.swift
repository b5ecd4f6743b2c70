import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GNSSCore
@testable import GPSDClient
@testable import GPSLocCLI
@testable import GPSLocation
@testable import LocationCore

/// The decision store and the policy against mistakes and planted files.
@Suite("hardening: the decision store and the policy fail closed", .timeLimit(.minutes(5)))
struct HardeningTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("harden-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("a misspelled accuracy is no decision at all, never full accuracy")
    func misspelledAccuracy() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = DecisionStore(
            directory: folder.appendingPathComponent("store"), diagnosticsHandler: Diagnostics.discard)
        try store.set(AuthorizationDecision(status: .authorizedAlways), for: "probe")
        for spelling in ["REDUCED", "Reduced", "reducedAccuracy", ""] {
            let text =
                #"{"app":{"status":"authorizedAlways","accuracy":"\#(spelling)","decidedAt":"2026-11-30T10:00:00Z"}}"#
            try Data(text.utf8).write(to: store.fileURL)
            #expect(store.decision(for: "app") == nil, "\(spelling)")
            #expect(store.problem?.description.contains("not a valid decision") == true)
        }
        let policyPath = folder.appendingPathComponent("policy.json").path
        try Data(#"{"granted":{"app":{"status":"authorizedAlways","accuracy":"Reduced"}}}"#.utf8).write(
            to: URL(fileURLWithPath: policyPath))
        let policy = LocationPolicy.load(path: policyPath)
        #expect(!policy.locationServicesEnabled && policy.problem != nil, "an invalid policy turns services off")
    }

    @Test("a misspelled policy key is no silent lapse: the policy is invalid, services off, the key named")
    func unknownPolicyKeys() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("policy.json").path
        for (text, key) in [
            (#"{"Restricted":["app"]}"#, "Restricted"), (#"{"restrict":["app"]}"#, "restrict"),
            (#"{"locationServicesEnable":false}"#, "locationServicesEnable"),
            (#"{"granted":{"app":{"status":"authorizedAlways","acuracy":"full"}}}"#, "granted.app.acuracy"),
        ] {
            try Data(text.utf8).write(to: URL(fileURLWithPath: path))
            let policy = LocationPolicy.load(path: path)
            #expect(!policy.locationServicesEnabled, "\(text)")
            #expect(policy.decision(for: "app") == AuthorizationDecision(status: .denied), "\(text)")
            #expect(policy.problem?.description.contains(key) == true, "\(String(describing: policy.problem))")
        }
    }

    @Test("a policy that is a link, or in a folder other users can write, is not trusted")
    func policyLinkAndFolder() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let real = folder.appendingPathComponent("real.json")
        try Data(#"{"restricted":["app"]}"#.utf8).write(to: real)
        #expect(LocationPolicy.load(path: real.path).decision(for: "app") == AuthorizationDecision(status: .restricted))
        // A link (here to a file that is fine in itself): refused, services off.
        let link = folder.appendingPathComponent("policy.json").path
        #expect(symlink(real.path, link) == 0)
        let linked = LocationPolicy.load(path: link)
        #expect(!linked.locationServicesEnabled && linked.problem?.description.contains("symbolic link") == true)
        // Its folder open to everyone: another user could rename it away and write `{}`.
        chmod(folder.path, 0o777)
        defer { chmod(folder.path, 0o700) }
        let open = LocationPolicy.load(path: real.path)
        #expect(!open.locationServicesEnabled && open.problem?.description.contains("chmod 755 \(folder.path)") == true)
    }

    @Test("GPSLOCATION_POLICY only adds restrictions to the administrator's policy")
    func additionalPolicyRestrictsOnly() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let admin = folder.appendingPathComponent("admin.json").path
        let extra = folder.appendingPathComponent("extra.json").path
        try Data(#"{"restricted":["kid"],"granted":{"fleetd":{"status":"authorizedAlways","accuracy":"full"}}}"#.utf8)
            .write(to: URL(fileURLWithPath: admin))
        try Data(
            #"{"restricted":["tracker"],"granted":{"kid":{"status":"authorizedAlways","accuracy":"full"},"me":{"status":"authorizedAlways","accuracy":"full"}}}"#
                .utf8
        ).write(to: URL(fileURLWithPath: extra))
        let policy = LocationPolicy.effective(path: admin, additional: extra)
        #expect(policy.decision(for: "kid") == AuthorizationDecision(status: .restricted), "no escape")
        #expect(policy.decision(for: "tracker") == AuthorizationDecision(status: .restricted), "added")
        #expect(policy.decision(for: "me") == nil, "its grants are ignored")
        #expect(policy.decision(for: "fleetd") == AuthorizationDecision(status: .authorizedAlways))
        #expect(policy.problem?.description.contains("can only add restrictions") == true)
        try Data(#"{"locationServicesEnabled":false}"#.utf8).write(to: URL(fileURLWithPath: extra))
        #expect(!LocationPolicy.effective(path: admin, additional: extra).locationServicesEnabled)
    }

    @Test("a policy others can write is not trusted: services off, and it says how to fix it")
    func writablePolicy() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("policy.json").path
        try Data(#"{"granted":{"app":{"status":"authorizedAlways","accuracy":"full"}}}"#.utf8).write(
            to: URL(fileURLWithPath: path))
        chmod(path, 0o666)
        let policy = LocationPolicy.load(path: path)
        #expect(
            !policy.locationServicesEnabled && policy.decision(for: "app") == AuthorizationDecision(status: .denied))
        #expect(policy.problem?.description.contains("chmod 644") == true)
        chmod(path, 0o644)
        #expect(LocationPolicy.load(path: path).decision(for: "app")?.status == .authorizedAlways)
    }

    @Test("the store refuses a folder open to others and never writes through planted links")
    func plantedFiles() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let storeFolder = folder.appendingPathComponent("store")
        let store = DecisionStore(directory: storeFolder, diagnosticsHandler: Diagnostics.discard)
        try store.set(AuthorizationDecision(status: .authorizedWhenInUse), for: "app")
        // Another user's planted link, named like a temporary file of this process: not followed.
        let victim = folder.appendingPathComponent("victim.txt")
        try Data("precious".utf8).write(to: victim)
        try FileManager.default.createSymbolicLink(
            atPath: storeFolder.appendingPathComponent(".authorizations.json.\(getpid()).tmp").path,
            withDestinationPath: victim.path)
        try store.set(AuthorizationDecision(status: .authorizedAlways), for: "app")
        #expect(try String(contentsOf: victim, encoding: .utf8) == "precious")
        #expect(store.decision(for: "app")?.status == .authorizedAlways)
        // The lock file replaced by a link: refused rather than followed.
        let lock = storeFolder.appendingPathComponent("authorizations.lock")
        if FileManager.default.fileExists(atPath: lock.path) {
            try FileManager.default.removeItem(at: lock)
            try FileManager.default.createSymbolicLink(atPath: lock.path, withDestinationPath: victim.path)
            #expect(throws: DecisionStore.StoreError.self) {
                try store.set(AuthorizationDecision(status: .denied), for: "app")
            }
            #expect(try String(contentsOf: victim, encoding: .utf8) == "precious")
            try FileManager.default.removeItem(at: lock)
        }
        // A folder others can write to: nothing is read or written.
        chmod(storeFolder.path, 0o777)
        #expect(throws: DecisionStore.StoreError.self) {
            try store.set(AuthorizationDecision(status: .denied), for: "app")
        }
        #expect(store.decision(for: "app") == nil)
        chmod(storeFolder.path, 0o700)
        #expect(store.decision(for: "app")?.status == .authorizedAlways)
    }
}

/// SIGINT and SIGTERM end gpsloc promptly whatever its output or replay clock is doing.
@Suite("signals end gpsloc at once, whatever stdout and the replay clock do", .timeLimit(.minutes(5)))
struct SignalTests {
    /// Starts gpsloc with `arguments`, signals it once its first line is out (it is running;
    /// with `stalledStdout` nothing more is read, so a fast replay fills the pipe and blocks),
    /// returns (exit status, ms to exit, what it said on stderr).
    static func signalled(
        _ arguments: [String], signal number: Int32, stalledStdout: Bool
    ) async throws -> (status: Int32, milliseconds: Double, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: GPSLocBinary.path)
        process.arguments = arguments
        process.environment = GPSLocBinary.environment(configHome: try GPSLocBinary.makeConfigHome())
        let pipe = Pipe()
        process.standardOutput = pipe
        let said = FileManager.default.temporaryDirectory.appendingPathComponent("signalled-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: said) }
        _ = FileManager.default.createFile(atPath: said.path, contents: nil)
        process.standardError = try FileHandle(forWritingTo: said)
        let program = RunningProgram(process)
        try program.start()
        // The first line, read on a thread of its own; after it the pipe is read no more when
        // stalled, else to its end.
        let firstLine = ExitLatch()
        let output = pipe.fileHandleForReading
        Thread.detachNewThread {
            var byte: UInt8 = 0
            while read(output.fileDescriptor, &byte, 1) == 1 && byte != 10 {}
            firstLine.finish(0)
            if !stalledStdout { _ = output.readDataToEndOfFile() }
        }
        await firstLine.wait()
        let start = ContinuousClock.now
        program.kill(number)
        let ended = await program.exited(hangLimit: 60)
        let elapsed = ContinuousClock.now - start
        if !ended { program.kill(SIGKILL) }
        _ = pipe
        return (
            program.terminationStatus,
            Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15,
            (try? String(contentsOf: said, encoding: .utf8)) ?? ""
        )
    }

    // Timed loosely: the 0.2 s is measured on an idle machine (docs/cli.md: 64–168 ms); here,
    // among parallel suites on two cores kept busy by other processes (2.3 s seen, and 10.2 s
    // once with builds running beside a busy CI run), the bound only separates "ends at once"
    // from the ten minutes the paced recording runs, or a stalled pipe's for ever (STYLE:
    // performance is measured, not asserted).
    /// The cause of a paced replay that ran on after SIGINT (`pacedReplay` failed in a serial
    /// run; the stuck gpsloc had SIGINT caught by then, so the signal had come while it was
    /// still ignored): libdispatch installs a signal source's handler a moment after `resume()`.
    /// `SignalSources.install` returns only when the handlers are in place (SIGUSR2 here: the
    /// test process's own SIGINT stays the runner's). The race itself cannot be shown in this
    /// process: libdispatch's manager thread is already running here, so registration is quick
    /// and this test passes even without the wait (checked). A fresh process is where it showed:
    /// a handler still the default right after `resume()`, installed one 100-µs wait later.
    @Test("signal sources are live when install returns, and a signal then reaches the handler")
    func signalSourcesLiveOnReturn() async throws {
        // Ignored until then, so that a failure here cannot end the test process.
        signal(SIGUSR2, SIG_IGN)
        let heard = ExitLatch()
        let sources = SignalSources.install([SIGUSR2]) { _ in heard.finish(0) }
        defer { for source in sources { source.cancel() } }
        try #require(SignalSources.hasHandler(SIGUSR2), "install returned before libdispatch's handler was in place")
        kill(getpid(), SIGUSR2)
        await heard.wait()
    }

    @Test("a paced replay (--speed 1) ends on SIGINT and on SIGTERM", arguments: [SIGINT, SIGTERM])
    func pacedReplay(signal number: Int32) async throws {
        let result = try await Self.signalled(
            ["replay", Paths.fixtures.appendingPathComponent("loop-1hz-gp.nmea").path, "--speed", "1", "--json"],
            signal: number, stalledStdout: false)
        #expect(result.milliseconds < 45_000, "ended after \(result.milliseconds) ms")
        #expect(result.status == 0 || result.status == 128 + number)
    }

    @Test("a replay whose stdout is stalled (a full pipe) still ends on SIGTERM, exit 143, and says why")
    func stalledStdout() async throws {
        let result = try await Self.signalled(
            ["replay", Paths.fixtures.appendingPathComponent("drive-10hz-multi.nmea").path, "--fast", "--json"],
            signal: SIGTERM, stalledStdout: true)
        #expect(result.milliseconds < 45_000, "ended after \(result.milliseconds) ms")
        #expect(result.status == 143)
        // Not silent: why it exits without stopping cleanly, and what that may cost.
        #expect(result.stderr.contains("gpsloc: still stopping 0.1 s after the signal"), "\(result.stderr)")
    }
}

@Suite("values outside physical ranges, and gpsd's strings on a terminal", .timeLimit(.minutes(5)))
struct PhysicalRangeTests {
    /// A running engine given one fix changed by `change`: what it delivered, its diagnostics.
    static func deliver(_ change: (inout Fix) -> Void) -> (
        engine: LocationEngine, location: LocationValue?, notes: [(String, String)]
    ) {
        var engine = LocationEngineTests.engine()
        _ = engine.start(.continuous, now: LocationEngineTests.start)
        var fix = LocationEngineTests.fix(at: 0)
        change(&fix)
        var actions = engine.handle(.fix(fix), now: LocationEngineTests.start, uptime: 0)
        if LocationEngineTests.delivered(actions).isEmpty {
            // No estimate left at all: held for a better report of its epoch; the source's end
            // lets it through (HonestAccuracyTests).
            actions += engine.handle(
                .problem(CLError(.locationUnknown, message: "end"), terminal: true), now: LocationEngineTests.start)
        }
        let notes = actions.compactMap {
            $0.diagnostic.map { ($0.code, $0.message) }
        }
        return (engine, LocationEngineTests.delivered(actions).first, notes)
    }

    @Test("speed 5e9 m/s and course 720° become unknown, said once a minute")
    func speedAndCourse() {
        let t0 = LocationEngineTests.start
        var (engine, location, notes) = Self.deliver {
            $0.speed = 5e9
            $0.course = 720
        }
        #expect(location?.speed == -1 && location?.speedAccuracy == -1)
        #expect(location?.course == -1 && location?.courseAccuracy == -1)
        #expect(notes.map(\.0) == ["outOfRange"])
        #expect(notes.first?.1.contains("speed 5e+09 m/s and course 720°") == true)
        var again = LocationEngineTests.fix(at: 1)
        again.speed = -3
        let second = engine.handle(.fix(again), now: t0 + 1, uptime: 1)
        #expect(!second.contains { $0.diagnostic != nil }, "once a minute")
    }

    @Test("an altitude of 10,000 km and negative error estimates become unknown, said once")
    func altitudeAndErrors() {
        let (_, location, notes) = Self.deliver { fix in
            fix.altitudeMSL = 1e7
            fix.altitudeHAE = 1e7 + 48
            fix.errors.horizontal = -5
            fix.errors.latitude = -1
            fix.errors.longitude = -1
            fix.errors.speed = .nan
        }
        #expect(location != nil, "the position itself is fine")
        #expect(location?.verticalAccuracy == -1, "no altitude: vertical accuracy invalid")
        #expect((location?.horizontalAccuracy ?? -1) >= 0 && location?.speedAccuracy == -1)
        #expect(notes.map(\.0) == ["outOfRange"])
        #expect(notes.first?.1.contains("altitude 1e+07 m") == true && notes.first?.1.contains("below zero") == true)
    }

    @Test("a sky with elevation 91, azimuth 400, SNR −1 and HDOP 0 shows them as unknown")
    func sky() {
        let raw = SkyView(
            time: nil,
            satellites: [
                Satellite(
                    prn: 5, constellation: .gps, satelliteID: 5, signalToNoise: -1, elevation: 91, azimuth: 400,
                    used: true),
                Satellite(
                    prn: 7, constellation: .gps, satelliteID: 7, signalToNoise: 38, elevation: 45, azimuth: 120,
                    used: true),
            ],
            dilution: DilutionOfPrecision(horizontal: 0, vertical: 1.4))
        let sky = PhysicalRanges.check(raw)
        #expect(sky.satellites[0].signalToNoise == nil && sky.satellites[0].elevation == nil)
        #expect(sky.satellites[0].azimuth == nil)
        #expect(sky.satellites[1] == raw.satellites[1])
        #expect(sky.dilution.horizontal == nil && sky.dilution.vertical == 1.4)
        // Each way off the fast path alone: one value out of range, or one satellite twice.
        let good = Satellite(
            prn: 7, constellation: .gps, satelliteID: 7, signalToNoise: 38, elevation: 45, azimuth: 120, used: true)
        let fine = SkyView(time: nil, satellites: [good], dilution: DilutionOfPrecision(horizontal: 0.9))
        #expect(PhysicalRanges.check(fine) == fine)
        var badDOP = fine
        badDOP.dilution.geometric = 100.5
        #expect(PhysicalRanges.check(badDOP) == fine)
        var nan = fine
        nan.satellites[0].azimuth = .nan
        #expect(PhysicalRanges.check(nan).satellites[0].azimuth == nil)
        var twice = fine
        twice.satellites.append(
            Satellite(
                prn: 7, constellation: .gps, satelliteID: 7, signalToNoise: 44, elevation: nil, azimuth: nil,
                used: false))
        #expect(PhysicalRanges.check(twice).satellites.map(\.signalToNoise) == [44])
    }

    @Test("escape sequences in gpsd's device path and driver never reach the terminal")
    func terminalEscaping() {
        #expect(terminalSafe("/dev/tty\u{1B}[2J\u{7}USB0") == #"/dev/tty\e[2J\x07USB0"#)
        #expect(terminalSafe("u-blox") == "u-blox")
        #expect(terminalSafe("\u{9B}31m") == #"\x9B31m"#)
    }
}

@Suite("auth status and doctor show the decision that applies", .timeLimit(.minutes(5)))
struct EffectiveDecisionTests {
    @Test("doctor and auth status never pass an escape sequence to the terminal")
    func escapesAreShownSafely() async throws {
        let hostile = "x\u{1B}]0;PWNED\u{07}\u{1B}[2Jy"
        let doctor = try await GPSLocBinary.run(["doctor", "--app", hostile, "--port", "1"]).stdout
        #expect(!doctor.contains("\u{1B}") && !doctor.contains("\u{07}") && doctor.contains(#"x\e]0;PWNED\x07\e[2Jy"#))
    }

    @Test("a restriction in the policy is what auth status and doctor report, not the user's grant")
    func restrictedByPolicy() async throws {
        let home = try GPSLocBinary.makeConfigHome()
        #expect(try await GPSLocBinary.run(["auth", "grant", "kid", "--always"], configHome: home).status == 0)
        let policy = home.appendingPathComponent("policy.json")
        try Data(#"{"restricted":["kid"]}"#.utf8).write(to: policy)
        chmod(policy.path, 0o644)
        // Awaited, not waited for: a blocked Swift concurrency thread is one of two.
        func run(_ arguments: [String]) async throws -> String {
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_CONFIG_HOME"] = home.path
            environment["XDG_CACHE_HOME"] = home.appendingPathComponent("cache").path
            environment["GPSLOCATION_POLICY"] = policy.path
            return try await runProgram(GPSLocBinary.path, arguments, environment: environment).stdout
        }
        let status = try await run(["auth", "status"])
        #expect(
            status.contains(
                "kid: restricted (the administrator's policy; the user's decision, authorizedAlways, does not apply)"),
            "\(status)")
        let doctor = try await run(["doctor", "--app", "kid", "--port", "1"])
        #expect(doctor.contains("kid is restricted by the administrator's policy"), "\(doctor)")
    }
}

@Suite("a corrupt decision store loses only what cannot be read", .timeLimit(.minutes(5)))
struct CorruptStoreTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        chmod(url.path, 0o700)
        return url
    }

    static func asides(_ folder: URL) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.contains(".corrupt-") }.sorted()
    }

    @Test("every corrupt copy is kept, even two in the same second")
    func everyCopyKept() throws {
        let folder = try Self.folder()
        let store = DecisionStore(directory: folder)
        for text in ["{not json", "[1,2"] {
            try Data(text.utf8).write(to: store.fileURL)
            #expect(store.decision(for: "any") == nil)
        }
        #expect(try Self.asides(folder).count == 2)
    }

    @Test("the readable decisions survive, and a grant after the corruption keeps them")
    func salvage() throws {
        let folder = try Self.folder()
        let store = DecisionStore(directory: folder)
        try Data(
            #"{"good":{"status":"authorizedAlways","accuracy":"full","decidedAt":"2026-11-30T10:00:00Z"},"bad":{"status":3}}"#
                .utf8
        ).write(to: store.fileURL)
        #expect(store.decision(for: "good")?.status == .authorizedAlways)
        #expect(store.problem?.description.contains("1 decision(s) could still be read") == true)
        try store.set(AuthorizationDecision(status: .authorizedWhenInUse), for: "new")
        #expect(store.decision(for: "good")?.status == .authorizedAlways)
        #expect(store.decision(for: "new")?.status == .authorizedWhenInUse)
        #expect(try Self.asides(folder).count == 1)
    }

    @Test("a store larger than 1 MB is not read into memory: moved aside, said")
    func oversized() throws {
        let folder = try Self.folder()
        let store = DecisionStore(directory: folder)
        try Data(repeating: UInt8(ascii: " "), count: 2 << 20).write(to: store.fileURL)
        #expect(store.decision(for: "any") == nil)
        #expect(store.problem?.description.contains("larger than 1 MB") == true)
        #expect(try Self.asides(folder).count == 1)
    }
}

/// A TCP server on a free loopback port that treats each client as told: closes at once, says
/// nothing, or greets and then sends an over-long line. Counts connections.
final class MisbehavingServer: @unchecked Sendable {
    enum Behaviour { case closeAtOnce, silent, overlongLine }
    let port: Int
    private let listener: Int32
    let accepted = EventCounter()
    /// When each connection was accepted (monotonic seconds).
    let acceptTimes = Locked<[Double]>([])
    private let clients = Locked<[Int32]>([])

    init(_ behaviour: Behaviour) throws {
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var one: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = listener
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        guard listen(fd, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { return }
                acceptTimes.withLock { $0.append(ProcessInfo.processInfo.systemUptime) }
                accepted.increment()
                switch behaviour {
                case .closeAtOnce:
                    close(client)
                case .silent:
                    clients.withLock { $0.append(client) }
                case .overlongLine:
                    let greeting =
                        #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#
                        + "\n"
                    let long = "{\"class\":\"TPV\",\"x\":\"" + String(repeating: "a", count: 200_000)
                    for text in [greeting, long] {
                        _ = text.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                    }
                    clients.withLock { $0.append(client) }
                }
            }
        }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        for client in clients.withLock({ $0 }) { close(client) }
    }
}

@Suite("reconnecting to servers that misbehave", .timeLimit(.minutes(5)))
struct MisbehavingServerTests {
    /// Runs a reconnecting source against `server` until `done` holds of the server and the
    /// errors so far (each accept and each reconnection re-checks it); returns the errors.
    static func run(
        _ server: MisbehavingServer, noData: Duration = .seconds(5),
        until done: @escaping @Sendable (MisbehavingServer, [GPSDError]) -> Bool
    ) async -> [GPSDError] {
        let source = GPSDConnection(
            endpoint: GPSDEndpoint(port: server.port), noDataTimeout: noData, reconnect: ReconnectPolicy())
        let errors = Locked<[GPSDError]>([])
        source.start { event in
            if case .reconnecting(let error, _, _) = event {
                errors.withLock { $0.append(error) }
                server.accepted.changed()
            }
        }
        #expect(await server.accepted.wait { _ in done(server, errors.withLock { $0 }) })
        source.stop()
        server.stop()
        return errors.withLock { $0 }
    }

    @Test("a server that accepts and closes at once: the backoff still grows (a handful of tries in 3 s, not 30)")
    func acceptAndClose() async throws {
        let server = try MisbehavingServer(.closeAtOnce)
        // Until a connection comes 3 s or more after the first: the tries before it are counted.
        _ = await Self.run(server) { server, _ in
            let times = server.acceptTimes.withLock { $0 }
            return (times.last ?? 0) - (times.first ?? 0) >= 3
        }
        let times = server.acceptTimes.withLock { $0 }
        let tries = times.filter { $0 - (times.first ?? 0) < 3 }.count
        #expect(tries >= 3 && tries <= 8, "\(tries) connections in 3 s")
    }

    @Test("a half-open server that never speaks is dropped after the no-data timeout and tried again")
    func halfOpen() async throws {
        let server = try MisbehavingServer(.silent)
        let errors = await Self.run(server, noData: .milliseconds(500)) { server, errors in
            server.accepted.value >= 2 && !errors.isEmpty
        }
        #expect(server.accepted.value >= 2)
        #expect(errors.first?.code == .unresponsive)
        #expect(errors.first?.description.contains("sent nothing at all") == true)
    }

    @Test("an over-long line is reported as what it is, not as a closed connection")
    func overlongLine() async throws {
        let server = try MisbehavingServer(.overlongLine)
        let errors = await Self.run(server) { _, errors in !errors.isEmpty }
        #expect(errors.first?.code == .protocolError, "\(errors.map(\.code))")
    }
}
