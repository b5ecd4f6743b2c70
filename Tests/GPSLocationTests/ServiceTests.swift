import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// A datagram socket standing in for systemd's notification socket: collects what a service
/// sends to `NOTIFY_SOCKET`, with arrival times.
final class NotifySocket: @unchecked Sendable {
    // @unchecked Sendable: `messages` is behind `lock`; the descriptor is read by one thread.
    let path: String
    private let descriptor: Int32
    private let lock = NSLock()
    private var received: [(time: Date, text: String)] = []
    /// One per message: waits end on arrivals, not on a timer.
    let arrivals = EventCounter()

    init(folder: URL) throws {
        path = folder.appendingPathComponent("notify.sock").path
        let made = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        descriptor = made
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(made, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard made >= 0, bound == 0 else { throw POSIXError(.EADDRINUSE) }
        Thread.detachNewThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(made, &buffer, buffer.count, 0)
                if count <= 0 { break }
                let text = String(decoding: buffer[0..<count], as: UTF8.self)
                lock.withLock { received.append((Date(), text)) }
                arrivals.increment()
            }
        }
    }

    var messages: [(time: Date, text: String)] { lock.withLock { received } }

    /// Suspends until `condition` holds of the messages (false after `hangLimit` seconds).
    func wait(
        hangLimit: Double = 60, until condition: @escaping @Sendable ([(time: Date, text: String)]) -> Bool
    ) async -> Bool {
        await arrivals.wait(hangLimit: hangLimit) { [self] _ in condition(messages) }
    }

    private var closed = false

    /// Closes the socket (once; later calls do nothing).
    func close() {
        let first = lock.withLock {
            defer { closed = true }
            return !closed
        }
        guard first else { return }
        shutdown(descriptor, Int32(SHUT_RDWR))
        Glibc.close(descriptor)
    }
}

extension RealGPSD.LaneB {
    /// `Examples/GeofenceDaemon` (geofenced) as systemd would run it, against a real gpsd.
    @Suite(
        "the daemon example under systemd's contract",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason))
    struct GeofenceDaemonTests {
        static let daemon = Paths.packageRoot.appendingPathComponent(".build/debug/geofenced").path
        static let unit = Paths.packageRoot.appendingPathComponent("Examples/GeofenceDaemon/geofenced.service")

        @Test(
            "its hardened unit passes systemd-analyze verify",
            .enabled(
                if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") || Conditions.underCI,
                "systemd-analyze not installed: sudo apt-get install systemd"))
        func unitVerifies() async throws {
            let folder = try GPSLocBinary.makeConfigHome()
            defer { try? FileManager.default.removeItem(at: folder) }
            // The unit as installed, its ExecStart pointing at the binary just built (quoted, as
            // systemd reads a path with spaces: the checkout may be on one).
            let text = try String(contentsOf: Self.unit, encoding: .utf8).replacingOccurrences(
                of: "/usr/local/bin/geofenced", with: "\"\(Self.daemon)\"")
            for setting in [
                "DynamicUser=yes", "ProtectSystem=strict", "ProtectHome=yes", "PrivateTmp=yes", "NoNewPrivileges=yes",
                "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "After=gpsd.socket", "Type=notify",
                "WatchdogSec=",
            ] {
                #expect(text.contains(setting), "the unit sets \(setting)")
            }
            let copy = folder.appendingPathComponent("geofenced.service")
            try text.write(to: copy, atomically: true, encoding: .utf8)
            let result = try await runProgram(
                "/usr/bin/systemd-analyze", ["verify", "--man=no", copy.path], mergeErrors: true)
            #expect(result.status == 0, "\(result.stdout)")
            #expect(!result.stdout.contains("geofenced.service:"), "\(result.stdout)")
        }

        @Test("READY=1 only after the first location, WATCHDOG=1 keeps coming, STOPPING=1 and exit 0 on SIGTERM")
        func notifies() async throws {
            let folder = try GPSLocBinary.makeConfigHome()
            defer { try? FileManager.default.removeItem(at: folder) }
            let recording = folder.appendingPathComponent("now.nmea")
            let simulator = Paths.packageRoot.appendingPathComponent(".build/debug/nmea-sim").path
            let start = ISO8601DateFormatter().string(from: Date().addingTimeInterval(2))
            #expect(
                try await runProgram(
                    simulator,
                    [
                        "--rate", "1", "--duration", "600", "--scenario", "loop", "--talkers", "gp", "--start", start,
                        "--output", recording.path,
                    ]
                ).status == 0)
            let config = folder.appendingPathComponent("geofenced.conf")
            try "# test circles\nyard=51.450280,-2.597470,60\neast=51.453880,-2.591704,60\n".write(
                to: config, atomically: true, encoding: .utf8)
            #expect(
                try await GPSLocBinary.run(["auth", "grant", "geofenced", "--always"], configHome: folder).status == 0)
            let server = try await GPSFakeServer.started(log: recording, cycle: 0.12)
            defer { server.stop() }
            #expect(await server.waitUntilDeviceAttached())
            let notify = try NotifySocket(folder: folder)
            defer { notify.close() }

            var environment = ProcessInfo.processInfo.environment
            environment["XDG_CONFIG_HOME"] = folder.path
            environment["XDG_CACHE_HOME"] = folder.appendingPathComponent("cache").path
            environment["XDG_STATE_HOME"] = folder.appendingPathComponent("state").path
            environment["GPSLOCATION_GPSD"] = "127.0.0.1:\(server.endpoint.port)"
            environment["NOTIFY_SOCKET"] = notify.path
            environment["WATCHDOG_USEC"] = "1000000"
            let (process, log) = try launchReadingStderr(
                Self.daemon, ["--config", config.path, "--distance-filter", "5"], environment: environment)
            defer { if process.isRunning { process.terminate() } }

            #expect(
                await notify.wait { $0.contains { $0.text.hasPrefix("READY=1") } },
                "READY=1 arrives")
            #expect(
                await notify.wait { $0.filter { $0.text == "WATCHDOG=1" }.count >= 5 },
                "WATCHDOG=1 keeps coming")
            // Every half interval (0.5 s of the 1 s systemd allows): by their arrival stamps, four
            // gaps average well under the interval even on a loaded machine.
            let stamps = notify.messages.filter { $0.text == "WATCHDOG=1" }.prefix(5).map(\.time)
            let mean = stamps.last!.timeIntervalSince(stamps.first!) / 4
            #expect(mean < 0.9, "WATCHDOG=1 every half interval: mean gap \(mean) s")
            #expect(
                await log.waitFor(timeout: 10) { lines in
                    lines.contains {
                        $0.text.hasPrefix("region yard")
                            || $0.text.hasPrefix("geofenced: every circle has its first state")
                    }
                },
                "geofence events are logged (a first state of outside in the summary line)")

            process.terminate()
            let exited = ProcessReference(process)
            let stopped = (try? await offConcurrencyThreads { exited.process.waitUntilExit() }) != nil
            #expect(stopped, "it stops on SIGTERM")
            #expect(process.terminationStatus == 0)
            #expect(notify.messages.contains { $0.text == "STOPPING=1" })
            let lines = await log.finish().map(\.text)
            #expect(lines.contains { $0.hasPrefix("geofenced: stopping") })
            // Events, not positions: the journal is not a location history (#24).
            #expect(
                !lines.contains { $0.hasPrefix("location ") }, "\(lines.filter { $0.hasPrefix("location") }.prefix(2))")
            // The circles and their states are kept for the next start.
            let kept = try MonitorStore(directory: folder.appendingPathComponent("state/gpslocation/monitors"))
                .conditions(monitor: "geofenced", app: "geofenced")
            #expect(kept.map(\.identifier) == ["east", "yard"])
        }

        @Test("a bad config line is a clear error and exit 78 (EX_CONFIG: systemd does not restart it)")
        func badConfig() async throws {
            let folder = try GPSLocBinary.makeConfigHome()
            defer { try? FileManager.default.removeItem(at: folder) }
            let config = folder.appendingPathComponent("bad.conf")
            try "depot=51.45,-2.6\n".write(to: config, atomically: true, encoding: .utf8)
            let result = try await runProgram(Self.daemon, ["--config", config.path], mergeErrors: true)
            #expect(result.status == 78)
            #expect(result.stdout.contains("line 1: expected ID=LAT,LON,RADIUS"))
            // Radii CLMonitor cannot monitor are refused at load, not reported while running (#24).
            for radius in ["inf", "1e300", "nan", "-5", "100001"] {
                try "ok=51.45,-2.6,50\ndepot=51.45,-2.6,\(radius)\n".write(
                    to: config, atomically: true, encoding: .utf8)
                let refused = try await runProgram(Self.daemon, ["--config", config.path], mergeErrors: true)
                #expect(refused.status == 78 && refused.stdout.contains("line 2:"), "\(radius): \(refused.stdout)")
            }
        }

        /// #24: every add rewrote the whole file (1,000 circles: 1,007 renames; 100,000 still
        /// loading after 600 s), and SIGTERM waited for the load. Bounds are loose (a busy
        /// machine): they separate seconds from minutes.
        @Test("100,000 circles load in seconds, and SIGTERM ends geofenced while it loads")
        func manyCircles() async throws {
            let folder = try GPSLocBinary.makeConfigHome()
            defer { try? FileManager.default.removeItem(at: folder) }
            let config = folder.appendingPathComponent("many.conf")
            var text = ""
            for index in 0..<100_000 {
                // Ids and coordinates as a real list has them: 0.3's format needed ~180 bytes a
                // circle for these, more than a monitor file may hold (it never saved them).
                let latitude = 51 + Double(index % 1000) / 1000 + Double(index) * 1.234_567e-9
                let longitude = -2 - Double(index / 1000) / 100 - Double(index) * 7.654_321e-10
                text += "site-\(index)-north-entrance=\(latitude),\(longitude),50\n"
            }
            try text.write(to: config, atomically: true, encoding: .utf8)
            // Started with a clean signal mask (ChildProcess): a Process spawned from a test
            // thread inherits blocked signals and would ignore the SIGTERM under test.
            let logFile = folder.appendingPathComponent("geofenced.log")
            func start(_ notifySocket: String) throws -> ChildProcess {
                var environment = ProcessInfo.processInfo.environment
                environment["NOTIFY_SOCKET"] = notifySocket
                environment["XDG_CONFIG_HOME"] = folder.path
                environment["XDG_CACHE_HOME"] = folder.appendingPathComponent("cache").path
                environment["XDG_STATE_HOME"] = folder.appendingPathComponent("state").path
                environment["GPSLOCATION_GPSD"] = "127.0.0.1:1"
                return try ChildProcess(
                    executable: Self.daemon, arguments: ["--config", config.path], environment: environment,
                    stderrPath: logFile.path)
            }
            let logged = { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }
            let began = ContinuousClock.now
            let notify = try NotifySocket(folder: folder)
            defer { notify.close() }
            let loading = try start(notify.path)
            defer { loading.terminate() }
            #expect(
                await notify.wait(hangLimit: 120) { $0.contains { $0.text.hasPrefix("STATUS=monitoring 100000") } },
                "\(logged().suffix(300))")
            #expect(logged().contains("monitoring 100000 circle(s)"))
            print(
                "geofenced: 100,000 circles read, checked, saved and monitored \(ContinuousClock.now - began) after its start"
            )
            kill(loading.pid, SIGTERM)
            #expect(await loading.waitForExit(timeout: .seconds(10)))
            #expect(loading.exited.map { $0 & 0x7f == 0 && ($0 >> 8) & 0xff == 0 } == true, "exit 0")
            let kept = try MonitorStore(directory: folder.appendingPathComponent("state/gpslocation/monitors"))
                .conditions(monitor: "geofenced", app: "geofenced")
            #expect(kept.count == 100_000)
            // SIGTERM while it restores the 100,000 kept circles, and while it loads them again:
            // sent when geofenced tells systemd it has begun each (STATUS=), it ends at once
            // (0.15 s for a clean stop, README).
            notify.close()
            try? FileManager.default.removeItem(atPath: notify.path)
            var stops: [Duration] = []
            for phase in ["STATUS=restoring", "STATUS=loading"] {
                let told = try NotifySocket(folder: folder)
                defer {
                    told.close()
                    try? FileManager.default.removeItem(atPath: told.path)
                }
                let second = try start(told.path)
                defer { second.terminate() }
                #expect(await told.wait { $0.contains { $0.text.hasPrefix(phase) } }, "\(phase) is said")
                let signalled = ContinuousClock.now
                kill(second.pid, SIGTERM)
                #expect(await second.waitForExit(timeout: .seconds(10)))
                let elapsed = ContinuousClock.now - signalled
                stops.append(elapsed)
                #expect(elapsed < .seconds(5), "ended \(elapsed) after SIGTERM (at \(phase))")
                #expect(!told.messages.contains { $0.text.hasPrefix("STATUS=monitoring") }, "signalled while loading")
            }
            // What it said on the way out is true: a state file it claims is there.
            let stateFile = try MonitorStore(directory: folder.appendingPathComponent("state/gpslocation/monitors"))
                .file(monitor: "geofenced", app: "geofenced")
            if logged().contains("the state file of the last complete save is kept") {
                #expect(FileManager.default.fileExists(atPath: stateFile.path))
            }
            // A summary, never a line per circle.
            #expect(logged().split(separator: "\n").count < 100, "\(logged().prefix(300))")
            print("geofenced: SIGTERM while restoring and while loading ended it after \(stops)")
        }
    }

    /// The README's fleet recipe, `gpsloc watch --json | mosquitto_pub -l -t fleet/HOST/location`,
    /// against a real Mosquitto broker and a real gpsd.
    @Suite(
        "sending locations to a broker (the fleet recipe)",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason),
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/sbin/mosquitto") || Conditions.underCI,
            "mosquitto not installed: sudo apt-get install mosquitto mosquitto-clients"))
    struct FleetRecipeTests {
        @Test("a subscriber receives the NDJSON lines of gpsloc watch as messages, one location per message")
        func recipe() async throws {
            let folder = try GPSLocBinary.makeConfigHome()
            defer { try? FileManager.default.removeItem(at: folder) }
            let port = try freePort()
            let config = folder.appendingPathComponent("mosquitto.conf")
            try "listener \(port) 127.0.0.1\nallow_anonymous true\npersistence false\n".write(
                to: config, atomically: true, encoding: .utf8)
            let broker = Process()
            broker.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
            broker.arguments = ["-c", config.path]
            broker.standardOutput = FileHandle.nullDevice
            let brokerLog = folder.appendingPathComponent("broker.log")
            _ = FileManager.default.createFile(atPath: brokerLog.path, contents: nil)
            broker.standardError = try FileHandle(forWritingTo: brokerLog)
            try broker.run()
            // SIGKILL: children spawned from the test runner's threads inherit a signal mask
            // that blocks SIGTERM, and mosquitto would wait for it forever.
            defer {
                kill(broker.processIdentifier, SIGKILL)
                broker.waitUntilExit()
            }
            #expect(await fileText(brokerLog) { $0.contains(" running") }, "the broker listens")

            let subscriber = Process()
            // -d: it says when the broker has acknowledged the subscription (SUBACK), the event
            // the publishing waits for; line-buffered (stdbuf), so it says so at once into a pipe.
            subscriber.executableURL = URL(fileURLWithPath: "/usr/bin/stdbuf")
            subscriber.arguments = [
                "-oL", "/usr/bin/mosquitto_sub", "-h", "127.0.0.1", "-p", "\(port)", "-t", "fleet/+/location", "-v",
                "-C", "20", "-d",
            ]
            let received = Pipe()
            subscriber.standardOutput = received
            try subscriber.run()
            let messages = LineReader(received.fileHandleForReading)
            defer { if subscriber.isRunning { kill(subscriber.processIdentifier, SIGKILL) } }
            #expect(await messages.waitFor(timeout: 30) { $0.contains { $0.text.contains("received SUBACK") } })

            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("clean-1hz-multi.nmea"), cycle: 0.02)
            defer { server.stop() }
            #expect(await server.waitUntilDeviceAttached())
            #expect(try await GPSLocBinary.run(["auth", "grant", "fleet", "--always"], configHome: folder).status == 0)
            let pipeline = Process()
            pipeline.executableURL = URL(fileURLWithPath: "/bin/sh")
            pipeline.arguments = [
                "-c",
                "'\(GPSLocBinary.path)' watch --json --app fleet --port \(server.endpoint.port) --max-age 1e9 "
                    + "| mosquitto_pub -h 127.0.0.1 -p \(port) -l -t fleet/testhost/location",
            ]
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_CONFIG_HOME"] = folder.path
            environment["XDG_CACHE_HOME"] = folder.appendingPathComponent("cache").path
            pipeline.environment = environment
            pipeline.standardError = FileHandle.nullDevice
            try pipeline.run()
            defer {
                _ = try? ChildProcessForTests.runBlocking(
                    "/usr/bin/pkill", ["-9", "-f", "watch --json --app fleet --port \(server.endpoint.port)"])
                _ = try? ChildProcessForTests.runBlocking(
                    "/usr/bin/pkill", ["-9", "-f", "mosquitto_pub -h 127.0.0.1 -p \(port)"])
                kill(pipeline.processIdentifier, SIGKILL)
                pipeline.waitUntilExit()
            }
            #expect(
                await messages.waitFor(timeout: 20) { lines in
                    lines.filter { $0.text.contains(#""type":"location""#) }.count >= 3
                }, "locations reach the subscriber")
            // Every line but mosquitto_sub's own debug lines is a message.
            let published = messages.snapshot.filter {
                !$0.text.hasPrefix("Client ") && !$0.text.hasPrefix("Subscribed ")
            }
            for line in published {
                #expect(line.text.hasPrefix("fleet/testhost/location {"), "\(line.text)")
                let json = String(line.text.dropFirst("fleet/testhost/location ".count))
                let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
                #expect(object?["type"] != nil, "each message is one NDJSON object: \(json)")
                if object?["type"] as? String == "location" {
                    #expect(abs((object?["latitude"] as? Double ?? 0) - 51.45) < 0.05)
                }
            }
        }

        /// docs/fleet.md's recipe: gpsloc → a broker on the box (QoS 1, persistent) bridged to the
        /// central broker (QoS 1, `cleansession false`) → a persistent QoS 1 subscriber. The central
        /// broker is stopped and started again mid-stream; the subscriber must get every location.
        @Test("the bridged recipe: a central broker restart mid-stream loses no location")
        func bridgedRestart() async throws {
            let folder = try GPSLocBinary.makeConfigHome()
            defer { try? FileManager.default.removeItem(at: folder) }
            let (centralPort, boxPort) = (try freePort(), try freePort())
            // `user root`: run as root (CI), Mosquitto would otherwise become the `mosquitto` user,
            // which cannot write into the test's private folder — and a central broker that
            // cannot save its sessions loses what arrives before its subscriber is back.
            // (Debian's service keeps its database in /var/lib/mosquitto, the user's own.)
            func configuration(_ name: String, port: Int, _ more: [String] = []) throws -> URL {
                let database = folder.appendingPathComponent(name)
                try FileManager.default.createDirectory(at: database, withIntermediateDirectories: true)
                let lines =
                    [
                        "user root", "listener \(port) 127.0.0.1", "allow_anonymous true", "persistence true",
                        "persistence_location \(database.path)/",
                    ] + more
                let file = folder.appendingPathComponent(name + ".conf")
                try (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
                return file
            }
            let centralConfig = try configuration("central", port: centralPort)
            let boxConfig = try configuration(
                "box", port: boxPort,
                [
                    "connection central", "address 127.0.0.1:\(centralPort)", "topic fleet/# out 1",
                    "cleansession false", "clientid fleet-box-test", "restart_timeout 1 2",
                ])
            let environment = ProcessInfo.processInfo.environment
            func broker(_ config: URL, log: String) throws -> ChildProcess {
                try ChildProcess(
                    executable: "/usr/sbin/mosquitto", arguments: ["-c", config.path], environment: environment,
                    stderrPath: folder.appendingPathComponent(log).path)
            }
            var central = try broker(centralConfig, log: "central.log")
            let box = try broker(boxConfig, log: "box.log")
            defer {
                central.terminate()
                box.terminate()
            }
            // Each broker says it is running once its listener is open.
            for log in ["central.log", "box.log"] {
                #expect(await fileText(folder.appendingPathComponent(log)) { $0.contains(" running") }, "\(log)")
            }

            // The central side's consumer: a persistent session (client id, no clean start), QoS 1.
            let receivedFile = folder.appendingPathComponent("received.txt")
            let subscriber = try ChildProcess(
                executable: "/usr/bin/mosquitto_sub",
                arguments: [
                    "-h", "127.0.0.1", "-p", "\(centralPort)", "-t", "fleet/+/location", "-q", "1", "-c", "-i",
                    "fleet-ingest-test",
                ], environment: environment, stdoutPath: receivedFile.path)
            defer { subscriber.terminate() }
            let received = { (try? String(contentsOf: receivedFile, encoding: .utf8)) ?? "" }
            // The bridge is up and the subscriber subscribed once a probe sent on the box arrives:
            // retained, it is handed to the bridge when it subscribes on the box, and to the
            // subscriber when it subscribes on the central broker, whichever comes last.
            _ = try await runProgram(
                "/usr/bin/mosquitto_pub",
                ["-h", "127.0.0.1", "-p", "\(boxPort)", "-t", "fleet/probe/location", "-q", "1", "-r", "-m", "probe"])
            #expect(
                await fileText(receivedFile) { $0.contains("probe") },
                "a message sent on the box reaches the central subscriber")

            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea"), cycle: 0.01)
            defer { server.stop() }
            #expect(await server.waitUntilDeviceAttached())
            #expect(try await GPSLocBinary.run(["auth", "grant", "fleet", "--always"], configHome: folder).status == 0)
            let publishedFile = folder.appendingPathComponent("published.ndjson")
            var pipelineEnvironment = environment
            pipelineEnvironment["XDG_CONFIG_HOME"] = folder.path
            pipelineEnvironment["XDG_CACHE_HOME"] = folder.appendingPathComponent("cache").path
            let pipeline = try ChildProcess(
                executable: "/bin/sh",
                arguments: [
                    "-c",
                    "'\(GPSLocBinary.path)' watch --json --app fleet --port \(server.endpoint.port) --max-age 1e9 "
                        + "| tee '\(publishedFile.path)' "
                        + "| mosquitto_pub -h 127.0.0.1 -p \(boxPort) -q 1 -l -t fleet/testhost/location",
                ], environment: pipelineEnvironment)
            defer {
                _ = try? ChildProcessForTests.runBlocking(
                    "/usr/bin/pkill", ["-9", "-f", "watch --json --app fleet --port \(server.endpoint.port)"])
                _ = try? ChildProcessForTests.runBlocking(
                    "/usr/bin/pkill", ["-9", "-f", "mosquitto_pub -h 127.0.0.1 -p \(boxPort)"])
                pipeline.terminate()
            }
            let published = { (try? String(contentsOf: publishedFile, encoding: .utf8)) ?? "" }
            // The subscriber's copy of a line and gpsloc's own are the same JSON text.
            @Sendable func locations(_ text: String) -> [String] {
                text.split(separator: "\n").map(String.init).filter { $0.contains(#""type":"location""#) }
            }

            // Mid-stream: the central broker goes away while locations keep being published on
            // the box, then comes back.
            #expect(await fileText(receivedFile) { locations($0).count >= 20 }, "locations flow")
            kill(central.pid, SIGTERM)
            #expect(await central.waitForExit(timeout: .seconds(10)), "the central broker stopped")
            let atStop = locations(published()).count
            #expect(
                await fileText(publishedFile) { locations($0).count >= atStop + 20 },
                "locations are published while the central broker is down")
            central = try broker(centralConfig, log: "central-again.log")
            #expect(
                await fileText(folder.appendingPathComponent("central-again.log")) { $0.contains(" running") },
                "the central broker is back")

            // The recording's end: gpsd goes, and gpsloc says it reconnects — after its last location.
            #expect(await fileText(publishedFile, timeout: 120) { $0.contains("reconnecting") }, "the drive ended")
            let sent = locations(published())
            #expect(sent.count > 100)
            #expect(
                await fileText(receivedFile) { Set(locations($0)).isSuperset(of: sent) },
                "every published location reaches the central subscriber")
            let got = locations(received())
            let missing = Set(sent).subtracting(got)
            #expect(missing.isEmpty, "\(missing.count) of \(sent.count) locations lost")
            print(
                "fleet recipe: \(sent.count) locations published, \(Set(got).count) received "
                    + "(\(got.count - Set(got).count) duplicates, QoS 1 allows them) across a central broker restart")
        }

        private func freePort() throws -> Int {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(descriptor) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = 0
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
            }
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            return Int(UInt16(bigEndian: address.sin_port))
        }

    }
}
