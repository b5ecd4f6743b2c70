import Foundation
import GPSDProcesses
import TestSupport
import Testing

extension RealGPSD.LaneA {
    /// #33: the example unit is hardened to `systemd-analyze security` ≤ 2.0, and nothing the
    /// service needs is taken away. No systemd runs here (nor in CI), so the sandbox is checked
    /// piece by piece: geofenced runs as an unprivileged user with no capabilities and no new
    /// privileges, umask 077, against a real gpsd on localhost, traced by strace — it starts,
    /// reads gpsd, writes its state — and every system call it made is one the unit's
    /// `SystemCallFilter=` allows (expanded by `systemd-analyze syscall-filter`).
    @Suite(
        "the example unit: hardened, and the service still works inside it",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason),
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/systemd-analyze") || Conditions.underCI,
            "systemd-analyze not installed: sudo apt-get install systemd"))
    struct UnitSandboxTests {
        static let unit = Paths.packageRoot.appendingPathComponent("Examples/GeofenceDaemon/geofenced.service")

        @Test("systemd-analyze security rates the unit 2.0 or better")
        func exposure() async throws {
            let result = try await runProgram(
                "/usr/bin/systemd-analyze", ["security", "--offline=true", "--no-pager", Self.unit.path],
                mergeErrors: true)
            let overall = result.stdout.split(separator: "\n").first { $0.contains("Overall exposure level") }
            let score = overall.flatMap { line in
                line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }
            }
            print("systemd-analyze security: \(overall.map(String.init) ?? result.stdout.suffix(200).description)")
            #expect(try #require(score) <= 2.0)
        }

        /// `@system-service` minus `@privileged`, as the unit's two `SystemCallFilter=` lines say.
        static func allowedSyscalls() async throws -> Set<String> {
            let unit = try String(contentsOf: unit, encoding: .utf8)
            #expect(unit.contains("SystemCallFilter=@system-service\nSystemCallFilter=~@privileged\n"))
            let listing = try await runProgram("/usr/bin/systemd-analyze", ["syscall-filter", "--no-pager"]).stdout
            var groups: [String: [String]] = [:]
            var current: String?
            for line in listing.split(separator: "\n") {
                let text = line.trimmingCharacters(in: .whitespaces)
                if line.hasPrefix("@") {
                    current = text
                    groups[text] = []
                } else if let group = current, !text.isEmpty, !text.hasPrefix("#") {
                    groups[group, default: []].append(text)
                }
            }
            func expand(_ group: String) -> Set<String> {
                (groups[group] ?? []).reduce(into: Set<String>()) { names, member in
                    if member.hasPrefix("@") { names.formUnion(expand(member)) } else { names.insert(member) }
                }
            }
            return expand("@system-service").subtracting(expand("@privileged"))
        }

        @Test(
            "as an unprivileged user with no capabilities: starts, reads gpsd, keeps its state; every syscall allowed",
            .enabled(
                if: OtherUserPrograms.canRunAsOtherUser, Comment(rawValue: OtherUserPrograms.cannotRunAsOtherUserReason)
            ),
            .enabled(
                if: FileManager.default.isExecutableFile(atPath: "/usr/bin/strace") || Conditions.underCI,
                "strace not installed: sudo apt-get install strace (scripts/setup.sh does)"))
        func sandboxedRun() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sandbox-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            // nobody runs copies (the checkout may be in a folder nobody can enter).
            let programs = try OtherUserPrograms(["gpsloc", "geofenced"])
            defer { programs.remove() }
            let daemon = programs.path("geofenced")
            let home = folder.appendingPathComponent("home")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            let config = folder.appendingPathComponent("geofenced.conf")
            try "yard=51.450280,-2.597470,60\neast=51.453880,-2.591704,60\n".write(
                to: config, atomically: true, encoding: .utf8)
            // nobody (65534) owns the home; the unit's DynamicUser is such a user.
            #expect(chown(folder.path, 65534, 65534) == 0 && chown(home.path, 65534, 65534) == 0)
            #expect(chmod(home.path, 0o700) == 0 && chown(config.path, 65534, 65534) == 0)
            let unprivileged = [
                "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs",
                "--inh-caps=-all", "--bounding-set=-all",
            ]
            var environment = ProcessInfo.processInfo.environment
            environment["HOME"] = home.path
            environment["XDG_CONFIG_HOME"] = home.appendingPathComponent("config").path
            environment["XDG_STATE_HOME"] = home.appendingPathComponent("state").path
            environment["XDG_CACHE_HOME"] = home.appendingPathComponent("cache").path
            let granted = try await runProgram(
                unprivileged[0],
                Array(unprivileged.dropFirst()) + [programs.path("gpsloc"), "auth", "grant", "geofenced", "--always"],
                environment: environment)
            try #require(granted.status == 0, "\(granted.stderr)")

            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea"), cycle: 0.05)
            defer { server.stop() }
            environment["GPSLOCATION_GPSD"] = "127.0.0.1:\(server.endpoint.port)"
            let trace = folder.appendingPathComponent("trace")
            let (process, log) = try launchReadingStderr(
                "/usr/bin/strace",
                ["-f", "-qq", "-o", trace.path] + unprivileged
                    + ["/bin/sh", "-c", #"umask 077; exec "$0" --config "$1""#, daemon, config.path],
                environment: environment)
            defer { if process.isRunning { process.terminate() } }
            // It read gpsd: the circles got their first states from a location.
            #expect(
                await log.waitFor(timeout: 60) { lines in
                    lines.contains { $0.text.hasPrefix("geofenced: every circle has its first state") }
                })
            // SIGTERM to geofenced itself (the traced process after its exec).
            let traced = try String(contentsOf: trace, encoding: .utf8)
            let pid = traced.split(separator: "\n").first { $0.contains("execve(\"\(daemon)\"") }
                .flatMap { $0.split(separator: " ").first.flatMap { Int32($0) } }
            kill(try #require(pid), SIGTERM)
            let reference = ProcessReference(process)
            _ = try await offConcurrencyThreads { reference.process.waitUntilExit() }
            let lines = await log.finish().map(\.text)
            #expect(process.terminationStatus == 0, "\(lines.suffix(5))")
            // Its state, written by it, private.
            let state = home.appendingPathComponent("state/gpslocation/monitors/geofenced/monitor-geofenced.json")
            let attributes = try FileManager.default.attributesOfItem(atPath: state.path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
            #expect((attributes[.ownerAccountID] as? Int) == 65534)

            // Every system call geofenced made (from its exec on, in every thread) is allowed.
            let allowed = try await Self.allowedSyscalls()
            let all = try String(contentsOf: trace, encoding: .utf8).split(separator: "\n")
            let start = try #require(all.firstIndex { $0.contains("execve(\"\(daemon)\"") })
            var used = Set<String>()
            for line in all[start...] {
                // "PID name(args…) = result": the name, not "+++ exited" or "--- SIGTERM" lines.
                // (strace pads the pid to a column width, so the name follows one or more spaces.)
                let call = line.drop { $0.isNumber }.drop { $0 == " " }
                guard let name = call.split(separator: "(").first, call.contains("("),
                    name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" })
                else { continue }
                used.insert(String(name))
            }
            print("geofenced under the unit's limits made \(used.count) distinct system calls: \(used.sorted())")
            #expect(used.count > 20)
            #expect(
                used.subtracting(allowed).isEmpty, "refused by SystemCallFilter: \(used.subtracting(allowed).sorted())")
        }
    }
}
