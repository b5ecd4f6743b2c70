import Foundation
import GNSSCore
import GPSDProcesses
import TestSupport
import Testing

@testable import GPSLocationBroker
@testable import LocationCore

extension RealGPSD.LaneA {
    /// #52: gpslocd speaks GeoClue 2. Each test runs the real programs people run — geoclue's
    /// where-am-i, gammastep, Firefox ESR, gdbus — against gpslocd `--geoclue` on a private
    /// system bus, reading a real gpsd (gpsfake).
    @Suite(
        "gpslocd --geoclue: GeoClue's clients get the receiver, with gpslocd's consent",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason),
        .enabled(if: GeoClueBox.available, GeoClueBox.missingReason))
    struct GeoClueTests {
        /// Runs where-am-i (`arguments` added) until it has printed `count` locations or ended.
        static func whereAmI(_ box: GeoClueBox, _ arguments: [String] = [], count: Int = 2) async throws -> (
            [WhereAmILocation], [String]
        ) {
            // SIGKILL ends it: the test process may pass on an ignored SIGTERM.
            let (program, output) = try box.launchWhereAmI(arguments)
            _ = await output.waitFor(timeout: 60) { lines in
                WhereAmILocation.parse(lines.map(\.text)).count >= count
            }
            program.kill(SIGKILL)
            let lines = await output.finish().map(\.text)
            return (WhereAmILocation.parse(lines), lines)
        }

        @Test("where-am-i with a full grant gets the receiver's precise locations, with the engine's accuracy")
        func fullGrant() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            try await box.grant("geoclue-where-am-i")
            let (locations, lines) = try await Self.whereAmI(box)
            #expect(locations.count >= 2, "\(lines)")
            for location in locations {
                // The drive in Bristol; a precise fix: gpsd's accuracy (68 %), never GeoClue's 0.
                #expect(abs(location.latitude - 51.45) < 0.02 && abs(location.longitude + 2.59) < 0.03)
                #expect(location.accuracy > 0 && location.accuracy < 50, "Accuracy \(location.accuracy)")
                #expect(location.speed != nil && location.heading != nil, "a moving fix has speed and heading")
                #expect(location.description == "GNSS receiver (gpslocd)")
            }
            #expect(box.audit.contains("geoclue start uid=0"), "\(box.audit)")
            #expect(box.audit.contains("app=geoclue-where-am-i level=8 accuracy=full"))
        }

        @Test("city level, or a reduced grant at any level, gets gpslocd's reduced point only — the same for every app")
        func reducedLevels() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            try await box.grant("geoclue-where-am-i")
            let (city, cityLines) = try await Self.whereAmI(box, ["-a", "4"], count: 1)
            try await box.grant("geoclue-where-am-i", reduced: true)
            let (exact, exactLines) = try await Self.whereAmI(box, ["-a", "8"], count: 1)
            #expect(!city.isEmpty, "\(cityLines)")
            #expect(!exact.isEmpty, "\(exactLines)")
            for location in city + exact {
                // The fudger's cell, and nothing that would place the receiver more closely.
                #expect(location.accuracy >= 1000, "Accuracy \(location.accuracy)")
                #expect(location.altitude == nil && location.speed == nil && location.heading == nil)
                #expect(location.description == "approximate location (gpslocd)")
            }
            // One box secret: the reduced point is the same whatever asked for it.
            if let first = city.first, let second = exact.first {
                #expect(first.latitude == second.latitude && first.longitude == second.longitude)
            }
            #expect(box.audit.contains("level=4 accuracy=reduced") && box.audit.contains("level=8 accuracy=reduced"))
        }

        @Test("no decision and no agent: Start is refused at once with the command that grants — nothing is sent")
        func noOneToAsk() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            let run = try await runProgram(
                GeoClueBox.whereAmI, ["-t", "30"], environment: box.environment, mergeErrors: true)
            #expect(run.stdout.contains("org.freedesktop.DBus.Error.AccessDenied"), "\(run.stdout)")
            #expect(run.stdout.contains("gpsloc auth grant geoclue-where-am-i"), "\(run.stdout)")
            #expect(!run.stdout.contains("Latitude"))
            #expect(run.seconds < 20, "refused at once, not after a D-Bus timeout: \(run.seconds) s")
        }

        @Test("with no decision the uid's GeoClue agent is asked: its level is applied, its refusal refuses")
        func geoClueAgent() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            let script = box.folder.appendingPathComponent("geoclue.py")
            try geoClueTestScript.write(to: script, atomically: true, encoding: .utf8)
            // An agent that allows city level only: the exact level asked for is reduced.
            let (agent, asked) = try box.launch("/usr/bin/python3", [script.path, "agent", "allow", "4"])
            defer { agent.kill(SIGKILL) }
            #expect(await asked.waitFor(timeout: 30) { $0.contains { $0.text == "READY" } }, "\(asked.snapshot)")
            let (locations, lines) = try await Self.whereAmI(box, count: 1)
            #expect(asked.snapshot.contains { $0.text == "ASKED geoclue-where-am-i 8" }, "\(asked.snapshot)")
            #expect(locations.first.map { $0.accuracy >= 1000 && $0.speed == nil } == true, "\(lines)")
            agent.kill(SIGKILL)
            _ = await agent.exited()
            // An agent that refuses.
            let (refuser, refuserOutput) = try box.launch("/usr/bin/python3", [script.path, "agent", "deny", "0"])
            defer { refuser.kill(SIGKILL) }
            #expect(await refuserOutput.waitFor(timeout: 30) { $0.contains { $0.text == "READY" } })
            let run = try await runProgram(
                GeoClueBox.whereAmI, ["-t", "30"], environment: box.environment, mergeErrors: true)
            #expect(run.stdout.contains("AccessDenied") && !run.stdout.contains("Latitude"), "\(run.stdout)")
            // The agent's answers were for those clients only: nothing was decided for the app.
            let status = try await box.gpsloc(["auth", "status", "geoclue-where-am-i"])
            #expect(
                status.stdout.contains("no app has a decision") || status.stdout.contains("notDetermined"),
                "\(status.stdout)")
        }

        @Test("with no GeoClue agent, the uid's gpsloc agent is asked, and its decision is kept")
        func gpslocAgent() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            let prompts = Locked<[String]>([])
            let holder = Locked<BrokerLink?>(nil)
            let agent = BrokerLink(
                path: box.socket, app: "agent",
                onMessage: { message in
                    guard message.messageClass == "PROMPT", let id = message.int("prompt") else { return }
                    prompts.withLock { $0.append(message.string("app") ?? "") }
                    var line = BrokerLine("ANSWER")
                    line.add("prompt", id)
                    line.add("status", "whenInUse")
                    line.add("accuracy", "full")
                    _ = holder.withLock { $0 }?.send(line.line)
                }, onState: { _ in })
            holder.withLock { $0 = agent }
            defer { agent.close() }
            _ = try agent.startAndWait()
            #expect(try agent.request({ _ in }, className: "AGENT", timeout: 10).bool("ok") == true)
            let (locations, lines) = try await Self.whereAmI(box, count: 1)
            #expect(prompts.withLock { $0 } == ["geoclue-where-am-i"])
            #expect(locations.first.map { $0.accuracy < 50 } == true, "\(lines)")
            let status = try await box.gpsloc(["auth", "status", "geoclue-where-am-i"])
            #expect(status.stdout.contains("authorizedWhenInUse"), "\(status.stdout)")
        }

        @Test("a revocation stops a running client within a second: Active goes false and where-am-i quits")
        func revocation() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            try await box.grant("geoclue-where-am-i")
            let (program, output) = try box.launchWhereAmI()
            #expect(await output.waitFor(timeout: 60) { WhereAmILocation.parse($0.map(\.text)).count >= 1 })
            // `gpsloc auth who` lists it beside the socket's programs.
            let who = try await box.gpsloc(["auth", "who"])
            #expect(
                who.stdout.contains(
                    "geoclue-where-am-i [label, via GeoClue] uid 0 pid \(program.processIdentifier): receiving (full)"),
                "\(who.stdout)")
            let revoked = Date()
            let result = try await box.gpsloc(["auth", "revoke", "geoclue-where-am-i"])
            #expect(result.status == 0)
            #expect(await program.exited(hangLimit: 30), "where-am-i kept running after the revocation")
            let lines = await output.finish()
            let quit = try #require(lines.first { $0.text.contains("Geolocation disabled") }, "\(lines.map(\.text))")
            print("where-am-i quit \(quit.time.timeIntervalSince(revoked)) s after the revocation began")
            #expect(quit.time.timeIntervalSince(revoked) < 1)
            // No location after the revocation's answer.
            let after = lines.filter { $0.time > quit.time }.map(\.text)
            #expect(!after.contains { $0.contains("Latitude") })
        }

        @Test("a client belongs to its connection: other connections' calls fail; a vanished connection's clients go")
        func ownership() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            try await box.grant("geoclue-where-am-i")
            let (program, output) = try box.launchWhereAmI()
            #expect(await output.waitFor(timeout: 60) { WhereAmILocation.parse($0.map(\.text)).count >= 1 })
            let client = try #require(
                output.snapshot.compactMap { line in
                    line.text.hasPrefix("Client object: ") ? String(line.text.dropFirst("Client object: ".count)) : nil
                }.first)
            let location = "\(client)/Location/1"
            // gdbus: another connection of the same uid.
            func gdbus(_ path: String, _ method: String, _ arguments: [String] = []) async throws -> ProgramResult {
                try await runProgram(
                    "/usr/bin/gdbus",
                    ["call", "--system", "-d", "org.freedesktop.GeoClue2", "-o", path, "-m", method] + arguments,
                    environment: box.environment)
            }
            let attempts = [
                try await gdbus(client, "org.freedesktop.GeoClue2.Client.Stop"),
                try await gdbus(
                    client, "org.freedesktop.DBus.Properties.Get", ["org.freedesktop.GeoClue2.Client", "Location"]),
                try await gdbus(
                    client, "org.freedesktop.DBus.Properties.Set",
                    ["org.freedesktop.GeoClue2.Client", "DesktopId", "<'firefox'>"]),
                try await gdbus(
                    location, "org.freedesktop.DBus.Properties.GetAll", ["org.freedesktop.GeoClue2.Location"]),
            ]
            for attempt in attempts {
                #expect(attempt.status != 0 && attempt.stderr.contains("UnknownObject"), "\(attempt.stderr)")
            }
            #expect(program.isRunning, "another connection's Stop stopped it")
            #expect(box.audit.components(separatedBy: "geoclue stop").count == 1)
            // where-am-i goes: its client is dropped, and nothing is in use any more.
            program.kill(SIGKILL)
            _ = await program.exited()
            var inUse = "true"
            for _ in 0..<100 where inUse.contains("true") {
                inUse =
                    try await gdbus(
                        "/org/freedesktop/GeoClue2/Manager", "org.freedesktop.DBus.Properties.Get",
                        ["org.freedesktop.GeoClue2.Manager", "InUse"]
                    ).stdout
            }
            #expect(inUse.contains("false"), "InUse stayed \(inUse)")
        }
    }
}

extension RealGPSD.LaneB {
    /// #52, continued: the programs people run besides where-am-i (gammastep, Firefox ESR), the
    /// thresholds, and what one connection may hold — in another lane, for the suite's time.
    @Suite(
        "gpslocd --geoclue: gammastep, Firefox, thresholds and limits",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason),
        .enabled(if: GeoClueBox.available, GeoClueBox.missingReason))
    struct GeoClueProgramsTests {
        @Test(
            "another uid's client: refused under root's grant for uid 0, served after a grant for its own uid",
            .enabled(
                if: OtherUserPrograms.canRunAsOtherUser,
                Comment(rawValue: OtherUserPrograms.cannotRunAsOtherUserReason)))
        func otherUID() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            try await box.grant("geoclue-where-am-i")
            // nobody (65534): dbus-daemon closes the connection of a uid with no passwd entry.
            let asOther = [
                "--reuid=65534", "--regid=65534", "--clear-groups", "--no-new-privs", "/usr/bin/stdbuf", "-oL",
                GeoClueBox.whereAmI, "-t", "60",
            ]
            let refused = try await runProgram(
                "/usr/bin/setpriv", asOther, environment: box.environment, mergeErrors: true)
            #expect(
                refused.stdout.contains("AccessDenied") && refused.stdout.contains("uid 65534"), "\(refused.stdout)")
            #expect(!refused.stdout.contains("Latitude"))
            // Root decides for uid 65534 (as the administrator), and its client is served.
            let granted = try await box.gpsloc(["auth", "grant", "geoclue-where-am-i", "--always", "--uid", "65534"])
            #expect(granted.status == 0, "\(granted.stderr)")
            let (program, output) = try box.launch("/usr/bin/setpriv", asOther)
            let served = await output.waitFor(timeout: 60) { WhereAmILocation.parse($0.map(\.text)).count >= 1 }
            program.kill(SIGKILL)
            #expect(served, "\(output.snapshot.map(\.text))")
            #expect(box.audit.contains("geoclue start uid=65534"), "\(box.audit)")
        }

        @Test("a second service on the name: gpslocd --geoclue exits saying who owns it and what to do")
        func nameTaken() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            var environment = box.environment
            environment["GPSLOCATION_BROKER"] = nil
            let run = try await runProgram(
                GeoClueBox.gpslocd,
                [
                    "--gpsd", "127.0.0.1:9", "--socket", box.folder.appendingPathComponent("socket2").path, "--state",
                    box.folder.appendingPathComponent("state2").path, "--geoclue",
                ], environment: environment)
            #expect(run.status == 1)
            #expect(
                run.stderr.contains("cannot own org.freedesktop.GeoClue2")
                    && run.stderr.contains("pid \(box.daemon.processIdentifier), gpslocd")
                    && run.stderr.contains("systemctl mask --now geoclue.service"), "\(run.stderr)")
        }

        @Test("one connection holds at most 16 clients; the 17th is refused with why")
        func clientLimit() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            let script = box.folder.appendingPathComponent("geoclue.py")
            try geoClueTestScript.write(to: script, atomically: true, encoding: .utf8)
            let run = try await runProgram(
                "/usr/bin/python3", [script.path, "clients", "20"], environment: box.environment, mergeErrors: true)
            let lines = run.stdout.split(separator: "\n")
            #expect(lines.filter { $0.hasPrefix("CLIENT ") }.count == 16, "\(run.stdout)")
            #expect(lines.filter { $0.hasPrefix("REFUSED ") && $0.contains("16 clients") }.count == 4, "\(run.stdout)")
        }

        @Test("DistanceThreshold is the engine's distance filter; a location stays on the bus until the next has come")
        func distanceThresholdAndObjects() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            try await box.grant("distance-test")
            let script = box.folder.appendingPathComponent("geoclue.py")
            try geoClueTestScript.write(to: script, atomically: true, encoding: .utf8)
            let run = try await runProgram(
                "/usr/bin/python3", [script.path, "watch", "distance-test", "100", "4"], environment: box.environment,
                mergeErrors: true)
            #expect(run.status == 0, "\(run.stdout)")
            let lines = run.stdout.split(separator: "\n").map(String.init)
            let points = lines.filter { $0.hasPrefix("LOCATION ") }.map {
                $0.split(separator: " ").dropFirst().compactMap { Double($0) }
            }
            #expect(points.count == 4, "\(run.stdout)")
            // Each at least 100 m from the one before (the filter's rule: or more accurate by half).
            for (a, b) in zip(points, points.dropFirst()) where a.count == 3 && b.count == 3 {
                let metres = Geodesic.wgs84.distance(
                    latitude1: a[0], longitude1: a[1], latitude2: b[0], longitude2: b[1])
                #expect(metres >= 100 || b[2] <= a[2] / 2, "\(metres) m between \(a) and \(b)")
            }
            // The previous location is still readable when the next is announced; the one before
            // it is gone.
            #expect(lines.filter { $0.hasPrefix("OLD ") }.count == 3, "\(run.stdout)")
            #expect(lines.filter { $0.hasPrefix("GONE ") }.count == 2, "\(run.stdout)")
            #expect(!lines.contains { $0.hasPrefix("KEPT ") }, "\(run.stdout)")
            // Once gpsd has a fix (the run above started gpslocd's connection), a client's first
            // location comes at once: the engine learns the cycle from gpsd's last epochs.
            let again = try await runProgram(
                "/usr/bin/python3", [script.path, "watch", "distance-test", "0", "1"], environment: box.environment,
                mergeErrors: true)
            let first = again.stdout.split(separator: "\n").first { $0.hasPrefix("FIRST ") }
                .flatMap { Double($0.dropFirst("FIRST ".count)) }
            print("first location \(first ?? -1) s after Start")
            #expect(first.map { $0 < 0.5 } == true, "\(again.stdout)")
        }

        @Test("TimeThreshold is the engine's minimum interval: where-am-i -i 3 gets locations 3 s apart or more")
        func timeThreshold() async throws {
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            try await box.grant("geoclue-where-am-i")
            let (locations, lines) = try await RealGPSD.LaneA.GeoClueTests.whereAmI(box, ["-i", "3"], count: 3)
            #expect(locations.count >= 3, "\(lines)")
            for (earlier, later) in zip(locations, locations.dropFirst()) {
                #expect(later.timestamp - earlier.timestamp >= 3, "\(earlier.timestamp) → \(later.timestamp)")
            }
        }

        @Test("gammastep (which asks for city level) gets the approximate location and prints it")
        func gammastep() async throws {
            let gammastep = "/usr/bin/gammastep"
            try #require(
                FileManager.default.isExecutableFile(atPath: gammastep) || Conditions.underCI,
                "gammastep is not installed (scripts/setup.sh installs it)")
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            try await box.grant("gammastep")
            let run = try await runProgram(
                gammastep, ["-l", "geoclue2", "-p"], environment: box.environment, mergeErrors: true)
            #expect(run.status == 0, "\(run.stdout)")
            #expect(run.stdout.contains("Location: 51.4"), "\(run.stdout)")
            #expect(box.audit.contains("app=gammastep level=4 accuracy=reduced"), "\(box.audit)")
        }

        @Test("Firefox ESR's navigator.geolocation gets the receiver through gpslocd (headless)")
        func firefox() async throws {
            let firefox = "/usr/bin/firefox-esr"
            try #require(
                FileManager.default.isExecutableFile(atPath: firefox) || Conditions.underCI,
                "Firefox ESR is not installed (scripts/setup.sh installs it)")
            let box = try await GeoClueBox.start()
            defer { box.stop() }
            try await box.grant("firefox")
            let profile = box.folder.appendingPathComponent("profile")
            try FileManager.default.createDirectory(at: profile, withIntermediateDirectories: true)
            // GeoClue as Firefox's provider (its Linux default), the permission prompt answered
            // yes (the test's stand-in for the person), and window.dump() to stdout.
            try """
            user_pref("geo.provider.use_geoclue", true);
            user_pref("geo.prompt.testing", true);
            user_pref("geo.prompt.testing.allow", true);
            user_pref("browser.dom.window.dump.enabled", true);
            user_pref("browser.shell.checkDefaultBrowser", false);
            user_pref("datareporting.policy.dataSubmissionEnabled", false);
            user_pref("toolkit.telemetry.reportingpolicy.firstRun", false);
            """.write(to: profile.appendingPathComponent("user.js"), atomically: true, encoding: .utf8)
            let page = box.folder.appendingPathComponent("where.html")
            try """
            <!doctype html><title>where</title><script>
            navigator.geolocation.watchPosition(
              p => dump("POSITION " + p.coords.latitude + " " + p.coords.longitude + " " + p.coords.accuracy + "\\n"),
              e => dump("ERROR " + e.code + " " + e.message + "\\n"), {enableHighAccuracy: true});
            </script>
            """.write(to: page, atomically: true, encoding: .utf8)
            let (browser, output) = try box.launch(
                firefox, ["--headless", "--no-remote", "--profile", profile.path, page.absoluteString])
            // A fix before the receiver's first estimate (gpsd's first cycle, before its DOPs)
            // goes with an unbounded Accuracy (the library's CLLocationDistanceMax), which Firefox
            // hands on as it is; the next fix has one. So: positions until one with an accuracy.
            let numbers: @Sendable (String) -> [Double] = { line in
                line.split(separator: " ").dropFirst().compactMap { Double($0) }
            }
            let seen = await output.waitFor(timeout: 120) { lines in
                lines.contains {
                    $0.text.hasPrefix("ERROR ")
                        || ($0.text.hasPrefix("POSITION ") && (numbers($0.text).last ?? .infinity) < 50)
                }
            }
            browser.kill(SIGKILL)
            _ = await browser.exited(hangLimit: 30)
            let lines = output.snapshot.map(\.text)
            #expect(seen, "\(lines.suffix(20)) — gpslocd's log: \(box.log.snapshot.suffix(15).map(\.text))")
            let positions = lines.filter { $0.hasPrefix("POSITION ") }
            let position = try #require(
                positions.first { (numbers($0).last ?? .infinity) < 50 }, "\(lines.suffix(20))")
            let found = numbers(position)
            #expect(
                found.count == 3 && abs(found[0] - 51.45) < 0.02 && found[2] > 0,
                "\(position) — gpslocd's log: \(box.log.snapshot.suffix(15).map(\.text))")
            // Before it, only the unbounded accuracy of a fix without an estimate: never 0, never
            // a made-up figure.
            for earlier in positions.prefix(while: { $0 != position }) {
                #expect(numbers(earlier).last == .greatestFiniteMagnitude, "\(earlier)")
            }
            #expect(box.audit.contains("app=firefox level=8 accuracy=full"), "\(box.audit)")
        }
    }
}

@Suite("gpslocd --geoclue: the files it ships")
struct GeoClueFilesTests {
    /// dbus-daemon refuses a whole policy file that is not well-formed XML (a "--" in a comment
    /// was once enough), and the daemon would then not own the name.
    @Test("the D-Bus policy is well-formed and names only GeoClue's name and the agents' interface")
    func policy() async throws {
        let path = Paths.packageRoot.appendingPathComponent("dbus/gpslocd-geoclue.conf").path
        let run = try await runProgram("/usr/bin/xmllint", ["--noout", path])
        #expect(run.status == 0, "\(run.stderr)")
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(#"<allow own="org.freedesktop.GeoClue2"/>"#))
        #expect(text.contains(#"<allow send_destination="org.freedesktop.GeoClue2"/>"#))
        #expect(!text.contains("org.freedesktop.DBus.Properties"), "no rule on others' properties (lintian: too broad)")
    }
}

/// What a Location object's properties say for a location without an estimate (no bus needed).
@Suite("gpslocd --geoclue: a Location's unknown values")
struct GeoClueValuesTests {
    @Test("no estimate: Accuracy is unbounded, not GeoClue's −1 (which Firefox turns into 0 m)")
    func unboundedAccuracy() {
        let location = LocationValue(
            coordinate: CLLocationCoordinate2D(latitude: 51.45, longitude: -2.59), altitude: 0,
            horizontalAccuracy: CLLocationDistanceMax, verticalAccuracy: -1, course: -1, courseAccuracy: -1,
            speed: -1, speedAccuracy: -1, timestamp: Date(timeIntervalSince1970: 1_800_000_000))
        func double(_ property: String) -> Double? {
            if case .double(let value) = GeoClueEndpoint.value(of: location, property) { value } else { nil }
        }
        #expect(double("Accuracy") == .greatestFiniteMagnitude)
        #expect(double("Altitude") == -.greatestFiniteMagnitude)
        #expect(double("Speed") == -1 && double("Heading") == -1)
    }
}
