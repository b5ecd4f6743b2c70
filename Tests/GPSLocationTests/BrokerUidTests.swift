import Foundation
import GPSDProcesses
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// A client of gpslocd in another language, as another uid: Python, speaking docs/broker.md's
/// protocol. One connection per app id; every line received goes to stderr as
/// "MONOTONIC-SECONDS APP LINE" (the system-wide monotonic clock, which the test reads too).
let brokerPythonClient = #"""
    import json, selectors, socket, sys, time
    path, apps = sys.argv[1], sys.argv[2].split(",")
    chooser = selectors.DefaultSelector()
    for app in apps:
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        s.sendall((json.dumps({"class": "HELLO", "version": 2, "app": app}) + "\n").encode())
        s.sendall((json.dumps({"class": "WATCH"}) + "\n").encode())
        chooser.register(s, selectors.EVENT_READ, [app, b""])
    while True:
        for key, _ in chooser.select():
            data = key.fileobj.recv(65536)
            if not data:
                sys.exit(0)
            key.data[1] += data
            while b"\n" in key.data[1]:
                line, key.data[1] = key.data[1].split(b"\n", 1)
                sys.stderr.write("%.6f %s %s\n" % (time.monotonic(), key.data[0], line.decode()))
                sys.stderr.flush()
    """#

extension RealGPSD.LaneC {
    /// #34's boundary, with real processes under different uids: gpslocd as a user of its own
    /// (uid 12346, as its unit runs it), a real gpsd (gpsfake), root's programs, and a program of
    /// uid 12345 that connects to gpslocd's socket.
    @Suite(
        "gpslocd: another uid gets nothing without a grant, a location after it, nothing a second after a revoke",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason),
        .enabled(
            if: OtherUserPrograms.canRunAsOtherUser, Comment(rawValue: OtherUserPrograms.cannotRunAsOtherUserReason)),
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") || Conditions.underCI,
            "python3 not installed (gpsfake needs it too)"))
    struct BrokerUidTests {
        static let daemon = Paths.packageRoot.appendingPathComponent(".build/debug/gpslocd").path
        static let uid = 12345
        static let unprivileged = [
            "/usr/bin/setpriv", "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--no-new-privs",
        ]

        static func monotonic() -> Double {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
        }

        /// (time, app, message) of each line a Python client printed.
        static func parsed(_ reader: LineReader) -> [(time: Double, app: String, message: BrokerMessage)] {
            parsed(reader.snapshot)
        }
        /// The same for lines a wait's condition is given (the reader's lock is held then).
        static func parsed(_ lines: [(time: Date, text: String)]) -> [(
            time: Double, app: String, message: BrokerMessage
        )] {
            lines.compactMap { line in
                let parts = line.text.split(separator: " ", maxSplits: 2)
                guard parts.count == 3, let time = Double(parts[0]),
                    let message = BrokerMessage(line: Array(parts[2].utf8))
                else { return nil }
                return (time, String(parts[1]), message)
            }
        }

        @Test("the whole boundary: grant, revoke within a second, no self-written state, one reduced point for the box")
        func boundary() async throws {
            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea"), cycle: 0.05)
            defer { server.stop() }
            let broker = try await OwnUserBroker.start(gpsdPort: server.endpoint.port)
            defer { broker.stop() }
            let (folder, socket, state) = (broker.folder, broker.socket, broker.state)
            let client = folder.appendingPathComponent("client.py")
            try brokerPythonClient.write(to: client, atomically: true, encoding: .utf8)
            #expect(chmod(client.path, 0o644) == 0)

            // Root's own app, granted: the reference that fixes are flowing.
            let fixes = EventCounter()
            let positions = EventCounter()
            let root = BrokerLink(
                path: socket, app: "intruder", afterWelcome: [BrokerLine("WATCH").line],
                onMessage: {
                    if $0.messageClass == "FIX" { fixes.increment() }
                    if $0.messageClass == "FIX" && $0.double("lat") != nil { positions.increment() }
                }, onState: { _ in })
            defer { root.close() }
            _ = try root.startAndWait()
            func decide(_ app: String, uid: Int?, _ status: String, _ accuracy: String = "full") throws {
                let reply = try root.request(
                    {
                        $0.add("app", app)
                        $0.add("uid", uid)
                        $0.add("status", status)
                        $0.add("accuracy", accuracy)
                    }, className: "GRANT", timeout: 10)
                #expect(reply.bool("ok") == true, "\(reply.fields)")
            }
            // The same label granted to root is not uid 12345's app.
            try decide("intruder", uid: nil, "authorizedAlways")

            let (other, otherLog) = try launchReadingStderr(
                Self.unprivileged[0],
                Array(Self.unprivileged.dropFirst()) + ["/usr/bin/python3", client.path, socket, "intruder"],
                environment: ProcessInfo.processInfo.environment)
            defer { if other.isRunning { other.terminate() } }
            #expect(await otherLog.waitFor(timeout: 30) { $0.contains { $0.text.contains("WELCOME") } })
            let welcome = try #require(Self.parsed(otherLog).first { $0.message.messageClass == "WELCOME" })
            #expect(welcome.message.int("uid") == Self.uid && welcome.message.string("status") == "notDetermined")
            // Five fixes reach root's app while uid 12345's gets none.
            let before = fixes.value
            #expect(await fixes.wait(hangLimit: 60) { $0 >= before + 5 })
            #expect(!Self.parsed(otherLog).contains { $0.message.messageClass == "FIX" })
            // What root's app last received is kept by gpslocd and comes with its next WELCOME;
            // uid 12345's program of the same label had none (its WELCOME above has no `last`).
            #expect(welcome.message.object("last") == nil)
            #expect(await positions.wait(hangLimit: 60) { $0 >= 1 })
            let later = BrokerLink(path: socket, app: "intruder", onMessage: { _ in }, onState: { _ in })
            defer { later.close() }
            let last = try #require(try later.startAndWait().last)
            #expect(last.gnss?.reduced != true && last.horizontalAccuracy != 3200, "\(last)")

            // Granted by root for uid 12345: locations flow to it.
            try decide("intruder", uid: Self.uid, "authorizedAlways")
            #expect(
                await otherLog.waitFor(timeout: 60) { lines in
                    Self.parsed(lines).contains { $0.message.messageClass == "FIX" }
                })

            // Revoked: it hears so within a second, and no fix follows.
            let revokedAt = Self.monotonic()
            try decide("intruder", uid: Self.uid, "denied")
            #expect(
                await otherLog.waitFor(timeout: 30) { lines in
                    Self.parsed(lines).contains {
                        $0.message.messageClass == "AUTHORIZATION" && $0.message.string("status") == "denied"
                    }
                })
            let lines = Self.parsed(otherLog)
            let denied = try #require(
                lines.firstIndex {
                    $0.message.messageClass == "AUTHORIZATION" && $0.message.string("status") == "denied"
                })
            print(
                "revocation reached the other uid's program \(Int((lines[denied].time - revokedAt) * 1000)) ms after the request"
            )
            #expect(lines[denied].time - revokedAt < 1.0)
            let afterRevoke = fixes.value
            #expect(await fixes.wait(hangLimit: 60) { $0 >= afterRevoke + 5 })
            #expect(!Self.parsed(otherLog)[(denied + 1)...].contains { $0.message.messageClass == "FIX" })
            other.terminate()

            // Five app ids of uid 12345, all granted reduced, and root's own app granted reduced:
            // one and the same grid point — one secret for the box, not one per uid (#51: three
            // uids' cells once intersected to a ~1 km band).
            try decide("rootreduced", uid: nil, "authorizedAlways", "reduced")
            let rootPoints = Watched<[Double: String]>([:])
            let rootReduced = BrokerLink(
                path: socket, app: "rootreduced", afterWelcome: [BrokerLine("WATCH").line],
                onMessage: { message in
                    guard message.messageClass == "FIX", let time = message.double("time"),
                        let lat = message.double("lat"), let lon = message.double("lon")
                    else { return }
                    rootPoints.withLock { $0[time] = "\(lat),\(lon)" }
                }, onState: { _ in })
            defer { rootReduced.close() }
            _ = try rootReduced.startAndWait()
            let apps = (1...5).map { "app\($0)" }
            for app in apps { try decide(app, uid: Self.uid, "authorizedAlways", "reduced") }
            let (five, fiveLog) = try launchReadingStderr(
                Self.unprivileged[0],
                Array(Self.unprivileged.dropFirst())
                    + ["/usr/bin/python3", client.path, socket, apps.joined(separator: ",")],
                environment: ProcessInfo.processInfo.environment)
            defer { if five.isRunning { five.terminate() } }
            #expect(
                await fiveLog.waitFor(timeout: 60) { lines in
                    Set(Self.parsed(lines).filter { $0.message.messageClass == "FIX" }.map(\.app)).count == 5
                })
            let points = Self.parsed(fiveLog).filter { $0.message.messageClass == "FIX" }
            #expect(points.allSatisfy { $0.message.bool("reduced") == true && $0.message.double("altHAE") == nil })
            #expect(points.allSatisfy { $0.message.double("speed") == nil && $0.message.string("device") == nil })
            let distinct = Set(points.map { "\($0.message.double("lat") ?? 0),\($0.message.double("lon") ?? 0)" })
            #expect(distinct.count == 1, "\(distinct)")
            five.terminate()
            // Root's app, at the same fixes' times: the same point (its link's lines may arrive
            // a moment after the other uid's: wait for one of those times).
            let times = Set(points.compactMap { $0.message.double("time") })
            #expect(await rootPoints.wait { saw in !times.isDisjoint(with: saw.keys) })
            let rootSaw = rootPoints.withLock { $0 }
            let shared = points.compactMap { point -> (String, String)? in
                guard let time = point.message.double("time"), let root = rootSaw[time] else { return nil }
                return ("\(point.message.double("lat") ?? 0),\(point.message.double("lon") ?? 0)", root)
            }
            #expect(!shared.isEmpty, "root's reduced app got no point at the other uid's fixes' times")
            #expect(shared.allSatisfy { $0.0 == $0.1 }, "\(shared)")
            rootReduced.close()

            // uid 12345 can neither write nor read its own decision or reduced state.
            let userFolder = state.appendingPathComponent("users/\(Self.uid)")
            for target in [
                userFolder.appendingPathComponent("authorizations.json"),
                state.appendingPathComponent("reduced/secret.json"), userFolder.appendingPathComponent("new"),
            ] {
                let write = try await runProgram(
                    Self.unprivileged[0],
                    Array(Self.unprivileged.dropFirst()) + ["/bin/sh", "-c", "echo {} > \"$0\"", target.path],
                    mergeErrors: true)
                #expect(
                    write.status != 0 && write.stdout.contains("Permission denied"), "\(target.path): \(write.stdout)")
            }
            let read = try await runProgram(
                Self.unprivileged[0],
                Array(Self.unprivileged.dropFirst()) + [
                    "/bin/cat", userFolder.appendingPathComponent("authorizations.json").path,
                ],
                mergeErrors: true)
            #expect(read.status != 0 && read.stdout.contains("Permission denied"))
        }

        @Test("CLMonitor and liveUpdates through gpslocd: the same events as direct, and nothing before a grant")
        func monitorAndLiveUpdates() async throws {
            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("loop-1hz-gp.nmea"), cycle: 0.01)
            defer { server.stop() }
            let broker = try await OwnUserBroker.start(gpsdPort: server.endpoint.port)
            defer { broker.stop() }
            let authorizer = LocationAuthorizer.brokered(appID: "fenced", socketPath: broker.socket)
            defer { authorizer.disconnect() }
            // Not determined: liveUpdates says so and delivers nothing.
            for try await update in CLLocationUpdate.liveUpdates(
                source: BrokerLocationSource(socketPath: broker.socket, appID: "fenced"), authorizer: authorizer)
            {
                #expect(update.location == nil)
                break
            }
            let changed = EventCounter()
            authorizer.addObserver { changed.increment() }
            let grant = try await runProgram(
                GPSLocBinary.path, ["auth", "grant", "fenced", "--always"],
                environment: GPSLocBinary.environment().merging(["GPSLOCATION_BROKER": broker.socket]) { $1 })
            #expect(grant.status == 0, "\(grant.stderr)")
            #expect(await changed.wait(hangLimit: 10) { _ in authorizer.status == .authorizedAlways })
            let monitor = await CLMonitor(
                "depots", source: BrokerLocationSource(socketPath: broker.socket, appID: "fenced"),
                authorizer: authorizer, store: nil)
            await monitor.add(
                CLMonitor.CircularGeographicCondition(
                    center: CLLocationCoordinate2D(latitude: 51.453880, longitude: -2.591704), radius: 60),
                identifier: "east")
            var states: [String] = []
            for try await event in await monitor.events {
                states.append(event.state.description)
                if states.count == 2 { break }
            }
            // The loop's first crossing, as the direct path gives it (MonitoringTests.monitor).
            #expect(states == ["unsatisfied", "satisfied"], "\(states)")
        }

        @Test(
            "gpsd confined with gpslocd in their own network and IPC namespaces: outside, only gpslocd's socket answers",
            .enabled(
                if: FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
                    && FileManager.default.isExecutableFile(atPath: "/usr/bin/nsenter"),
                "unshare/nsenter (util-linux) not installed"))
        func confined() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("broker-ns-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let socket = folder.appendingPathComponent("socket").path
            let port = try FreePort.find()
            let log = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
            // gpsfake (and its gpsd) and gpslocd share a new network and IPC namespace; gpslocd
            // reconnects until gpsd listens. Its socket is a path, reachable from outside.
            let script =
                "ip link set lo up && { gpsfake -q -P \(port) -c 0.05 \(shellQuoted(log)) >/dev/null 2>&1 & } && "
                + "exec \"$0\" --gpsd 127.0.0.1:\(port) --socket \(shellQuoted(socket)) "
                + "--state \(shellQuoted(folder.path + "/state"))"
            let (daemon, daemonLog) = try launchReadingStderr(
                "/usr/bin/unshare", ["--net", "--ipc", "--", "/bin/sh", "-c", script, Self.daemon],
                environment: ProcessInfo.processInfo.environment)
            defer {
                if daemon.isRunning { daemon.terminate() }
                // gpsfake and its gpsd live on inside the namespace: ended here, whatever happened.
                let stop = Process()
                stop.executableURL = URL(fileURLWithPath: "/usr/bin/pkill")
                stop.arguments = ["-f", "gpsfake -q -P \(port) "]
                try? stop.run()
            }
            #expect(await daemonLog.waitFor(timeout: 30) { $0.contains { $0.text.hasPrefix("gpslocd: listening") } })
            let fixes = EventCounter()
            let app = BrokerLink(
                path: socket, app: "outside", afterWelcome: [BrokerLine("WATCH").line],
                onMessage: { if $0.messageClass == "FIX" { fixes.increment() } }, onState: { _ in })
            defer { app.close() }
            _ = try app.startAndWait()
            let grant = try app.request(
                {
                    $0.add("app", "outside")
                    $0.add("status", "authorizedAlways")
                }, className: "GRANT", timeout: 10)
            #expect(grant.bool("ok") == true)
            // Through gpslocd's socket, locations flow from the gpsd inside.
            #expect(await fixes.wait(hangLimit: 60) { $0 >= 3 })
            // gpsd's port does not exist out here.
            #expect(!FreePort.accepts(port: port))
            // gpsd's shared-memory export ("GPSD", 0x47505344) exists inside, made by its gpsd …
            let key = "1196446532"
            let inside = try await runProgram(
                "/usr/bin/nsenter", ["--target", String(daemon.processIdentifier), "--ipc", "cat", "/proc/sysvipc/shm"])
            // /proc/sysvipc/shm: key shmid perms size cpid …
            func rows(_ text: String) -> [[String]] {
                text.split(separator: "\n").map { line in line.split(separator: " ").map(String.init) }
                    .filter { $0.count > 4 }
            }
            // A segment is known by its key, its creator's pid and its creation time (columns
            // 0, 4 and 13): a pid alone is not enough, since pids are reused (pid_max is 32768
            // here) and an outside gpsd's segments outlive it — a CI run once met an outside
            // segment whose dead creator had the pid the gpsd inside was given.
            func identity(_ row: [String]) -> String? {
                row.count > 13 ? "\(row[0]) \(row[4]) \(row[13])" : nil
            }
            // Every segment inside was made there (gpsd's NTP time export at least; its "GPSD"
            // position export too once made) …
            let made = Set(rows(inside.stdout).dropFirst().compactMap(identity))
            #expect(!made.isEmpty, "gpsd made no segment inside: \(inside.stdout.prefix(300))")
            let hasExport = rows(inside.stdout).contains { $0[0] == key }
            // … and none of those segments is seen outside (checked: without `--ipc` all are).
            let outside = try String(contentsOfFile: "/proc/sysvipc/shm", encoding: .utf8)
            let leaked = rows(outside).dropFirst().compactMap(identity).filter(made.contains)
            #expect(leaked.isEmpty, "seen outside: \(leaked)")
            print(
                "gpsd's shared memory (\(made.count) segment(s)\(hasExport ? ", the GPSD export among them" : "")) stays "
                    + "inside the namespace; port \(port) is closed outside")
            daemon.terminate()
        }
    }
}

/// gpslocd as a user of its own (uid 12346), as its unit runs it (User=gpslocd, with
/// CAP_SYS_PTRACE only): its socket folder and its state are that user's, and every client is
/// another uid to it.
struct OwnUserBroker {
    static let uid = 12346
    let folder: URL
    let socket: String
    let state: URL
    let daemon: Process
    let log: LineReader
    let programs: OtherUserPrograms

    /// `capability`: false runs it without CAP_SYS_PTRACE (a hand-started gpslocd as a user).
    /// `requestsPerSecond`: gpslocd's per-uid request budget (nil: its default).
    /// `descriptors`: gpslocd's descriptor limit, soft and hard (`prlimit`; nil: this process's).
    static func start(
        gpsdPort: Int, capability: Bool = true, requestsPerSecond: Int? = nil, descriptors: Int? = nil
    ) async throws -> OwnUserBroker {
        // Where the other uids (gpslocd's, the attacker's) can enter: a private TMPDIR would
        // hide the socket and the attack script from them.
        let folder = OtherUserPrograms.reachableTemporaryFolder.appendingPathComponent("broker-uid-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        #expect(chmod(folder.path, 0o755) == 0)
        let run = folder.appendingPathComponent("run")
        let state = folder.appendingPathComponent("state")
        for owned in [run, state] {
            try FileManager.default.createDirectory(at: owned, withIntermediateDirectories: true)
            #expect(chown(owned.path, uid_t(uid), gid_t(uid)) == 0)
        }
        #expect(chmod(state.path, 0o700) == 0)
        let socket = run.appendingPathComponent("socket").path
        // Its own user runs a copy (the checkout may be in a folder that user cannot enter).
        let programs = try OtherUserPrograms(["gpslocd"])
        let limit = descriptors.map { ["--nofile=\($0):\($0)", "/usr/bin/setpriv"] } ?? []
        let (daemon, log) = try launchReadingStderr(
            descriptors == nil ? "/usr/bin/setpriv" : "/usr/bin/prlimit",
            limit + [
                "--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", "--no-new-privs",
                // The one capability the unit gives it (AmbientCapabilities=CAP_SYS_PTRACE): to
                // read other uids' /proc/PID/fd (who holds a connection) and /proc/PID/root
                // (a Flatpak's .flatpak-info).
            ]
                + (capability
                    ? [
                        "--inh-caps=-all,+sys_ptrace", "--ambient-caps=-all,+sys_ptrace",
                        "--bounding-set=-all,+sys_ptrace",
                    ]
                    : ["--inh-caps=-all", "--bounding-set=-all"])
                + [
                    programs.path("gpslocd"), "--gpsd", "127.0.0.1:\(gpsdPort)", "--socket", socket,
                    "--state", state.path,
                ] + (requestsPerSecond.map { ["--requests-per-second", String($0)] } ?? []),
            environment: ProcessInfo.processInfo.environment)
        guard await log.waitFor(timeout: 30, { $0.contains { $0.text.hasPrefix("gpslocd: listening") } }) else {
            if daemon.isRunning { daemon.terminate() }
            programs.remove()
            try? FileManager.default.removeItem(at: folder)
            throw OtherUserError(
                "gpslocd as uid \(uid) (with CAP_SYS_PTRACE) did not start listening: "
                    + log.snapshot.map(\.text).suffix(10).joined(separator: " | "))
        }
        return OwnUserBroker(
            folder: folder, socket: socket, state: state, daemon: daemon, log: log, programs: programs)
    }

    func stop() {
        if daemon.isRunning { daemon.terminate() }
        try? FileManager.default.removeItem(at: folder)
        programs.remove()
    }
}
