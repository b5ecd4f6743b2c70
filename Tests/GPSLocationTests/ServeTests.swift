import Foundation
import GNSSCore
import GPSDProcesses
import TestSupport
import Testing

@testable import GPSLocCLI
@testable import LocationCore

/// #53: `gpsloc serve`, the web companion. The real `gpsloc` binary serves a recording (through
/// GPSLocation's parser here; through a real gpsd and in a real browser in the lane below), and
/// every request is written byte for byte, as a browser or an attacker would send it.
@Suite("gpsloc serve: the page and API for the box", .timeLimit(.minutes(5)))
struct ServeTests {
    static let drive = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
    static let loop = Paths.fixtures.appendingPathComponent("loop-1hz-gp.nmea").path

    /// The page's token (its meta tag).
    static func token(_ box: ServeBox) async throws -> String {
        let page = try await box.request("GET", "/")
        let marker = #"<meta name="gpsloc-token" content=""#
        guard let start = page.body.range(of: marker) else { throw ServeBoxError("no token in the page: \(page.body)") }
        return String(page.body[start.upperBound...].prefix { $0 != "\"" })
    }

    /// Waits for the first `locations` event of a stream.
    static func firstLocations(_ box: ServeBox) async throws -> [[String: Any]] {
        let stream = try box.stream()
        defer { stream.close() }
        _ = await stream.waitFor { events in events.contains { $0.name == "locations" } }
        return stream.events.first { $0.name == "locations" }?.locations ?? []
    }

    @Test(
        "a replay is served: the latest location as watch --json prints it, the page, the track, labelled as a replay")
    func servesAReplay() async throws {
        let box = try await ServeBox.start(["--replay", Self.drive, "--speed", "20", "--batch", "0"])
        defer { box.stop() }
        #expect(try await Self.firstLocations(box).count >= 1)
        // The replay's sky through GPSLocation's NMEA parser (the default): the satellites gpsd
        // would report.
        let stream = try box.stream()
        let sky = await stream.waitFor { events in
            events.contains {
                $0.name == "sky" && $0.data.contains("\"elevation\"") && $0.data.contains("\"used\":true")
            }
        }
        stream.close()
        #expect(sky, "\(stream.events.map(\.name))")
        let location = try await box.request("GET", "/api/location")
        #expect(location.status == 200, "\(location)")
        #expect(location.headers["x-gpsloc-replay"] == Self.drive)
        let object = try #require(location.json)
        // The same object `gpsloc replay --json` prints for a location: the same keys.
        let replayed = try await GPSLocBinary.run(["replay", Self.drive, "--json", "--count", "1"])
        let watchLine = try #require(
            GPSLocBinary.jsonLines(replayed.stdout).first { $0["type"] as? String == "location" })
        #expect(Set(object.keys) == Set(watchLine.keys))
        #expect(object["type"] as? String == "location")
        let status = try #require(try await box.request("GET", "/api/status").json)
        #expect(status["source"] as? String == "replay")
        #expect(status["recording"] as? String == Self.drive)

        let page = try await box.request("GET", "/")
        #expect(page.status == 200)
        #expect(page.headers["content-security-policy"]?.contains("script-src 'self'") == true)
        #expect(page.headers["x-frame-options"] == "DENY")
        for marker in [
            #"id="position""#, #"<svg id="sky""#, #"id="tracking""#, "Replay of", #"id="locations""#,
        ] {
            #expect(page.body.contains(marker), "\(marker)")
        }
        let track = try await box.request("GET", "/track.gpx")
        #expect(track.status == 200)
        #expect(track.body.contains("<trkpt lat="))
        #expect(track.body.hasSuffix("</gpx>") || track.body.contains("</gpx>"))

        #expect(try await box.request("GET", "/nope").status == 404)
        #expect(try await box.request("GET", "/api/start").status == 405)
        #expect(try await box.request("GET", "/leaflet/../../../etc/passwd").status == 404)
        if FileManager.default.fileExists(atPath: "/usr/share/javascript/leaflet/leaflet.js") {
            #expect(try await box.request("GET", "/leaflet/leaflet.js").status == 200)
        }
    }

    @Test("requests for another host, without the token, or from another origin are refused, and get no location")
    func refusals() async throws {
        // Slow enough to be still playing at the end on a busy machine (300 s).
        let box = try await ServeBox.start(["--replay", Self.loop, "--speed", "2", "--batch", "0"])
        defer { box.stop() }
        _ = try await Self.firstLocations(box)
        // DNS rebinding: a page of evil.example whose name now points here sends its own name.
        for host in ["evil.example", "evil.example:\(box.port)", "127.0.0.1:1", "localhost.evil.example:\(box.port)"] {
            let refused = try await box.request("GET", "/api/location", host: host)
            #expect(refused.status == 403, "\(host): \(refused)")
            #expect(!refused.body.contains("latitude"))
            #expect(refused.json?["code"] as? String == "forbiddenHost")
            let events = try await box.request("GET", "/api/events", host: host)
            #expect(events.status == 403 && !events.body.contains("event: locations"))
        }
        #expect(try await box.request("GET", "/api/location", host: "localhost:\(box.port)").status == 200)

        let token = try await Self.token(box)
        let origin = "http://127.0.0.1:\(box.port)"
        let refusedPosts: [[String: String]] = [
            [:], ["X-GPSLoc-Token": "0123456789abcdef0123456789abcdef"],
            ["X-GPSLoc-Token": token, "Origin": "http://evil.example"],
            ["X-GPSLoc-Token": token, "Origin": origin, "Sec-Fetch-Site": "cross-site"],
        ]
        for headers in refusedPosts {
            let refused = try await box.request("POST", "/api/stop", headers: headers)
            #expect(refused.status == 403, "\(headers): \(refused)")
        }
        #expect(try await box.request("GET", "/api/status").json?["tracking"] as? Bool == true)
        let stopped = try await box.request(
            "POST", "/api/stop", headers: ["X-GPSLoc-Token": token, "Origin": origin, "Sec-Fetch-Site": "same-origin"])
        #expect(stopped.status == 200, "\(stopped)")
        #expect(stopped.json?["tracking"] as? Bool == false)
        #expect(try await box.request("GET", "/api/status").json?["tracking"] as? Bool == false)
    }

    @Test("beyond loopback every request needs the token: from the printed URL, then a cookie, or a header")
    func beyondLoopback() async throws {
        let box = try await ServeBox.start([
            "--replay", Self.drive, "--speed", "20", "--listen", "0.0.0.0:0", "--allow-host", "boat.local",
        ])
        defer { box.stop() }
        let printed = box.log.snapshot.map(\.text).first { $0.hasPrefix("gpsloc serve: http://") } ?? ""
        let token = try #require(printed.split(separator: "?token=").last.map { String($0.prefix { $0 != " " }) })
        #expect(token.count == 32, "\(printed)")
        let bare = try await box.request("GET", "/api/status")
        #expect(bare.status == 401, "\(bare)")
        #expect(try await box.request("GET", "/api/location").status == 401)
        let page = try await box.request("GET", "/?token=\(token)")
        #expect(page.status == 200)
        #expect(page.headers["set-cookie"]?.contains("gpsloc_token=\(token)") == true)
        #expect(page.headers["set-cookie"]?.contains("SameSite=Strict") == true)
        #expect(try await box.request("GET", "/api/status", headers: ["Cookie": "gpsloc_token=\(token)"]).status == 200)
        #expect(
            try await box.request("GET", "/api/status", headers: ["Authorization": "Bearer \(token)"]).status == 200)
        #expect(try await box.request("GET", "/api/status?token=wrong\(token.dropFirst(5))").status == 401)
        // A name the operator allowed; an address of the box; not another name.
        let named = try await box.request("GET", "/api/status?token=\(token)", host: "boat.local:\(box.port)")
        #expect(named.status == 200)
        #expect(try await box.request("GET", "/api/status?token=\(token)", host: "10.1.2.3:\(box.port)").status == 200)
        #expect(
            try await box.request("GET", "/api/status?token=\(token)", host: "ship.local:\(box.port)").status == 403)
    }

    @Test(
        "batches: one event per batch, ids in order; a client that returns with Last-Event-ID gets every location after it, none twice"
    )
    func batchesAndResume() async throws {
        let box = try await ServeBox.start(["--replay", Self.loop, "--speed", "10", "--batch", "1"])
        defer { box.stop() }
        let first = try box.stream()
        let enough = await first.waitFor { events in events.filter { $0.name == "locations" }.count >= 4 }
        first.close()
        #expect(enough)
        let batches = first.events.filter { $0.name == "locations" }
        // Ten locations a second, published once a second: batches, not one event per location.
        #expect(batches.dropFirst().contains { $0.locations.count > 1 }, "\(batches.map { $0.locations.count })")
        let ids = batches.compactMap(\.id)
        #expect(ids.count == batches.count && ids == ids.sorted() && Set(ids).count == ids.count, "\(ids)")
        for (earlier, later) in zip(batches.dropLast(), batches.dropFirst()) {
            // The id is the batch's last location's: contiguous, nothing skipped.
            #expect((later.id ?? 0) - (earlier.id ?? 0) == later.locations.count)
        }
        // A phone that slept after the second batch.
        let resumeAfter = try #require(batches[1].id)
        let expected = batches.dropFirst(2).flatMap(\.locations).compactMap { $0["timestamp"] as? String }
        let resumed = try box.stream(headers: ["Last-Event-ID": String(resumeAfter)])
        _ = await resumed.waitFor { events in
            events.filter { $0.name == "locations" }.flatMap(\.locations).count >= expected.count
        }
        resumed.close()
        let times = resumed.events.filter { $0.name == "locations" }.flatMap(\.locations).compactMap {
            $0["timestamp"] as? String
        }
        #expect(Array(times.prefix(expected.count)) == expected)
        #expect(Set(times).count == times.count, "a location came twice")
        #expect(times == times.sorted())
    }

    @Test(
        "clients that never read hold only their own connection: another page is served on time, memory stays bounded")
    func clientsThatNeverRead() async throws {
        let box = try await ServeBox.start(["--replay", Self.loop, "--speed", "20", "--batch", "0"])
        defer { box.stop() }
        _ = try await Self.firstLocations(box)
        // Eight clients ask for everything from the start and never read a byte.
        var sleepers: [Int32] = []
        defer { for socket in sleepers { close(socket) } }
        for _ in 0..<8 {
            let socket = try ServeBox.connect(port: box.port)
            var size: Int32 = 4096
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            let request = Array(
                "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:\(box.port)\r\nLast-Event-ID: 0\r\n\r\n".utf8)
            _ = write(socket, request, request.count)
            sleepers.append(socket)
        }
        // Another page, from the start too: it must get its hundred while the eight sit.
        let reader = try box.stream(headers: ["Last-Event-ID": "0"])
        let served = await reader.waitFor { events in
            events.filter { $0.name == "locations" }.flatMap(\.locations).count >= 100
        }
        reader.close()
        #expect(served, "\(reader.events.count) events")
        let status = try String(contentsOfFile: "/proc/\(box.program.processIdentifier)/status", encoding: .utf8)
        let resident =
            status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") }
            .flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        #expect(resident > 0 && resident < 80_000, "gpsloc serve holds \(resident) kB")
    }

    @Test("a reduced grant serves reduced positions only, everywhere")
    func reducedReplay() async throws {
        let box = try await ServeBox.start([
            "--replay", Self.drive, "--speed", "20", "--batch", "0", "--accuracy", "reduced",
        ])
        defer { box.stop() }
        let locations = try await Self.firstLocations(box)
        #expect(!locations.isEmpty)
        for location in locations {
            #expect(location["reduced"] as? Bool == true)
            #expect((location["horizontalAccuracy"] as? Double ?? 0) >= 1000)
            #expect(location["speed"] is NSNull && location["altitude"] is NSNull)
        }
        let latest = try #require(try await box.request("GET", "/api/location").json)
        #expect(latest["reduced"] as? Bool == true)
        let track = try await box.request("GET", "/track.gpx")
        let precise = try await GPSLocBinary.run(["replay", Self.drive, "--json"])
        // No precise coordinate of the drive appears in the track.
        for line in GPSLocBinary.jsonLines(precise.stdout).prefix(50) {
            if let latitude = line["latitude"] as? Double {
                #expect(!track.body.contains(String(format: "%.9f", latitude)))
            }
        }
        #expect(try await box.request("GET", "/api/status").json?["accuracy"] as? String == "reduced")
    }

    @Test("without a grant nothing is served, and /api/location says what to run")
    func notAuthorized() async throws {
        let port = try FreePort.find()
        let box = try await ServeBox.start(["127.0.0.1:\(port)", "--batch", "0"])
        defer { box.stop() }
        let stream = try box.stream()
        _ = await stream.waitFor { events in events.contains { $0.name == "tracking" } }
        stream.close()
        #expect(!stream.events.contains { $0.name == "locations" })
        let reply = try await box.request("GET", "/api/location")
        #expect(reply.status == 503, "\(reply)")
        #expect(reply.body.contains("gpsloc auth grant"), "\(reply.body)")
        #expect(!reply.body.contains("latitude"))
    }

    @Test("gpsd not running: /api/location says so, and what to do")
    func gpsdDown() async throws {
        let config = try GPSLocBinary.makeConfigHome()
        #expect(try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config).status == 0)
        let port = try FreePort.find()
        let box = try await ServeBox.start(["127.0.0.1:\(port)", "--batch", "0"], configHome: config)
        defer { box.stop() }
        let stream = try box.stream()
        _ = await stream.waitFor { events in events.contains { $0.name == "status" && $0.data.contains("gpsd") } }
        stream.close()
        let reply = try await box.request("GET", "/api/location")
        #expect(reply.status == 503)
        #expect(reply.body.contains("gpsd") && reply.body.contains("\(port)"), "\(reply.body)")
    }

    @Test("usage mistakes are refused with what to write instead")
    func usage() async throws {
        for (arguments, words) in [
            (["--listen", "nowhere"], "--listen must be ADDR:PORT"),
            (["--token", "short"], "--token must be at least 16"),
            (["--tiles", "ftp://x"], "--tiles must be an http(s) URL"),
            (["--speed", "2"], "--speed applies to --replay only"),
            (["--replay", Self.drive, "127.0.0.1:2947"], "not both"),
        ] {
            let result = try await GPSLocBinary.run(["serve"] + arguments)
            #expect(result.status == 2, "\(arguments)")
            #expect(result.stderr.contains(words), "\(arguments): \(result.stderr)")
        }
        // A port another program listens on.
        let box = try await ServeBox.start(["--replay", Self.drive, "--speed", "20"])
        defer { box.stop() }
        let taken = try await GPSLocBinary.run(["serve", "--replay", Self.drive, "--listen", "127.0.0.1:\(box.port)"])
        #expect(taken.status == 1)
        #expect(
            taken.stderr.contains("cannot listen on 127.0.0.1:\(box.port)") && taken.stderr.contains("--listen"),
            "\(taken.stderr)")
    }
}

extension RealGPSD.LaneD {
    /// #53 with a real gpsd: a live serve through the decision store, and the page in Debian's
    /// Chromium (headless, chromium-driver) — what a phone's browser does.
    @Suite(
        "gpsloc serve with a real gpsd and a real browser",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason))
    struct ServeLiveTests {
        @Test("live: a revocation stops the service at once and forgets what it held")
        func revocation() async throws {
            let gpsd = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("loop-1hz-gp.nmea"), cycle: 0.02)
            defer { gpsd.stop() }
            let config = try GPSLocBinary.makeConfigHome()
            #expect(
                try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config).status == 0)
            let box = try await ServeBox.start(["127.0.0.1:\(gpsd.endpoint.port)", "--batch", "0"], configHome: config)
            defer { box.stop() }
            let stream = try box.stream()
            defer { stream.close() }
            #expect(await stream.waitFor { events in events.contains { $0.name == "locations" } })
            #expect(try await box.request("GET", "/api/location").status == 200)
            #expect(try await GPSLocBinary.run(["auth", "revoke", "gpsloc"], configHome: config).status == 0)
            let told = await stream.waitFor { events in
                events.contains { $0.name == "authorization" && !$0.data.contains("authorizedAlways") }
            }
            #expect(told, "\(stream.events.map(\.name))")
            let events = stream.events
            let revokedAt = try #require(events.lastIndex { $0.name == "authorization" })
            #expect(!events[revokedAt...].contains { $0.name == "locations" })
            let after = try await box.request("GET", "/api/location")
            #expect(after.status == 503 && !after.body.contains("latitude"), "\(after)")
            #expect(!(try await box.request("GET", "/track.gpx")).body.contains("<trkpt"))
            #expect(try await box.request("GET", "/api/status").json?["held"] as? Int == 0)
        }

        @Test("a When-In-Use grant: in use while a page reads the stream — nothing before, locations while, none after")
        func inUseWhileAPageIsOpen() async throws {
            let gpsd = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("loop-1hz-gp.nmea"), cycle: 0.02)
            defer { gpsd.stop() }
            let config = try GPSLocBinary.makeConfigHome()
            #expect(
                try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--when-in-use"], configHome: config).status == 0
            )
            let box = try await ServeBox.start(["127.0.0.1:\(gpsd.endpoint.port)", "--batch", "0"], configHome: config)
            defer { box.stop() }
            // No page yet: not in use, so nothing is delivered, and the API says why.
            #expect(await box.log.waitFor(timeout: 60) { lines in lines.contains { $0.text.contains("in use") } })
            let before = try await box.request("GET", "/api/location")
            #expect(before.status == 503 && !before.body.contains("latitude"), "\(before)")
            // A page reads the stream: in use, locations come.
            let page = try box.stream()
            #expect(
                await page.waitFor { events in events.contains { $0.name == "locations" } },
                "\(page.events.map(\.name))")
            #expect(try await box.request("GET", "/api/location").status == 200)
            // The page goes: not in use, tracking ends by itself, saying why.
            page.close()
            let stopped = await box.log.waitFor(timeout: 60) { lines in
                lines.filter { $0.text.contains("in use") }.count >= 2
            }
            #expect(stopped, "\(box.log.snapshot.suffix(5).map(\.text))")
        }

        @Test(
            "the page in Chromium: the replayed position, the sky plot fills, the control stops and restarts the stream"
        )
        func browser() async throws {
            try #require(ServeBox.browserAvailable, ServeBox.browserMissingReason)
            let box = try await ServeBox.start([
                "--replay", ServeTests.drive, "--via", "gpsd", "--speed", "2", "--batch", "1",
            ])
            defer { box.stop() }
            let folder = try GPSLocBinary.makeConfigHome()
            let picture = folder.appendingPathComponent("serve.png")
            let result = try await runProgram(
                "/usr/bin/python3",
                [
                    Paths.packageRoot.appendingPathComponent("scripts/serve-browser.py").path, box.url,
                    "--expect-replay", "--screenshot", picture.path, "--timeout", "90",
                ], environment: ["HOME": folder.path, "PATH": "/usr/bin:/bin"], mergeErrors: true)
            #expect(result.status == 0, "\(result.stdout)")
            for check in ["POSITION", "SOURCE Replay", "SKY", "STOPPED", "STARTED", "OK"] {
                #expect(result.stdout.contains(check), "\(check): \(result.stdout)")
            }
            let png = try Data(contentsOf: picture)
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 10_000)
        }

        @Test("the page in Firefox ESR: the replayed position, the NMEA parser's sky, stop and start")
        func firefox() async throws {
            try #require(ServeBox.firefoxAvailable, ServeBox.firefoxMissingReason)
            let box = try await ServeBox.start(["--replay", ServeTests.drive, "--speed", "2", "--batch", "1"])
            defer { box.stop() }
            let folder = try GPSLocBinary.makeConfigHome()
            let result = try await runProgram(
                ServeBox.marionettePython,
                [
                    Paths.packageRoot.appendingPathComponent("scripts/serve-browser.py").path, box.url,
                    "--browser", "firefox", "--expect-replay", "--timeout", "90",
                ], environment: ["HOME": folder.path, "PATH": "/usr/bin:/bin"], mergeErrors: true)
            #expect(result.status == 0, "\(result.stdout)")
            for check in ["POSITION", "SOURCE Replay", "SKY", "STOPPED", "STARTED", "OK"] {
                #expect(result.stdout.contains(check), "\(check): \(result.stdout)")
            }
        }

        @Test("a reduced replay in Chromium says approximate, and its sky (the NMEA parser's) is plotted")
        func approximateInBrowser() async throws {
            try #require(ServeBox.browserAvailable, ServeBox.browserMissingReason)
            let box = try await ServeBox.start([
                "--replay", ServeTests.drive, "--speed", "5", "--batch", "0", "--accuracy", "reduced",
            ])
            defer { box.stop() }
            let folder = try GPSLocBinary.makeConfigHome()
            let result = try await runProgram(
                "/usr/bin/python3",
                [
                    Paths.packageRoot.appendingPathComponent("scripts/serve-browser.py").path, box.url,
                    "--expect-replay", "--expect-approximate", "--no-control", "--timeout", "90",
                ], environment: ["HOME": folder.path, "PATH": "/usr/bin:/bin"], mergeErrors: true)
            #expect(result.status == 0, "\(result.stdout)")
            #expect(result.stdout.contains("APPROXIMATE"), "\(result.stdout)")
        }
    }
}

/// The hub and a stream in one process, without a server or a clock (batches published by hand):
/// what a page is sent, and what is forgotten.
@Suite("gpsloc serve's hub: batches, resume, the bound, forgetting")
struct ServeHubTests {
    static func location(_ index: Int) -> LocationValue {
        LocationValue(
            coordinate: CLLocationCoordinate2D(latitude: 51 + Double(index) * 1e-5, longitude: -2.5),
            altitude: 40, horizontalAccuracy: 3, verticalAccuracy: 4, course: 90, courseAccuracy: -1, speed: 10,
            speedAccuracy: -1, timestamp: Date(timeIntervalSince1970: 1_800_000_000 + Double(index)))
    }

    /// A hub whose batches are published only by `publish()` (its timer is an hour).
    static func hub(capacity: Int = 100) -> ServeHub {
        let hub = ServeHub(settings: ServeHub.Settings(batch: 3600, capacity: capacity, replay: nil))
        hub.authorization(status: .authorizedAlways, accuracy: .fullAccuracy, reason: nil)
        hub.tracking(true, reason: nil)
        return hub
    }

    /// What the stream has to send now.
    static func drain(_ stream: ServeStream, _ hub: ServeHub) -> [EventStream.Event] {
        // A header, its blank line, then the events (split by scalar: "\r\n" is one Character).
        let text = Array("HTTP/1.1 200 OK\n\n".utf8) + stream.sendableNow()
        return EventStream.parse(String(decoding: text, as: UTF8.self).components(separatedBy: "\n"))
    }

    @Test("a new client gets the latest location at once, then only published batches; ids are the batch's last")
    func batches() {
        let hub = Self.hub()
        for index in 1...3 { hub.add(Self.location(index)) }
        let stream = ServeStream(hub: hub, after: nil)
        // On connecting: the latest location, at once.
        let first = Self.drain(stream, hub).filter { $0.name == "locations" }
        #expect(first.map(\.id) == [3] && first.first?.locations.count == 1)
        for index in 4...6 { hub.add(Self.location(index)) }
        #expect(Self.drain(stream, hub).filter { $0.name == "locations" }.isEmpty, "nothing before the batch")
        hub.publish()
        for index in 7...8 { hub.add(Self.location(index)) }  // not published yet
        let all = Self.drain(stream, hub)
        let batches = all.filter { $0.name == "locations" }
        #expect(batches.map(\.id) == [6], "\(all.map(\.name)) published \(hub.state.withLock { $0.published })")
        #expect(batches.first?.locations.count == 3)
    }

    @Test("Last-Event-ID: every held location after it, in order; beyond the bound, a note and the oldest held")
    func resumeAndBound() {
        let hub = Self.hub(capacity: 10)
        for index in 1...25 { hub.add(Self.location(index)) }
        hub.publish()
        let resumed = ServeStream(hub: hub, after: 20)
        let behind = ServeStream(hub: hub, after: 3)
        let stranger = ServeStream(hub: hub, after: 999)
        let times = Self.drain(resumed, hub).flatMap(\.locations).compactMap { $0["timestamp"] as? String }
        #expect(times.count == 5 && times == times.sorted() && Set(times).count == 5)
        let events = Self.drain(behind, hub)
        #expect(events.first { $0.name == "status" }?.data.contains("locationsDropped") == true)
        #expect(events.flatMap(\.locations).count == 10)
        #expect(Self.drain(stranger, hub).flatMap(\.locations).count == 1, "an unknown id is a new client")
        #expect(hub.track().count == 10)
    }

    @Test("a revocation, or a fall to reduced accuracy, forgets what was held")
    func forgets() {
        for (status, accuracy) in [
            (CLAuthorizationStatus.denied, CLAccuracyAuthorization.fullAccuracy),
            (.authorizedAlways, .reducedAccuracy),
        ] {
            let hub = Self.hub()
            for index in 1...5 { hub.add(Self.location(index)) }
            hub.publish()
            hub.authorization(status: status, accuracy: accuracy, reason: "changed outside gpsloc")
            let returning = ServeStream(hub: hub, after: 0)
            #expect(hub.track().isEmpty)
            #expect(Self.drain(returning, hub).flatMap(\.locations).isEmpty)
            #expect(hub.state.withLock { $0.location(id: $0.newestID) } == nil)
        }
        let hub = Self.hub()
        hub.authorization(status: .denied, accuracy: .fullAccuracy, reason: nil)
        hub.add(Self.location(1))
        #expect(hub.track().isEmpty, "nothing is held without a grant")
    }
}
