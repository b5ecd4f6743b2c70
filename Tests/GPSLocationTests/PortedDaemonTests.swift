import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

extension RealGPSD.LaneA {
    /// `Examples/PortedDaemon`: unchanged CoreLocation daemon code (`CLLocationManager()`,
    /// `requestAlwaysAuthorization()`, delegate methods, `error.localizedDescription`,
    /// `(error as NSError).domain`) against a real gpsd, with a private decision store: told in
    /// kCLErrorDomain what to run, then locations once `gpsloc auth grant` runs — no restart.
    @Suite(
        "a ported daemon on the default manager: explained, then granted live",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason))
    struct PortedDaemonTests {
        static let daemon = Paths.packageRoot.appendingPathComponent(".build/debug/ported-daemon").path

        @Test("before the grant: the explanation in kCLErrorDomain; after it: live locations")
        func grantReachesRunningDaemon() async throws {
            let folder = try GPSLocBinary.makeConfigHome()
            defer { try? FileManager.default.removeItem(at: folder) }
            // A recording dated about when gpsd will report it, so its fixes are fresh by the
            // wall clock (a live receiver): gpsfake starts feeding only after the simulator, its
            // own start and the device's attachment, which took 13 s on a loaded machine. Dated
            // 10 s ahead, the fixes are from 10 s in the future (accepted) to 3 s old then.
            let recording = folder.appendingPathComponent("now.nmea")
            let start = ISO8601DateFormatter().string(from: Date().addingTimeInterval(10))
            let simulator = Paths.packageRoot.appendingPathComponent(".build/debug/nmea-sim").path
            #expect(
                try await runProgram(
                    simulator,
                    [
                        "--rate", "1", "--duration", "600", "--scenario", "clean", "--start", start, "--output",
                        recording.path,
                    ]
                ).status == 0)
            // At the recording's own pace (gpsfake waits `cycle` seconds after each sentence; a
            // 1 Hz epoch here is nine sentences), so its clock keeps with the wall clock however
            // long the machine takes: faster, it runs ahead (fixes from the future, refused);
            // slower, it falls behind (stale fixes).
            let sentences = try String(contentsOf: recording, encoding: .utf8).split(separator: "\n")
                .filter { $0.hasPrefix("$") }
            let epochs = sentences.filter { $0.hasPrefix("$GPRMC") }.count
            let server = try await GPSFakeServer.started(
                log: recording, cycle: Double(epochs) / Double(sentences.count))
            defer { server.stop() }
            #expect(await server.waitUntilDeviceAttached())

            let process = Process()
            process.executableURL = URL(fileURLWithPath: Self.daemon)
            var environment = ProcessInfo.processInfo.environment
            environment["XDG_CONFIG_HOME"] = folder.path
            environment["XDG_CACHE_HOME"] = folder.appendingPathComponent("cache").path
            environment["GPSLOCATION_POLICY"] = folder.appendingPathComponent("policy.json").path
            environment["GPSLOCATION_GPSD"] = "127.0.0.1:\(server.endpoint.port)"
            environment["GPSLOCATION_USAGE_DESCRIPTION"] = nil
            process.environment = environment
            process.standardInput = FileHandle.nullDevice
            let diagnostics = folder.appendingPathComponent("stderr.txt")
            #expect(FileManager.default.createFile(atPath: diagnostics.path, contents: nil))
            process.standardError = try FileHandle(forWritingTo: diagnostics)
            let output = Pipe()
            process.standardOutput = output
            let daemon = RunningProgram(process)
            try daemon.start()
            let reader = LineReader(output.fileHandleForReading)
            defer { daemon.terminate() }

            // Not determined, no terminal: nothing is asked, the explanation names the command.
            #expect(
                await reader.waitFor(timeout: 10) { lines in
                    lines.contains {
                        $0.text.hasPrefix("error kCLErrorDomain 18:")
                            && $0.text.contains("`gpsloc auth grant ported-daemon --always`")
                    }
                })
            let grant = try await GPSLocBinary.run(["auth", "grant", "ported-daemon", "--always"], configHome: folder)
            #expect(grant.status == 0, "\(grant.stderr)")
            #expect(
                await reader.waitFor(timeout: 15) { lines in
                    lines.contains {
                        $0.text == "authorization \(CLAuthorizationStatus.authorizedAlways.rawValue)"
                    }
                        && lines.contains { $0.text.hasPrefix("location 51.") }
                },
                "locations flow after the grant, without a restart: \(reader.snapshot.map(\.text).suffix(8)); diagnostics: \((try? String(contentsOf: diagnostics, encoding: .utf8)) ?? "")"
            )
            // The daemon's own log, in order, proves the gate: no location line before the grant's.
            let seen = reader.snapshot.map(\.text)
            let granted = seen.firstIndex { $0 == "authorization \(CLAuthorizationStatus.authorizedAlways.rawValue)" }
            let firstLocation = seen.firstIndex { $0.hasPrefix("location") }
            #expect(
                granted != nil && firstLocation.map { $0 > granted! } == true,
                "nothing before the grant: \(seen.prefix(8))")
            daemon.terminate()
            #expect(await daemon.exited() == 0, "SIGTERM stops it cleanly")
        }
    }
}
