import Foundation
import GNSSCore
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocCLI
@testable import GPSLocation
@testable import LocationCore

@Suite("gpsloc argument parsing", .timeLimit(.minutes(5)))
struct ArgumentTests {
    @Test func valuesFlagsAndPositionals() throws {
        let arguments = try Arguments(
            ["file.nmea", "--via", "gpsd", "--distance-filter=50", "--json", "--", "--odd"],
            valued: ["via", "distance-filter"], flags: ["json"])
        #expect(arguments["via"] == "gpsd")
        #expect(arguments["distance-filter"] == "50")
        #expect(arguments.has("json"))
        #expect(arguments.positionals == ["file.nmea", "--odd"])
    }

    @Test func mistakesAreUsageErrors() {
        #expect(throws: UsageError("unknown option --bogus")) { try Arguments(["--bogus"], valued: [], flags: []) }
        #expect(throws: UsageError("--via needs a value")) { try Arguments(["--via"], valued: ["via"], flags: []) }
        #expect(throws: UsageError("--json takes no value")) {
            try Arguments(["--json=1"], valued: [], flags: ["json"])
        }
        #expect(throws: UsageError("unknown option -x")) { try Arguments(["-x"], valued: [], flags: []) }
    }

    @Test("gpsloc sky's columns line up under their headers, whatever the constellation's name")
    func skyColumns() {
        let satellites = [
            Satellite(
                prn: 7, constellation: .gps, satelliteID: 7, signalToNoise: 41, elevation: 76, azimuth: 194, used: true),
            Satellite(
                prn: 301, constellation: .galileo, satelliteID: 1, signalToNoise: nil, elevation: 5, azimuth: 12,
                used: false),
        ]
        let lines = SkyCommand.table(SkyView(time: nil, satellites: satellites, dilution: DilutionOfPrecision()))
            .split(separator: "\n").map(String.init)
        let header = lines[0]
        for column in ["Elev", "Azim", "SNR", "Used"] {
            let end = header.range(of: column)!.upperBound.utf16Offset(in: header)
            for row in lines[1...2] {
                // Right-aligned numbers end where their header ends; the last column holds yes/no.
                let cell = row.utf16.count >= end ? String(Array(row)[end - 1]) : ""
                #expect(cell != " " && !cell.isEmpty, "\(column) in \(row)")
            }
        }
    }

    @Test func pipelineOptionsValidate() throws {
        let options = try PipelineOptions(
            Arguments(
                ["--distance-filter", "none", "--desired-accuracy", "kilometer"], valued: PipelineOptions.valued,
                flags: []))
        #expect(options.configuration.distanceFilter == kCLDistanceFilterNone)
        #expect(options.configuration.desiredAccuracy == kCLLocationAccuracyKilometer)
        #expect(throws: UsageError.self) {
            try PipelineOptions(Arguments(["--distance-filter", "-3"], valued: PipelineOptions.valued, flags: []))
        }
        #expect(throws: UsageError.self) {
            try PipelineOptions(Arguments(["--desired-accuracy", "great"], valued: PipelineOptions.valued, flags: []))
        }
    }
}

extension RealGPSD.LaneB {
    @Suite(
        "gpsloc as a user runs it",
        .enabled(if: FileManager.default.isExecutableFile(atPath: GPSLocBinary.path), "build gpsloc first"))
    struct GPSLocCommandTests {
        @Test("with no gpsd listening, watch --json fails fast with one clear error line")
        func watchWithoutGPSD() async throws {
            let port = try FreePortForTests.unused()
            let config = try GPSLocBinary.makeConfigHome()
            #expect(
                try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config).status == 0)
            let result = try await GPSLocBinary.run(["watch", "--json", "--port", String(port)], configHome: config)
            #expect(result.status == 1)
            #expect(result.seconds < 5)
            let errors = GPSLocBinary.jsonLines(result.stdout).filter { $0["type"] as? String == "error" }
            #expect(errors.count == 1)
            #expect(errors.first?["code"] as? String == "locationUnknown")
            #expect((errors.first?["message"] as? String)?.contains("127.0.0.1:\(port)") == true)
            #expect(result.stderr.contains("gpsd is not reachable at 127.0.0.1:\(port)"))
            #expect(result.stderr.contains("systemctl"))
        }

        @Test("bad usage exits 2 with the help")
        func badUsage() async throws {
            let result = try await GPSLocBinary.run(["replay"])
            #expect(result.status == 2)
            #expect(result.stderr.contains("usage: gpsloc"))
            #expect(try await GPSLocBinary.run(["watch", "--port", "0"]).status == 2)
            #expect(try await GPSLocBinary.run(["frobnicate"]).status == 2)
            #expect(try await GPSLocBinary.run(["watch", "--help"]).status == 0)
        }

        /// `scripts/run.sh` watches the live receiver when gpsd reports one (this probe) and
        /// replays the bundled recording otherwise. Found by the newcomer walk-through: piped into
        /// `grep -q` under `pipefail`, a reporting gpsd looked silent and run.sh always replayed.
        @Test(
            "run.sh's probe: a reporting gpsd is found, a missing one is not",
            .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason)
        )
        func runProbe() async throws {
            let probe = Paths.packageRoot.appendingPathComponent("scripts/gpsd-reporting.sh").path
            func status(_ gpsd: String) async throws -> Int32 {
                try await runProgram(probe, [gpsd]).status
            }
            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea"))
            defer { server.stop() }
            #expect(try await status("127.0.0.1:\(server.endpoint.port)") == 0)
            #expect(try await status("127.0.0.1:1") == 1)
        }

        @Test(
            "replay --via gpsd prints schema-valid NDJSON for a fixture",
            .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason)
        )
        func replayViaGPSD() async throws {
            let fixture = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
            let result = try await GPSLocBinary.run(["replay", fixture, "--via", "gpsd", "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = GPSLocBinary.jsonLines(result.stdout)
            #expect(lines.count == result.stdout.split(separator: "\n").count, "every line is JSON")
            let locations = lines.filter { $0["type"] as? String == "location" }
            #expect(locations.count > 200)
            for line in lines { NDJSONSchema.check(line) }
            #expect(lines.first?["type"] as? String == "diagnostic")
            #expect((lines.first?["message"] as? String)?.contains("drive-1hz-gp.nmea") == true)
        }
    }
}

/// Runs `gpsloc watch --json` against gpsfake replaying a fixture, until gpsd ends with the
/// recording; returns the NDJSON lines.
func runWatch(against fixture: String, _ arguments: [String], configHome: URL) async throws -> [[String: Any]] {
    let server = try await GPSFakeServer.started(log: Paths.fixtures.appendingPathComponent(fixture))
    defer { server.stop() }
    let (process, reader) = try GPSLocBinary.launch(
        ["watch", "--json", "--port", String(server.endpoint.port)] + arguments, configHome: configHome)
    // gpsd ends with the recording; watch then keeps trying to reconnect, so stop it as a user would.
    await server.waitForExit(timeout: .seconds(120))
    _ = await reader.waitFor(timeout: 3) { $0.contains { $0.text.contains("\"reconnecting\"") } }
    process.terminate()
    await process.exited()
    return GPSLocBinary.jsonLines(await reader.finish().map(\.text).joined(separator: "\n"))
}

enum FreePortForTests {
    /// A port nothing listens on (bound once by the kernel, then released).
    static func unused() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Our schema for gpsloc's NDJSON lines (ARCHITECTURE.md), checked field by field.
enum NDJSONSchema {
    static let locationNumbers = [
        "altitude", "ellipsoidalAltitude", "horizontalAccuracy", "verticalAccuracy", "speed", "speedAccuracy", "course",
        "courseAccuracy",
    ]
    static let accuracyClasses: Set<String> = [
        "bestForNavigation", "best", "nearestTenMeters", "hundredMeters", "kilometer", "threeKilometers", "coarse",
    ]

    static func check(_ line: [String: Any], sourceLocation: SourceLocation = #_sourceLocation) {
        guard let type = line["type"] as? String else {
            Issue.record("a line without type: \(line)", sourceLocation: sourceLocation)
            return
        }
        switch type {
        case "location":
            let expected = Set(
                ["type", "timestamp", "latitude", "longitude", "fixMode", "accuracyClass", "reduced", "simulated"]
                    + locationNumbers)
            #expect(Set(line.keys) == expected, "location keys: \(line.keys.sorted())", sourceLocation: sourceLocation)
            let timestamp = line["timestamp"] as? String ?? ""
            #expect(
                timestamp.wholeMatch(of: /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/) != nil, "timestamp \(timestamp)",
                sourceLocation: sourceLocation)
            let latitude = line["latitude"] as? Double ?? .nan
            let longitude = line["longitude"] as? Double ?? .nan
            #expect(abs(latitude) <= 90 && abs(longitude) <= 180, sourceLocation: sourceLocation)
            for key in locationNumbers {
                let value = line[key]
                let ok =
                    value is NSNull
                    || ((value as? Double).map { $0.isFinite && $0 >= (key.contains("ltitude") ? -1e6 : 0) } ?? false)
                #expect(ok, "\(key) = \(String(describing: value))", sourceLocation: sourceLocation)
            }
            #expect(["2d", "3d"].contains(line["fixMode"] as? String ?? ""), sourceLocation: sourceLocation)
            #expect(accuracyClasses.contains(line["accuracyClass"] as? String ?? ""), sourceLocation: sourceLocation)
            #expect(line["reduced"] is Bool, sourceLocation: sourceLocation)
            #expect(line["simulated"] is Bool, sourceLocation: sourceLocation)
            if line["fixMode"] as? String == "2d" {
                #expect(
                    line["altitude"] is NSNull && line["verticalAccuracy"] is NSNull, sourceLocation: sourceLocation)
            }
        case "authorization":
            #expect(
                ["notDetermined", "restricted", "denied", "authorizedWhenInUse", "authorizedAlways"].contains(
                    line["status"] as? String ?? ""),
                sourceLocation: sourceLocation)
            #expect(["full", "reduced"].contains(line["accuracy"] as? String ?? ""), sourceLocation: sourceLocation)
        case "error", "diagnostic":
            #expect(
                line["code"] is String && !((line["message"] as? String) ?? "").isEmpty, sourceLocation: sourceLocation)
        case "device":
            #expect(line["path"] is String && line["activated"] is Bool, sourceLocation: sourceLocation)
        default:
            Issue.record("unknown line type \(type)", sourceLocation: sourceLocation)
        }
    }
}

extension RealGPSD.LaneB {
    @Suite(
        "authorization store and gate in gpsloc",
        .enabled(if: FileManager.default.isExecutableFile(atPath: GPSLocBinary.path), "build gpsloc first"))
    struct AuthorizationCLITests {
        @Test("watch without a decision delivers nothing and names the command that grants it")
        func watchNotDetermined() async throws {
            let result = try await GPSLocBinary.run(["watch", "--json", "--app", "fresh-app"])
            #expect(result.status == 1)
            let lines = GPSLocBinary.jsonLines(result.stdout)
            #expect(lines.first?["status"] as? String == "notDetermined")
            #expect(!lines.contains { $0["type"] as? String == "location" })
            // The refusal ends the run; gpsd's own state (here: not running) may be reported too.
            #expect(
                lines.contains {
                    $0["code"] as? String == "promptDeclined"
                        // Not a terminal: not in use, so only Always would deliver anything.
                        && ($0["message"] as? String)?.contains("gpsloc auth grant fresh-app --always") == true
                }, "\(result.stdout)")
        }

        @Test("revoked: one denied error line, no location")
        func watchDenied() async throws {
            let config = try GPSLocBinary.makeConfigHome()
            #expect(try await GPSLocBinary.run(["auth", "revoke", "app1"], configHome: config).status == 0)
            let result = try await GPSLocBinary.run(["watch", "--json", "--app", "app1"], configHome: config)
            #expect(result.status == 1)
            let errors = GPSLocBinary.jsonLines(result.stdout).filter { $0["type"] as? String == "error" }
            #expect(errors.map { $0["code"] as? String } == ["denied"])
        }

        @Test("8 processes granting at once lose no decision")
        func concurrentGrants() async throws {
            let config = try GPSLocBinary.makeConfigHome()
            let statuses = try await withThrowingTaskGroup(of: Int32.self) { group in
                for index in 0..<8 {
                    group.addTask {
                        try await GPSLocBinary.run(
                            ["auth", "grant", "app\(index)", index.isMultiple(of: 2) ? "--always" : "--when-in-use"],
                            configHome: config
                        ).status
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == [Int32](repeating: 0, count: 8))
            let store = DecisionStore(directory: config.appendingPathComponent("gpslocation"))
            let entries = try store.entries()
            #expect(entries.count == 8)
            #expect(entries["app0"]?.status == "authorizedAlways" && entries["app1"]?.status == "authorizedWhenInUse")
            let attributes = try FileManager.default.attributesOfItem(atPath: store.fileURL.path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
        }

        @Test("a corrupt store is reported, kept aside, and grants nothing")
        func corruptStore() async throws {
            let config = try GPSLocBinary.makeConfigHome()
            let folder = config.appendingPathComponent("gpslocation")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data("{\"gpsloc\": {\"status\": \"authorizedAlways\"".utf8).write(
                to: folder.appendingPathComponent("authorizations.json"))
            let result = try await GPSLocBinary.run(["watch", "--json"], configHome: config)
            #expect(result.status == 1)
            let lines = GPSLocBinary.jsonLines(result.stdout)
            #expect(lines.contains { $0["code"] as? String == "authorizationStore" })
            #expect(lines.contains { $0["status"] as? String == "notDetermined" })
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(names.contains { $0.hasPrefix("authorizations.json.corrupt-") })
        }

        @Test(
            "watch against a real gpsd (gpsfake) delivers schema-valid locations once granted",
            .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason)
        )
        func watchAgainstGPSFake() async throws {
            let config = try GPSLocBinary.makeConfigHome()
            #expect(
                try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config).status == 0)
            // The recording is from June 2026: freshness follows its clock, no option needed (#31).
            let lines = try await runWatch(against: "drive-1hz-gp.nmea", ["--timeout", "2"], configHome: config)
            let locations = lines.filter { $0["type"] as? String == "location" }
            #expect(locations.count > 200)
            for line in lines { NDJSONSchema.check(line) }
            #expect(lines.contains { $0["type"] as? String == "device" && $0["activated"] as? Bool == false })

            // A gpsd that gpsfake started replays a recording: simulated, and never the app's last
            // location (`gpsloc last` says why there is none, with no folder to complain of).
            #expect(locations.allSatisfy { $0["simulated"] as? Bool == true })
            let none = try await GPSLocBinary.run(["last", "--json"], configHome: config)
            #expect(
                none.status == 1 && none.stdout.contains("has received no location from a receiver yet"),
                "\(none.stdout)")

            // A receiver behind gpsd (gpsd started as systemd starts it, on a pseudo-terminal): what
            // watch delivered is the app's last location now.
            let receiver = try GPSDOnPseudoTerminal(fixture: "clean-1hz-multi.nmea", interval: 0.05, loop: true)
            defer { receiver.stop() }
            let server = receiver.server
            let (process, reader) = try GPSLocBinary.launch(
                ["watch", "--json", "--port", String(server.endpoint.port), "--max-age", "1000000000"],
                configHome: config)
            #expect(
                await reader.waitFor(timeout: 30) { lines in
                    lines.filter { $0.text.contains(#""type":"location""#) }.count >= 5
                })
            process.terminate()
            await process.exited()
            let live = GPSLocBinary.jsonLines(await reader.finish().map(\.text).joined(separator: "\n"))
                .filter { $0["type"] as? String == "location" }
            let last = try await GPSLocBinary.run(["last", "--json"], configHome: config)
            #expect(last.status == 0, "\(last.stdout) \(last.stderr)")
            let lastLines = GPSLocBinary.jsonLines(last.stdout)
            for line in lastLines { NDJSONSchema.check(line) }
            let shown = try #require(lastLines.first { $0["type"] as? String == "location" })
            #expect(shown["timestamp"] as? String == live.last?["timestamp"] as? String)
            #expect(shown["simulated"] as? Bool == false)
            // Another app, never run: nothing, and it says why.
            let other = try await GPSLocBinary.run(["last", "--app", "never-ran"], configHome: config)
            #expect(other.status == 1 && other.stdout.contains("no last location"), "\(other.stdout)")
        }

        @Test(
            "watch against gpsd replaying a months-old recording delivers with no option, and says whose clock it follows",
            .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason)
        )
        func watchFollowsTheRecordingsClock() async throws {
            let config = try GPSLocBinary.makeConfigHome()
            #expect(
                try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--when-in-use"], configHome: config).status == 0
            )
            // #31: the recording is from June 2026; freshness is the receiver's clock advancing, so
            // gpsfake's replay delivers as a live receiver would — no --max-age.
            let lines = try await runWatch(against: "clean-1hz-multi.nmea", ["--in-use"], configHome: config)
            #expect(lines.filter { $0["type"] as? String == "location" }.count > 10)
            #expect(!lines.contains { $0["code"] as? String == "stale" })
            let notes = lines.filter { $0["code"] as? String == "systemClockOffset" }
            #expect(notes.count == 1, "said once: \(notes)")
            #expect((notes.first?["message"] as? String)?.contains("gpsd is playing a recording of 2026-06-15") == true)
        }
    }
}

extension RealGPSD.LaneB {
    @Suite(
        "gpsloc doctor",
        .enabled(if: FileManager.default.isExecutableFile(atPath: GPSLocBinary.path), "build gpsloc first")
    )
    struct DoctorTests {
        @Test("with nothing listening it fails and names the fix")
        func doctorWithoutGPSD() async throws {
            let port = try FreePortForTests.unused()
            let result = try await GPSLocBinary.run(["doctor", "--port", String(port)])
            #expect(result.status == 1)
            #expect(result.stdout.contains("fail  gpsd is not reachable at 127.0.0.1:\(port)"))
            #expect(result.stdout.contains("gpsloc auth grant gpsloc --when-in-use"))
            // gpsloc serve's libraries (setup.sh installs both).
            if FileManager.default.fileExists(atPath: "/usr/share/javascript/leaflet/leaflet.js") {
                #expect(result.stdout.contains("ok    gpsloc serve can run"), "\(result.stdout)")
            }
        }

        @Test(
            "with a running gpsd and its receiver it reports the device and the fix",
            .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason))
        func doctorWithGPSD() async throws {
            // A gpsd that has had its receiver open for a while (as under systemd), so the device is
            // known only from gpsd's DEVICES reply, not from an activation seen live.
            let receiver = try GPSDOnPseudoTerminal(fixture: "clean-1hz-multi.nmea", interval: 0.1, loop: false)
            defer { receiver.stop() }
            let server = receiver.server
            #expect(await gpsdReportsFix(server.endpoint), "gpsd reports the receiver's fixes")
            let result = try await GPSLocBinary.run(["doctor", "--port", String(server.endpoint.port)])
            #expect(
                result.stdout.contains("ok    gpsd answers at 127.0.0.1:\(server.endpoint.port)"), "\(result.stdout)")
            #expect(result.stdout.contains("ok    gpsd reads /dev/pts/"), "\(result.stdout)")
            #expect(result.stdout.contains("fix was reported just now"), "\(result.stdout)")
            // #31: the recording is from June 2026, on a receiver (not gpsfake): doctor says what
            // watch says, in the same words — the clocks disagree, and nothing is refused.
            #expect(
                result.stdout.contains("warn  the system clock is")
                    && result.stdout.contains("ahead of the receiver's"),
                "\(result.stdout)")
            #expect(!result.stdout.contains("stale"), "\(result.stdout)")
        }
    }
}

extension RealGPSD.LaneD {
    @Suite(
        "gpsloc replay", .serialized,
        .enabled(if: FileManager.default.isExecutableFile(atPath: GPSLocBinary.path), "build gpsloc first"))
    struct ReplayCommandTests {
        static let fixtures = ["drive-1hz-gp.nmea", "drive-10hz-multi.nmea", "clean-1hz-multi.nmea"]

        /// Every field of a location line (both paths follow one field table: README).
        static func identity(_ line: [String: Any]) -> String {
            [
                "timestamp", "latitude", "longitude", "altitude", "ellipsoidalAltitude", "horizontalAccuracy",
                "verticalAccuracy", "speed", "speedAccuracy", "course", "courseAccuracy", "fixMode", "accuracyClass",
                "reduced", "simulated",
            ]
            .map { "\(line[$0] ?? "nil")" }.joined(separator: "|")
        }

        /// The location lines in order (one per timestamp: the pipeline drops repeats).
        static func lastPerTimestamp(_ lines: [[String: Any]]) -> [String] {
            var result: [(String, String)] = []
            for line in lines where line["type"] as? String == "location" {
                let time = line["timestamp"] as? String ?? ""
                if result.last?.0 == time { result.removeLast() }
                result.append((time, identity(line)))
            }
            return result.map(\.1)
        }

        @Test("--via nmea prints schema-valid NDJSON, labelled as a replay of the file", arguments: fixtures)
        func viaNMEA(name: String) async throws {
            let path = Paths.fixtures.appendingPathComponent(name).path
            let result = try await GPSLocBinary.run(["replay", path, "--json"])
            #expect(result.status == 0, "\(result.stderr)")
            let lines = GPSLocBinary.jsonLines(result.stdout)
            #expect(lines.count == result.stdout.split(separator: "\n").count)
            for line in lines { NDJSONSchema.check(line) }
            #expect((lines.first?["message"] as? String)?.contains(name) == true)
            #expect(lines.filter { $0["type"] as? String == "location" }.count > 100)
        }

        /// Every fixture but the checksum-less one: from a GST without a checksum gpsd 3.22 reports
        /// no altitude error (its vertical accuracy then comes from VDOP; README, the field table).
        static let allFixtures = ((try? FileManager.default.contentsOfDirectory(atPath: Paths.fixtures.path)) ?? [])
            .filter { $0.hasSuffix(".nmea") && !$0.hasPrefix("nochecksum") }.sorted()

        @Test(
            "--via nmea and --via gpsd print the same locations, field for field",
            .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason), arguments: allFixtures)
        func sameLocationsBothWays(name: String) async throws {
            let path = Paths.fixtures.appendingPathComponent(name).path
            let ours = try await GPSLocBinary.run(["replay", path, "--via", "nmea", "--json"])
            let gpsd = try await GPSLocBinary.run(["replay", path, "--via", "gpsd", "--json"])
            let a = Self.lastPerTimestamp(GPSLocBinary.jsonLines(ours.stdout))
            let b = Self.lastPerTimestamp(GPSLocBinary.jsonLines(gpsd.stdout))
            #expect(a.count > 50)
            // The recording's end through gpsd is said as such, with no cable to check.
            #expect(!gpsd.stderr.contains("check the cable"), "\(gpsd.stderr)")
            // Every location, the first included: the NMEA engine reports a first cycle as gpsd
            // does while it learns the receiver's cycle (at each fix sentence), so the first
            // location delivered is the same report on both paths.
            #expect(
                a == b,
                """
                first difference at \(Array(zip(a, b)).firstIndex { $0.0 != $0.1 } ?? min(a.count, b.count)); \
                --via gpsd exited \(gpsd.status): \(gpsd.stderr)
                """)
        }

        /// The hand-made recordings of receiver patterns that lost fixes (fixtures/README.md), by
        /// the default options a user replays with: every fix gpsd reports reaches the app.
        @Test(
            "receiver patterns: a clock restart, a cut cycle before a gap, a ZDA behind: every fix",
            arguments: [
                ("clock-restart-1hz-gp.nmea", 100, "2026-06-15T12:00:00.000Z"),
                ("cut-before-gap-1hz-gp.nmea", 120, "2026-06-15T12:00:00.000Z"),
                ("zda-behind-1hz-gp.nmea", 59, "2026-06-15T12:00:01.000Z"),
            ])
        func receiverPatterns(name: String, count: Int, first: String) async throws {
            let path = Paths.fixtures.appendingPathComponent(name).path
            let locations = GPSLocBinary.jsonLines(try await GPSLocBinary.run(["replay", path, "--json"]).stdout)
                .filter { $0["type"] as? String == "location" }
            #expect(locations.count == count)
            #expect(locations.first?["timestamp"] as? String == first)
            let times = locations.compactMap { $0["timestamp"] as? String }
            #expect(Set(times).count == times.count, "each epoch once")
        }

        /// #25: gpsd's clients' conventions — -V, -h everywhere, HOST[:PORT[:DEVICE]], GPSLOCATION_GPSD,
        /// completions for three shells.
        @Test("-V, help everywhere, a gpsd as gpsd's clients name it, completions for bash, zsh and fish")
        func conventions() async throws {
            for arguments in [["-V"], ["--version"], ["version"]] {
                let result = try await GPSLocBinary.run(arguments)
                #expect(result.status == 0 && result.stdout.hasPrefix("gpsloc "), "\(arguments)")
            }
            for command in [
                "watch", "replay", "auth", "sky", "last", "monitor", "doctor", "version", "completion", "manpage",
            ] {
                let result = try await GPSLocBinary.run([command, "--help"])
                #expect(result.status == 0 && result.stdout.hasPrefix("usage: gpsloc \(command)"), "\(command)")
                let wide = result.stdout.split(separator: "\n").filter { $0.count > 80 }.map(String.init)
                #expect(wide.isEmpty, "\(command) --help is wider than 80 columns: \(wide.first ?? "")")
                // Filled, not ragged: no line breaks before a word that would have fitted on it
                // (the source's own line breaks are not the output's).
                let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
                for (line, next) in zip(lines, lines.dropFirst()) where !line.isEmpty && !next.isEmpty {
                    let indent = next.prefix { $0 == " " }.count
                    let word = next.drop { $0 == " " }.prefix { $0 != " " }
                    let continues = indent > 0 && indent == (line.prefix { $0 == " " }.count) && indent >= 20
                    let prose = indent == 0 && !line.hasPrefix("usage:") && !line.hasPrefix(" ") && !line.hasSuffix(":")
                    #expect(
                        !((continues || prose) && line.count + 1 + word.count <= 80),
                        "\(command) --help breaks a line early: \(line) / \(next)")
                }
                #expect(try await GPSLocBinary.run([command, "-h"]).status == 0, "\(command) -h")
            }
            for shell in ["bash", "zsh", "fish"] {
                let script = try await GPSLocBinary.run(["completion", shell])
                #expect(script.status == 0 && script.stdout.contains("gpsloc"), "\(shell)")
            }
            // A file where a gpsd goes: the command that plays it.
            let file = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
            let mistaken = try await GPSLocBinary.run(["watch", file])
            #expect(mistaken.status == 2 && mistaken.stderr.contains("gpsloc replay \(file)"), "\(mistaken.stderr)")
            // Nobody listens on port 1, named each way: the same single error, naming that gpsd.
            for command in [
                #""$GPSLOC" watch --once --json 127.0.0.1:1"#,
                #"GPSLOCATION_GPSD=127.0.0.1:1 "$GPSLOC" watch --once --json"#,
            ] {
                #expect(try await GPSLocBinary.shell(command + " >/dev/null 2>&1") == 1, "\(command)")
            }
            #expect(try await GPSLocBinary.shell(#"GPSLOCATION_GPSD=bad:port "$GPSLOC" doctor >/dev/null 2>&1"#) == 2)
            // The version is the newest CHANGELOG entry, and a release tag on this commit agrees.
            let changelog = try String(
                contentsOf: Paths.packageRoot.appendingPathComponent("CHANGELOG.md"), encoding: .utf8)
            let newest = changelog.split(separator: "\n").first { $0.hasPrefix("## ") }?.dropFirst(3)
                .split(separator: " ").first.map(String.init)
            #expect(newest == GPSLocationInfo.version)
            #expect(try await GPSLocBinary.run(["-V"]).stdout.hasPrefix("gpsloc \(GPSLocationInfo.version),"))
            let tag = try await GPSLocBinary.shell(
                #"cd "\#(Paths.packageRoot.path)" && t=$(git describe --exact-match --tags 2>/dev/null) || exit 0; "#
                    + #"[ "$t" = "v\#(GPSLocationInfo.version)" ]"#)
            #expect(tag == 0, "a tag on this commit names another version")
            #expect(FileManager.default.fileExists(atPath: Paths.packageRoot.appendingPathComponent("LICENSE").path))
        }

        /// #24: a diagnostic written to a closed stderr trapped in FileHandle.write (exit 132), and
        /// a reader that went away ended gpsloc with 0.
        @Test("closed or broken output: never a crash, never status 0")
        func brokenOutput() async throws {
            let drive = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
            // stderr closed, or a pipe whose reader leaves after one byte: the error is lost, gpsloc is not.
            #expect(try await GPSLocBinary.shell(#""$GPSLOC" watch --once --json --port 1 2>&- >/dev/null"#) == 1)
            #expect(
                try await GPSLocBinary.shell(
                    #""$GPSLOC" watch --once --json --port 1 2>&1 >/dev/null | head -c 1 >/dev/null; exit ${PIPESTATUS[0]}"#
                ) == 1)
            // stdout whose reader leaves: 141 (as a shell shows SIGPIPE), quietly as gpspipe (#36: the
            // reader left on purpose; the status says it); stdout closed: 74.
            #expect(
                try await GPSLocBinary.shell(
                    #"e=$(mktemp); "$GPSLOC" replay "\#(drive)" --json --fast 2>"$e" | head -1 >/dev/null; "#
                        + #"s=${PIPESTATUS[0]}; grep -q 'broken pipe' "$e" && s=99; rm -f "$e"; exit $s"#)
                    == 141, "141, and nothing said about the pipe")
            #expect(try await GPSLocBinary.shell(#""$GPSLOC" replay "\#(drive)" --json --fast >&-"#) == 74)
        }

        @Test("#36 gpsd's habits: -n/--count, -o/--output, --gpx - to stdout, short forms, the command's own usage")
        func gpsdHabits() async throws {
            let drive = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
            // -n N: N locations, exit 0 (gpspipe -n); --count is the same.
            let counted = try await GPSLocBinary.run(["replay", drive, "--json", "-n", "3"])
            #expect(counted.status == 0)
            #expect(GPSLocBinary.jsonLines(counted.stdout).filter { $0["type"] as? String == "location" }.count == 3)
            let long = try await GPSLocBinary.run(["replay", drive, "--json", "--count=2"])
            #expect(GPSLocBinary.jsonLines(long.stdout).filter { $0["type"] as? String == "location" }.count == 2)
            // -o FILE: what went to stdout goes there, mode 0600; stdout stays empty.
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("habits-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let file = folder.appendingPathComponent("out.ndjson").path
            let written = try await GPSLocBinary.run(["replay", drive, "-j", "-n", "2", "-o", file])
            #expect(written.status == 0 && written.stdout.isEmpty)
            let text = try String(contentsOfFile: file, encoding: .utf8)
            #expect(text.components(separatedBy: "\"type\":\"location\"").count - 1 == 2)
            #expect((try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int) == 0o600)
            // -o never follows a link.
            let link = folder.appendingPathComponent("link").path
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: file)
            let refused = try await GPSLocBinary.run(["replay", drive, "-n", "1", "-o", link])
            #expect(refused.status == 1 && refused.stderr.contains("symbolic link"), "\(refused.stderr)")
            // --gpx -: the track on stdout (gpxlogger's habit), a whole document; notes on stderr.
            let track = try await GPSLocBinary.run(["replay", drive, "--gpx", "-", "-n", "3"])
            #expect(track.status == 0)
            #expect(track.stdout.hasPrefix("<?xml") && track.stdout.hasSuffix("</gpx>\n"))
            #expect(track.stdout.components(separatedBy: "<trkpt").count - 1 == 3)
            #expect(!track.stdout.contains("\"type\""))
            // Units for the text lines and the table (cgps's -u, GPSD_UNITS); NDJSON stays SI.
            let onTerminal = { (arguments: [String], environment: [String: String]) async throws -> String in
                var merged = GPSLocBinary.environment()
                merged.merge(environment) { $1 }
                // On a terminal (script(1) gives it one): the text lines, not NDJSON.
                let command = ([GPSLocBinary.path, "replay", drive, "--fast", "-n", "1"] + arguments).map(shellQuoted)
                    .joined(separator: " ")
                return try await runProgram("/usr/bin/script", ["-qc", command, "/dev/null"], environment: merged)
                    .stdout
            }
            #expect(try await onTerminal(["-u", "imperial"], [:]).contains(" mph "))
            #expect(try await onTerminal(["--units", "nautical"], [:]).contains(" kn "))
            #expect(try await onTerminal([], ["GPSD_UNITS": "imperial"]).contains(" mph "))
            #expect(try await onTerminal([], [:]).contains(" m/s "))
            let badUnits = try await GPSLocBinary.run(["replay", drive, "-u", "furlongs"])
            #expect(badUnits.status == 2 && badUnits.stderr.contains("metric, imperial or nautical"))
            // doctor --json: the same checks, one NDJSON line each.
            var plain = GPSLocBinary.environment()
            plain["GPSLOCATION_BROKER"] = "none"
            let doctorText = try await runProgram(GPSLocBinary.path, ["doctor", "127.0.0.1:9"], environment: plain)
            let doctorJSON = try await runProgram(
                GPSLocBinary.path, ["doctor", "-j", "127.0.0.1:9"], environment: plain)
            let checks = GPSLocBinary.jsonLines(doctorJSON.stdout)
            #expect(!checks.isEmpty && checks.allSatisfy { $0["type"] as? String == "check" })
            #expect(checks.count == doctorText.stdout.split(separator: "\n").count, "\(doctorJSON.stdout)")
            #expect(checks.contains { $0["level"] as? String == "fail" } && doctorJSON.status == 1)
            // doctor waits for two of the receiver's cycles: 3.6 s for a 1.8 s cycle (it said
            // "none within 2 s" there), at least 2 s, at most 10 s.
            #expect(DoctorCommand.waitWindow(cycles: [1.8]) == 3.6)
            #expect(DoctorCommand.waitWindow(cycles: []) == 2)
            #expect(DoctorCommand.waitWindow(cycles: [0.1, 1]) == 2)
            #expect(DoctorCommand.waitWindow(cycles: [30]) == 10)
            // A usage mistake prints the command's usage, not the list of commands.
            let mistake = try await GPSLocBinary.run(["replay", drive, "--bogus"])
            #expect(mistake.status == 2)
            #expect(
                mistake.stderr.contains("usage: gpsloc replay") && !mistake.stderr.contains("usage: gpsloc COMMAND"))
            #expect(mistake.stderr.contains("gpsloc replay --help"))
            let unknown = try await GPSLocBinary.run(["frobnicate"])
            #expect(unknown.status == 2 && unknown.stderr.contains("usage: gpsloc COMMAND"))
            // A short form the command does not take is an unknown option.
            let sky = try await GPSLocBinary.run(["version", "-n", "3"])
            #expect(sky.status == 2 && sky.stderr.contains("unknown option -n"))
        }

        @Test("--authorization denied: no location, one denied error")
        func denied() async throws {
            let path = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
            let lines = GPSLocBinary.jsonLines(
                try await GPSLocBinary.run(["replay", path, "--authorization", "denied", "--json"]).stdout)
            #expect(!lines.contains { $0["type"] as? String == "location" })
            #expect(lines.filter { $0["type"] as? String == "error" }.map { $0["code"] as? String } == ["denied"])
        }

        @Test("--authorization notDetermined: the diagnostic, no location")
        func notDetermined() async throws {
            let path = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
            let lines = GPSLocBinary.jsonLines(
                try await GPSLocBinary.run(["replay", path, "--authorization", "notDetermined", "--json"]).stdout)
            #expect(!lines.contains { $0["type"] as? String == "location" })
            let errors = lines.filter { $0["type"] as? String == "error" }
            #expect(errors.count == 1)
            #expect((errors.first?["message"] as? String)?.contains("gpsloc auth grant gpsloc") == true)
        }

        @Test("--accuracy reduced: only grid-snapped locations marked reduced, nothing precise")
        func reduced() async throws {
            let path = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
            let precise = GPSLocBinary.jsonLines(try await GPSLocBinary.run(["replay", path, "--json"]).stdout)
                .filter { $0["type"] as? String == "location" }
            let lines = GPSLocBinary.jsonLines(
                try await GPSLocBinary.run(["replay", path, "--accuracy", "reduced", "--json"]).stdout)
            let locations = lines.filter { $0["type"] as? String == "location" }
            #expect(!locations.isEmpty)
            #expect(locations.count <= 1, "at most one location per 15 minutes of a 5-minute recording")
            for location in locations {
                #expect(location["reduced"] as? Bool == true)
                #expect((location["horizontalAccuracy"] as? Double ?? 0) >= 2000)
                #expect(location["altitude"] is NSNull && location["speed"] is NSNull && location["course"] is NSNull)
                let latitude = location["latitude"] as? Double ?? 0
                let longitude = location["longitude"] as? Double ?? 0
                #expect(
                    !precise.contains {
                        ($0["latitude"] as? Double) == latitude || ($0["longitude"] as? Double) == longitude
                    })
            }
        }

        @Test("stdin and a missing file")
        func stdinAndMissing() async throws {
            let missing = try await GPSLocBinary.run(["replay", "/nonexistent/file.nmea", "--json"])
            #expect(missing.status == 1)
            #expect(missing.stdout.contains("cannot read the recording /nonexistent/file.nmea"))
            let empty = try await GPSLocBinary.run(["replay", "/dev/null", "--json"])
            #expect(empty.stdout.contains("contains no position report") && empty.status == 1)
            let noise = FileManager.default.temporaryDirectory.appendingPathComponent("noise-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: noise) }
            var random = SplitMix64(seed: 4)
            try Data((0..<4096).map { _ in UInt8(truncatingIfNeeded: random.next()) }).write(to: noise)
            let binary = try await GPSLocBinary.run(["replay", noise.path, "--json"])
            #expect(binary.status == 1 && binary.stdout.contains("contains no position report"))
            // Numbers out of range are usage errors with the range, never a crash.
            for (option, value) in [("--timeout", "1e19"), ("--max-age", "-1"), ("--min-interval", "nan")] {
                let result = try await GPSLocBinary.run(["watch", option, value, "--json"])
                #expect(result.status == 2 && result.stderr.contains("must be a number from"), "\(option) \(value)")
            }
            let fixture = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea")
            let fromFile = try await GPSLocBinary.run(["replay", fixture.path, "--json"])
            let fromStdin = try await GPSLocBinary.run(["replay", "-", "--json"], stdin: fixture)
            let locations = { (text: String) in text.split(separator: "\n").filter { $0.contains("\"location\"") } }
            #expect(locations(fromStdin.stdout) == locations(fromFile.stdout))
            #expect(fromStdin.stdout.contains("replaying the recording standard input"))
        }
    }
}

extension RealGPSD.LaneB {
    @Suite(
        "live authorization changes",
        .enabled(if: FileManager.default.isExecutableFile(atPath: GPSLocBinary.path), "build gpsloc first"))
    struct LiveAuthorizationTests {
        @Test(
            "revoking while watch runs against gpsfake stops locations within a second, and says why",
            .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason))
        func revokeWhileWatching() async throws {
            let config = try GPSLocBinary.makeConfigHome()
            #expect(
                try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config).status == 0)
            // 20 ms between sentences: about five fixes a second, for a minute.
            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea"), cycle: 0.02)
            defer { server.stop() }
            let (process, reader) = try GPSLocBinary.launch(
                ["watch", "--json", "--port", String(server.endpoint.port), "--max-age", "1000000000"],
                configHome: config)
            #expect(await reader.waitFor(timeout: 30) { $0.filter { $0.text.contains("\"location\"") }.count >= 10 })
            let revokedAt = Date()
            #expect(try await GPSLocBinary.run(["auth", "revoke", "gpsloc"], configHome: config).status == 0)
            // Bounded: a gpsloc that failed to end is stopped and the test says so instead of
            // hanging the run.
            #expect(await process.exited(hangLimit: 30), "gpsloc watch did not end after the revocation")
            let lines = await reader.finish()
            #expect(process.terminationStatus == 1)
            let lastLocation = lines.last { $0.text.contains("\"location\"") }
            let delay = lastLocation.map { $0.time.timeIntervalSince(revokedAt) } ?? 0
            #expect(delay < 1.0, "a location arrived \(delay) s after the revocation")
            let authorization = lines.first { $0.text.contains("\"changed outside gpsloc\"") }
            #expect(authorization?.text.contains("\"denied\"") == true)
            #expect(authorization.map { $0.time.timeIntervalSince(revokedAt) < 1.0 } == true)
            #expect(lines.contains { $0.text.contains("\"code\":\"denied\"") })
        }

        @Test("a manager following the store hears of a revocation and gets CLError.denied")
        func managerFollowsStore() async throws {
            let config = try GPSLocBinary.makeConfigHome().appendingPathComponent("gpslocation")
            let store = DecisionStore(directory: config)
            try store.set(AuthorizationDecision(status: .authorizedAlways), for: "follower")
            let authorizer = LocationAuthorizer.persistent(
                appID: "follower", store: store, policyPath: config.appendingPathComponent("no-policy.json").path)
            #expect(authorizer.status == .authorizedAlways)
            let fixes = try FixtureFixes.load("drive-1hz-gp")
            let source = FixListSource(fixes, interval: 0.01, reportsEnd: false)
            let manager = CLLocationManager(source: source, authorizer: authorizer)
            let delegate = RecordingDelegate()
            manager.delegate = delegate
            manager.startUpdatingLocation()
            #expect(await delegate.wait { $0.locations.count > 5 })
            try store.set(AuthorizationDecision(status: .denied), for: "follower")
            #expect(await delegate.wait(timeout: 5) { $0.errors.contains { $0.code == .denied } })
            let count = delegate.locations.count
            // The denial stops the source (its `stop()` waits for a fix being handed over), or the
            // rest of the drive is taken in; then every callback made has run: none is a location.
            #expect(await source.wait(timeout: 30) { !$0.isRunning || $0.sent == $0.count })
            await delegateQueueFlushed(manager)
            #expect(delegate.locations.count == count, "nothing after the denial")
            #expect(delegate.authorizationCalls == 2)
            manager.stopUpdatingLocation()
        }

        @Test("the administrator's policy: services off, restricted apps, pre-granted daemons, a broken file")
        func policy() throws {
            let folder = try GPSLocBinary.makeConfigHome()
            let path = folder.appendingPathComponent("policy.json").path
            try Data(
                #"{"restricted":["kid"],"granted":{"fleetd":{"status":"authorizedAlways","accuracy":"reduced"}}}"#.utf8
            )
            .write(to: URL(fileURLWithPath: path))
            var policy = LocationPolicy.load(path: path)
            #expect(policy.decision(for: "kid") == AuthorizationDecision(status: .restricted))
            #expect(
                policy.decision(for: "fleetd")
                    == AuthorizationDecision(status: .authorizedAlways, accuracy: .reducedAccuracy))
            #expect(policy.decision(for: "other") == nil)
            try Data(#"{"locationServicesEnabled":false}"#.utf8).write(to: URL(fileURLWithPath: path))
            policy = LocationPolicy.load(path: path)
            #expect(policy.decision(for: "fleetd") == AuthorizationDecision(status: .denied))
            try Data("{not json".utf8).write(to: URL(fileURLWithPath: path))
            policy = LocationPolicy.load(path: path)
            #expect(!policy.locationServicesEnabled)
            #expect(policy.problem?.description.contains(path) == true)
        }
    }
}

/// Starts `executable` (stdin and stdout to /dev/null) and reads its stderr line by line: a
/// daemon under test whose journal lines the test waits for.
func launchReadingStderr(
    _ executable: String, _ arguments: [String], environment: [String: String]
) throws -> (process: Process, stderr: LineReader) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    process.environment = environment
    process.standardInput = FileHandle.nullDevice
    process.standardOutput = FileHandle.nullDevice
    let errors = Pipe()
    process.standardError = errors
    try process.run()
    return (process, LineReader(errors.fileHandleForReading))
}

extension RealGPSD.LaneB {
    @Suite(
        "gpsloc watch --once, --gpx and sky against gpsfake",
        .enabled(if: FileManager.default.isExecutableFile(atPath: GPSLocBinary.path), "build gpsloc first"),
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason))
    struct LiveCommandTests {
        /// Runs `body` with gpsfake replaying a fixture slowly (20 ms a sentence) on its port.
        static func withGPSFake<T>(_ fixture: String, _ body: (Int) async throws -> T) async throws -> T {
            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent(fixture), cycle: 0.02)
            defer { server.stop() }
            return try await body(server.endpoint.port)
        }

        @Test("--once prints one location and exits 0")
        func once() async throws {
            let config = try GPSLocBinary.makeConfigHome()
            _ = try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config)
            let result = try await Self.withGPSFake("clean-1hz-multi.nmea") { port in
                try await GPSLocBinary.run(
                    ["watch", "--once", "--json", "--port", String(port), "--max-age", "1e9"], configHome: config)
            }
            #expect(result.status == 0, "\(result.stderr)")
            let lines = GPSLocBinary.jsonLines(result.stdout)
            #expect(lines.filter { $0["type"] as? String == "location" }.count == 1)
            for line in lines { NDJSONSchema.check(line) }
        }

        @Test("sky lists the satellites")
        func sky() async throws {
            let result = try await Self.withGPSFake("clean-1hz-multi.nmea") { port in
                try await GPSLocBinary.run(["sky", "--json", "--port", String(port)])
            }
            #expect(result.status == 0, "\(result.stderr)")
            let sky = try #require(GPSLocBinary.jsonLines(result.stdout).first)
            #expect(sky["type"] as? String == "sky")
            let satellites = sky["satellites"] as? [[String: Any]] ?? []
            #expect(satellites.count >= 10)
            let constellations = Set(satellites.compactMap { $0["constellation"] as? String })
            #expect(constellations.isSuperset(of: ["GPS", "GLONASS"]), "\(constellations)")
        }

        @Test("--gpx stays a valid GPX 1.1 file after kill -9, and a GPX reader gets the same points back")
        func gpxSurvivesKill() async throws {
            let config = try GPSLocBinary.makeConfigHome()
            _ = try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config)
            let track = config.appendingPathComponent("track.gpx")
            let output = try await Self.withGPSFake("drive-1hz-gp.nmea") { port -> String in
                let (process, reader) = try GPSLocBinary.launch(
                    ["watch", "--json", "--port", String(port), "--max-age", "1e9", "--gpx", track.path],
                    configHome: config
                )
                _ = await reader.waitFor(timeout: 30) { $0.filter { $0.text.contains("\"location\"") }.count >= 15 }
                process.kill(SIGKILL)
                await process.exited()
                return await reader.finish().map(\.text).joined(separator: "\n")
            }
            let delivered = GPSLocBinary.jsonLines(output).filter { $0["type"] as? String == "location" }
            #expect(delivered.count >= 15)
            // xmllint: well-formed.
            #expect(try await runProgram("/usr/bin/xmllint", ["--noout", track.path]).status == 0)
            // Private, and never overwritten: a second run refuses the existing file before it
            // starts (exit 1, the file untouched), and a link is not followed.
            #expect((try FileManager.default.attributesOfItem(atPath: track.path)[.posixPermissions] as? Int) == 0o600)
            let before = try Data(contentsOf: track)
            let again = try await GPSLocBinary.run([
                "replay", Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path, "--gpx", track.path,
            ])
            #expect(again.status == 1 && again.stderr.contains("never overwrites"), "\(again.stderr)")
            #expect(try Data(contentsOf: track) == before)
            let recording = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea")
            // #25: the drive's tunnel (the fix lost, then back) starts a new segment, as gpxlogger
            // does: no straight line through it, and no empty segment.
            let segmented = config.appendingPathComponent("segments.gpx")
            #expect(
                try await GPSLocBinary.run(["replay", recording.path, "--fast", "--gpx", segmented.path]).status == 0)
            let gpx = try String(contentsOf: segmented, encoding: .utf8)
            #expect(gpx.components(separatedBy: "<trkseg>").count - 1 == 2, "two segments around the tunnel")
            #expect(!gpx.contains("<trkseg>\n  </trkseg>"), "no empty segment")
            #expect(try await runProgram("/usr/bin/xmllint", ["--noout", segmented.path]).status == 0)
            let onItself = try await GPSLocBinary.run(["replay", recording.path, "--gpx", recording.path])
            #expect(onItself.status == 1, "the recording being replayed is never truncated")
            let link = config.appendingPathComponent("link.gpx")
            try FileManager.default.createSymbolicLink(
                atPath: link.path, withDestinationPath: config.appendingPathComponent("elsewhere.gpx").path)
            #expect(try await GPSLocBinary.run(["replay", recording.path, "--gpx", link.path]).status == 1)
            #expect(!FileManager.default.fileExists(atPath: config.appendingPathComponent("elsewhere.gpx").path))
            // --force replaces a regular file — never a link, never the recording itself.
            let forcedOnItself = try await GPSLocBinary.run([
                "replay", recording.path, "--gpx", recording.path, "--force",
            ])
            #expect(forcedOnItself.status == 1 && forcedOnItself.stderr.contains("the recording being replayed"))
            // The same recording coming through standard input (#24): known by device and inode.
            let copy = config.appendingPathComponent("copy.nmea")
            try FileManager.default.copyItem(at: recording, to: copy)
            let throughStdin = try await GPSLocBinary.run(
                ["replay", "-", "--gpx", copy.path, "--force"], stdin: copy)
            #expect(throughStdin.status == 1 && throughStdin.stderr.contains("the recording being replayed"))
            #expect(try Data(contentsOf: copy) == Data(contentsOf: recording))
            #expect(try await GPSLocBinary.run(["replay", recording.path, "--gpx", link.path, "--force"]).status == 1)
            #expect(!FileManager.default.fileExists(atPath: config.appendingPathComponent("elsewhere.gpx").path))
            let scratch = config.appendingPathComponent("old.gpx")
            try Data("old".utf8).write(to: scratch)
            let forced = try await GPSLocBinary.run([
                "replay", recording.path, "--fast", "--gpx", scratch.path, "--force",
            ])
            #expect(forced.status == 0, "\(forced.stderr)")
            #expect(try String(contentsOf: scratch, encoding: .utf8).hasPrefix("<?xml"))
            #expect(
                (try FileManager.default.attributesOfItem(atPath: scratch.path)[.posixPermissions] as? Int) == 0o600)
            // gpsbabel reads the track back: the same points, in order.
            let csv = try await runProgram(
                "/usr/bin/gpsbabel", ["-t", "-i", "gpx", "-f", track.path, "-o", "unicsv", "-F", "-"])
            let rows = csv.stdout.split(whereSeparator: \.isNewline).dropFirst().map { $0.split(separator: ",") }
            #expect(
                rows.count >= delivered.count - 1 && rows.count <= delivered.count,
                "\(rows.count) points for \(delivered.count) locations")
            for (row, location) in zip(rows, delivered) {
                let latitude = Double(row[1]) ?? 0
                let longitude = Double(row[2]) ?? 0
                #expect(abs(latitude - (location["latitude"] as? Double ?? 0)) < 1e-6)
                #expect(abs(longitude - (location["longitude"] as? Double ?? 0)) < 1e-6)
            }
        }
    }
}

extension RealGPSD.LaneB {
    @Suite(
        "gpsloc watch on a terminal (tmux)",
        .enabled(if: FileManager.default.isExecutableFile(atPath: GPSLocBinary.path), "build gpsloc first"),
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux"),
            "tmux not installed: sudo apt-get install tmux"),
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason))
    struct TerminalTableTests {
        /// Runs tmux with a clean signal state (ChildProcess): a tmux server started from a test
        /// thread would otherwise inherit a blocked signal mask and never reap its children.
        static func tmux(_ arguments: [String], capture: Bool = false) async throws -> String {
            let output = FileManager.default.temporaryDirectory.appendingPathComponent("tmux-\(UUID().uuidString).txt")
            defer { try? FileManager.default.removeItem(at: output) }
            let child = try ChildProcess(
                executable: "/usr/bin/tmux", arguments: arguments, environment: ProcessInfo.processInfo.environment,
                stdoutPath: capture ? output.path : nil)
            await child.waitForExit(timeout: .seconds(10))
            return capture ? ((try? String(contentsOf: output, encoding: .utf8)) ?? "") : ""
        }

        /// A tmux session's pane, and the events of its output: tmux copies every byte the pane
        /// gets to a file (`pipe-pane`), and inotify tells of each write — so a wait for the screen
        /// re-reads it when something was drawn, never on a timer.
        final class Pane: Sendable {
            let socket: String
            let session: String
            let growth: FileGrowth?
            var drawn: EventCounter { growth?.writes ?? EventCounter() }

            init(socket: String, session: String, stream: String) {
                self.socket = socket
                self.session = session
                growth = FileGrowth(path: stream)
            }

            /// The screen once `condition` holds (or the last one after `hangLimit` seconds, a
            /// bound on a hang: the screen is read again after each write to the pane).
            func screen(hangLimit: Double = 30, until condition: @escaping @Sendable (String) -> Bool) async throws
                -> String
            {
                let deadline = Date() + hangLimit
                while true {
                    let seen = drawn.value
                    let screen = try await TerminalTableTests.tmux(
                        ["-S", socket, "capture-pane", "-t", session, "-p"], capture: true)
                    if condition(screen) { return screen }
                    let left = deadline.timeIntervalSinceNow
                    if left <= 0 { return screen }
                    _ = await drawn.wait(hangLimit: left) { $0 > seen }
                }
            }

            func keys(_ keys: String...) async throws {
                _ = try await TerminalTableTests.tmux(["-S", socket, "send-keys", "-t", session] + keys)
            }
        }

        /// `gpsloc watch --port PORT` in a new 80×24 tmux session with its own decision store;
        /// after it ends the pane stays (`remain-on-exit`) and shows `EXITED <status>`.
        static func watchInTmux(config: URL, port: Int) async throws -> Pane {
            let session = "gpsloc-\(UUID().uuidString.prefix(8))"
            let socket = config.appendingPathComponent("tmux.sock").path
            let stream = config.appendingPathComponent("pane.out").path
            _ = FileManager.default.createFile(atPath: stream, contents: nil)
            let pane = Pane(socket: socket, session: session, stream: stream)
            let command =
                "XDG_CONFIG_HOME=\(shellQuoted(config.path)) XDG_CACHE_HOME=\(shellQuoted(config.path + "/cache")) "
                + "XDG_STATE_HOME=\(shellQuoted(config.path + "/state")) "
                + "\(shellQuoted(GPSLocBinary.path)) watch --port \(port) --max-age 1e9; echo EXITED $?"
            _ = try await tmux([
                "-S", socket, "new-session", "-d", "-s", session, "-x", "80", "-y", "24", command, ";",
                "set-option", "-t", session, "remain-on-exit", "on", ";",
                "pipe-pane", "-t", session, "-o", "cat >> \(shellQuoted(stream))",
            ])
            return pane
        }

        /// #24: the table cleared the screen a second after the consent question appeared.
        @Test("the consent questions stay on screen until answered; the table starts after")
        func questionStays() async throws {
            let config = try GPSLocBinary.makeConfigHome()
            try await LiveCommandTests.withGPSFake("clean-1hz-multi.nmea") { port in
                let pane = try await Self.watchInTmux(config: config, port: port)
                defer { Task { _ = try? await Self.tmux(["-S", pane.socket, "kill-server"]) } }
                // The question is on the screen and no table: the table draws nothing before it is
                // shown, whatever its timer does (`tableWaitsForShow` drives that timer by hand).
                let asked = try await pane.screen { $0.contains("Allow? [o]nce") }
                #expect(asked.contains("Allow? [o]nce") && !asked.contains("Latitude"), "\(asked)")
                try await pane.keys("a", "Enter")
                let precise = try await pane.screen { $0.contains("Precise location?") }
                #expect(precise.contains("Precise location?") && !precise.contains("Latitude"), "\(precise)")
                try await pane.keys("y", "Enter")
                let table = try await pane.screen { $0.contains("Latitude") }
                #expect(table.contains("Latitude") && table.contains("authorizedAlways"), "\(table)")
                try await pane.keys("C-c")
            }
        }

        @Test("the table renders, refreshes, fits 80 columns, and survives a resize and Ctrl-C")
        func table() async throws {
            let config = try GPSLocBinary.makeConfigHome()
            _ = try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config)
            try await LiveCommandTests.withGPSFake("clean-1hz-multi.nmea") { port in
                let pane = try await Self.watchInTmux(config: config, port: port)
                defer { Task { _ = try? await Self.tmux(["-S", pane.socket, "kill-server"]) } }
                let timeLine = { @Sendable (screen: String) in
                    screen.split(separator: "\n").first { $0.hasPrefix("Time") }.map(String.init)
                }
                let first = try await pane.screen {
                    $0.contains("Latitude") && $0.contains("Satellites") && $0.contains("Authorization")
                        && timeLine($0) != nil
                }
                #expect(
                    first.contains("Latitude") && first.contains("Satellites") && first.contains("Authorization"),
                    "\(first)")
                #expect(first.split(separator: "\n").allSatisfy { $0.count <= 80 })
                let second = try await pane.screen { timeLine($0) != nil && timeLine($0) != timeLine(first) }
                #expect(timeLine(first) != nil && timeLine(first) != timeLine(second), "the table did not refresh")
                _ = try await Self.tmux([
                    "-S", pane.socket, "resize-window", "-t", pane.session, "-x", "60", "-y", "20",
                ])
                let resized = try await pane.screen { timeLine($0) != nil && timeLine($0) != timeLine(second) }
                #expect(resized.contains("Latitude"), "redrawn after the resize: \(resized)")
                try await pane.keys("C-c")
                let last = try await pane.screen { $0.contains("EXITED") }
                #expect(last.contains("EXITED 0"), "\(last)")
            }
        }
    }
}

/// `watch --once` is the engine's one-shot driven by the runner: it ends when the engine says the
/// request is over, never on a rule of its own.
@Suite(
    "gpsloc watch --once: every way of getting no location ends it with the reason",
    .enabled(if: FileManager.default.isExecutableFile(atPath: GPSLocBinary.path), "build gpsloc first"),
    .timeLimit(.minutes(5)))
struct OnceEndTests {
    @Test("gpsd unreachable: said at once, the request waits its timeout, then the reason and exit 1")
    func unreachable() async throws {
        let config = try GPSLocBinary.makeConfigHome()
        _ = try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config)
        let port = try FreePort.find()
        let result = try await GPSLocBinary.run(
            ["watch", "--once", "--json", "--port", String(port), "--timeout", "1"], configHome: config)
        #expect(result.status == 1)
        let errors = GPSLocBinary.jsonLines(result.stdout).filter { $0["type"] as? String == "error" }
            .compactMap { $0["message"] as? String }
        #expect(errors.first?.contains("gpsd is not reachable") == true, "\(errors)")
        #expect(errors.last?.hasPrefix("no location within 1 s: gpsd is not reachable") == true, "\(errors)")
        #expect(!result.stdout.contains("\"location\""))
    }

    @Test("denied: the engine's refusal, exit 1 at once, gpsd never needed")
    func denied() async throws {
        let config = try GPSLocBinary.makeConfigHome()
        _ = try await GPSLocBinary.run(["auth", "revoke", "gpsloc"], configHome: config)
        let port = try FreePort.find()
        let result = try await GPSLocBinary.run(
            ["watch", "--once", "--json", "--port", String(port), "--timeout", "600"], configHome: config)
        #expect(result.status == 1)
        let errors = GPSLocBinary.jsonLines(result.stdout).filter { $0["type"] as? String == "error" }
        #expect(errors.count == 1)
        #expect(errors.first?["code"] as? String == "denied", "\(errors)")
        #expect(result.seconds < 300, "a denied request does not wait for its timeout")
    }
}

@Suite("gpsloc's live table, driven by hand")
struct TableSinkTests {
    /// #24: the table cleared the screen a second after the consent question appeared. Its
    /// redraw timer is driven by hand here: however many ticks and updates come before `show()`,
    /// not a byte reaches the screen; `show()` draws it.
    @Test("nothing is drawn before show(), whatever the timer and the updates do; show() draws")
    func tableWaitsForShow() {
        let screen = Locked("")
        let sink = TableSink(title: "gpsd at 127.0.0.1:2947", ticks: false) { text in
            screen.withLock { $0 += text }
        }
        sink.authorization(status: .notDetermined, accuracy: .fullAccuracy, reason: nil)
        sink.diagnostic(code: "noFix", message: "no fix yet")
        for _ in 0..<10 { sink.tick() }
        #expect(screen.withLock { $0 }.isEmpty)
        sink.show()
        #expect(screen.withLock { $0 }.contains("gpsloc watch — gpsd at 127.0.0.1:2947"))
        let drawn = screen.withLock { $0.count }
        sink.tick()
        #expect(screen.withLock { $0.count } > drawn, "each tick redraws once shown")
        sink.finish()
    }
}
