import CBrokerSupport
import Foundation
import GNSSCore
import GPSDProcesses
import TestSupport
import Testing

@testable import GPSLocation
@testable import GPSLocationBroker
@testable import LocationCore

/// gpslocd in this process (#34): its socket in a temporary folder, no gpsd needed for what is
/// tested here (consent, identity, output that never blocks, the protocol).
final class InProcessBroker: Sendable {
    let folder: URL
    let socket: String
    let server: BrokerServer
    private let finished = DispatchSemaphore(value: 0)

    /// `endpoint`: the gpsd it reads (default: a port where nothing listens).
    init(
        promptTimeout: TimeInterval = 120, inUseProbe: (@Sendable (BrokerClient) -> Bool?)? = nil,
        endpoint: GPSDEndpoint = GPSDEndpoint(host: "127.0.0.1", port: 9)
    ) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("broker-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        socket = folder.appendingPathComponent("socket").path
        let service = BrokerService(
            stateDirectory: folder.appendingPathComponent("state"),
            // By default nothing listens there: the consent tests never WATCH.
            endpoint: endpoint,
            policyPath: folder.appendingPathComponent("policy").path,
            promptTimeout: promptTimeout,
            inUseProbe: inUseProbe)
        server = try BrokerServer(service: service, socketPath: socket)
        let server = self.server
        let finished = self.finished
        Thread.detachNewThread {
            server.run()
            finished.signal()
        }
    }

    /// An agent for this uid that answers every prompt with `status`/`accuracy` (and `once`),
    /// counting its answers in `answered`; registered (AGENT) when this returns.
    func answeringAgent(
        status: String, accuracy: String, once: Bool = false, answered: EventCounter? = nil
    ) throws -> BrokerLink {
        let holder = Locked<BrokerLink?>(nil)
        let agent = BrokerLink(
            path: socket, app: "agent",
            onMessage: { message in
                guard message.messageClass == "PROMPT", let id = message.int("prompt") else { return }
                var line = BrokerLine("ANSWER")
                line.add("prompt", id)
                line.add("status", status)
                line.add("accuracy", accuracy)
                if once { line.add("once", true) }
                holder.withLock { $0 }?.send(line.line)
                answered?.increment()
            }, onState: { _ in })
        holder.withLock { $0 = agent }
        _ = try agent.startAndWait()
        #expect(try agent.request({ _ in }, className: "AGENT", timeout: 10).bool("ok") == true)
        return agent
    }

    func stop() {
        server.stop()
        finished.wait()
        server.service.stop()
        try? FileManager.default.removeItem(at: folder)
    }
}

/// A program's connection as gpslocd holds it, on a socket pair: gpslocd's `BrokerClient` on a
/// non-blocking end (as `accept4` gives it), the program's end to read what it was sent; both
/// closed when this goes.
final class ProgramConnection {
    let client: BrokerClient
    /// The program's end.
    let program: Int32
    private let own: Int32

    /// `sendBuffer`/`receiveBuffer`: small socket buffers, for a program that falls behind;
    /// `epoll`: the loop's set, which gpslocd's end joins (watched for input, edge-triggered).
    init(
        identity: PeerIdentity = PeerIdentity(uid: 1, gid: 1, pid: 1), sendBuffer: Int32? = nil,
        receiveBuffer: Int32? = nil, epoll: Int32 = -1
    ) throws {
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        (own, program) = (pair[0], pair[1])
        for (end, option, size) in [(own, SO_SNDBUF, sendBuffer), (program, SO_RCVBUF, receiveBuffer)] {
            guard var size else { continue }
            setsockopt(end, SOL_SOCKET, option, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        _ = fcntl(own, F_SETFL, fcntl(own, F_GETFL) | O_NONBLOCK)
        if epoll >= 0 { #expect(gpslocd_epoll_add(epoll, own, 1 | 4, Int64(own)) == 0) }
        client = BrokerClient(fd: own, id: 1, identity: identity, epoll: epoll)
    }

    deinit {
        close(own)
        close(program)
    }

    /// What one read takes now (nothing when nothing waits).
    func take(upTo count: Int = 1 << 16) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let got = recv(program, &buffer, count, Int32(MSG_DONTWAIT))
        return Array(buffer[..<max(got, 0)])
    }

    /// `take()` as text.
    func text() -> String { String(decoding: take(), as: UTF8.self) }

    /// Reads until nothing more waits; the bytes read.
    func takeAll() -> Int {
        var total = 0
        while case let got = take(upTo: 1 << 20).count, got > 0 { total += got }
        return total
    }
}

@Suite("gpslocd: consent, identity, output that never blocks, the protocol")
struct BrokerTests {
    @Test("a request with no agent is refused at once with the command to run — never a hang")
    func noAgentRefusesAtOnce() async throws {
        let broker = try InProcessBroker()
        defer { broker.stop() }
        let authorizer = LocationAuthorizer.brokered(
            appID: "asker", usageDescription: "to test", socketPath: broker.socket)
        defer { authorizer.disconnect() }
        #expect(authorizer.status == .notDetermined)
        let outcome = authorizer.request(always: false)
        guard case .noPrompt(let facts) = outcome else {
            Issue.record("expected a refusal, got \(outcome)")
            return
        }
        let message = facts.words
        #expect(message.contains("`gpsloc auth grant asker"))
        #expect(message.contains("gpsloc agent"))
        // Without a usage description nobody is asked, as without gpslocd.
        let bare = LocationAuthorizer.brokered(appID: "bare", socketPath: broker.socket)
        defer { bare.disconnect() }
        if case .missingUsageDescription = bare.request(always: false) {} else { Issue.record("usage description") }
    }

    @Test("the user's agent answers, gpslocd keeps the decision, and the app hears of it; a grant reaches it at once")
    func agentAnswers() async throws {
        let broker = try InProcessBroker()
        defer { broker.stop() }
        let answered = EventCounter()
        let agent = try broker.answeringAgent(status: "authorizedAlways", accuracy: "reduced", answered: answered)
        defer { agent.close() }

        let authorizer = LocationAuthorizer.brokered(
            appID: "asker", usageDescription: "to test", socketPath: broker.socket)
        defer { authorizer.disconnect() }
        let changes = EventCounter()
        authorizer.addObserver { changes.increment() }
        #expect(authorizer.request(always: true) == .changed)
        #expect(answered.value == 1)
        #expect(authorizer.status == .authorizedAlways && authorizer.accuracy == .reducedAccuracy)
        // Kept by gpslocd, in its state folder (0600), not in the user's home.
        let store = broker.folder.appendingPathComponent("state/users/\(geteuid())/authorizations.json")
        let attributes = try FileManager.default.attributesOfItem(atPath: store.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        // Another decision, made with `gpsloc auth` through gpslocd, reaches the running app.
        var environment = GPSLocBinary.environment()
        environment["GPSLOCATION_BROKER"] = broker.socket
        let revoke = try await runProgram(GPSLocBinary.path, ["auth", "revoke", "asker"], environment: environment)
        #expect(revoke.status == 0, "\(revoke.stderr)")
        #expect(await changes.wait(hangLimit: 10) { $0 >= 2 })
        #expect(authorizer.status == .denied)
        let who = try await runProgram(GPSLocBinary.path, ["auth", "who"], environment: environment)
        #expect(who.stdout.contains("asker [label] uid \(geteuid())"), "\(who.stdout)")
    }

    /// #51: `gpsloc agent` wrote a request's usage text raw, so an app could erase the prompt's
    /// line and write its own ("\e[2K\r" and a forged question). The agent now shows every
    /// control and bidirectional character escaped. Run on a terminal (script(1) gives one).
    @Test("the agent shows an app's usage text with its escape sequences escaped, not obeyed")
    func agentEscapesUntrustedText() async throws {
        let broker = try InProcessBroker()
        defer { broker.stop() }
        var environment = GPSLocBinary.environment()
        environment["GPSLOCATION_BROKER"] = broker.socket
        // stdin is /dev/null: the agent shows the prompt, reads no answer and says "denied".
        let (agent, output) = try launchReadingStderr(
            "/bin/sh",
            [
                "-c",
                "exec /usr/bin/script -qfc \(shellQuoted(shellQuoted(GPSLocBinary.path) + " agent")) /dev/null 1>&2",
            ],
            environment: environment)
        defer { if agent.isRunning { agent.terminate() } }
        #expect(await output.waitFor(timeout: 30) { $0.contains { $0.text.contains("gpsloc agent:") } })
        let forged = "to help\u{1B}[2K\r\"trusted\" asks \u{202E}txt.exe\u{7}"
        let authorizer = LocationAuthorizer.brokered(
            appID: "forger", usageDescription: forged, socketPath: broker.socket)
        defer { authorizer.disconnect() }
        _ = authorizer.request(always: false)
        #expect(await output.waitFor(timeout: 30) { $0.contains { $0.text.contains("would like to use") } })
        let shown = output.snapshot.map(\.text).joined(separator: "\n")
        #expect(shown.contains(#"to help\e[2K\r"trusted" asks \u{202E}txt.exe\x07"#), "\(shown)")
        #expect(!shown.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{202E}" || $0 == "\u{7}" })
        #expect(TerminalText.escaped("plain: 12.5 m") == "plain: 12.5 m")
        #expect(TerminalText.escaped("a\\e") == #"a\\e"#)
    }

    /// #51: "allow once" stayed in gpslocd's memory for the app, so a later connection of the
    /// same app (another process, run hours after) was allowed without asking. It is now the
    /// requesting connection's and ends with it.
    @Test("\"allow once\" is for the connection that asked: another connection of the app is not determined")
    func onceIsPerConnection() async throws {
        let broker = try InProcessBroker()
        defer { broker.stop() }
        let agent = try broker.answeringAgent(status: "authorizedWhenInUse", accuracy: "full", once: true)
        defer { agent.close() }
        let first = LocationAuthorizer.brokered(
            appID: "oneshot", usageDescription: "to test", socketPath: broker.socket)
        defer { first.disconnect() }
        #expect(first.request(always: false) == .changed)
        #expect(first.status == .authorizedWhenInUse)
        // Another connection of the same app, while the first is still connected, and after.
        let second = LocationAuthorizer.brokered(appID: "oneshot", socketPath: broker.socket)
        #expect(second.status == .notDetermined)
        second.disconnect()
        first.disconnect()
        let third = LocationAuthorizer.brokered(appID: "oneshot", socketPath: broker.socket)
        defer { third.disconnect() }
        #expect(third.status == .notDetermined)
        // Nothing was written: once is never kept.
        let store = broker.folder.appendingPathComponent("state/users/\(geteuid())/authorizations.json")
        let kept = (try? String(contentsOf: store, encoding: .utf8)) ?? ""
        #expect(!kept.contains("oneshot"), "\(kept)")
    }

    /// The mechanism under `nothingAfterRevocation` (a race a real gpsd rarely hits): a location
    /// checked against the decision before an AUTHORIZATION line was queued is never sent after it.
    @Test("a location line checked before an AUTHORIZATION line is not sent after it")
    func locationCheckedBeforeAuthorizationIsDropped() throws {
        let connection = try ProgramConnection()
        let client = connection.client
        let checked = client.epoch
        client.send("FIX 1\n", droppable: true, epoch: checked)
        client.sendAuthorization("AUTHORIZATION denied\n")
        client.send("FIX 2\n", droppable: true, epoch: checked)
        client.send("NOTICE\n")
        #expect(connection.text() == "FIX 1\nAUTHORIZATION denied\nNOTICE\n")
    }

    /// gpslocd holds a burst of gpsd's reports for each program until the burst ends, so a
    /// cycle's FIX and ESTIMATE reach it in one write (it wakes once a cycle, not once a report);
    /// replies and AUTHORIZATION lines are never held, and a revocation still drops the held
    /// locations.
    @Test("a held burst goes in one write; replies and revocations are not held")
    func corkedBurst() throws {
        let connection = try ProgramConnection()
        let client = connection.client
        let read = connection.text
        client.cork()
        client.send("FIX 1\n", droppable: true, epoch: client.epoch)
        client.send("ESTIMATE 1\n", droppable: true, epoch: client.epoch)
        #expect(read() == "", "held until the burst ends")
        client.uncork()
        #expect(read() == "FIX 1\nESTIMATE 1\n", "one write")
        client.send("FIX 2\n", droppable: true, epoch: client.epoch)
        #expect(read() == "FIX 2\n", "not held once the burst ended")

        // A reply while a burst is held goes at once, after what was held before it.
        client.cork()
        client.send("FIX 3\n", droppable: true, epoch: client.epoch)
        client.send("REPLY\n")
        #expect(read() == "FIX 3\nREPLY\n")
        client.uncork()

        // A revocation while a burst is held: the held location is dropped, the line goes now.
        client.cork()
        let checked = client.epoch
        client.send("FIX 4\n", droppable: true, epoch: checked)
        client.sendAuthorization("AUTHORIZATION denied\n")
        client.send("FIX 5\n", droppable: true, epoch: checked)
        #expect(read() == "AUTHORIZATION denied\n")
        client.uncork()
        #expect(read() == "", "no location after the revocation")
    }

    /// gpslocd's loop hears of room to write on a program's connection only while output waits
    /// for it: a program reading what was sent at once wakes nobody (watched always, every read it
    /// made woke the loop); one behind is flushed when it reads.
    @Test("room to write is watched only while output waits")
    func writableWatchedOnlyWhileWaiting() throws {
        let epoll = gpslocd_epoll_create()
        defer { close(epoll) }
        let connection = try ProgramConnection(sendBuffer: 4096, epoll: epoll)
        let client = connection.client
        let drain = connection.takeAll
        var data = [Int64](repeating: 0, count: 4)
        var events = [UInt32](repeating: 0, count: 4)
        func writable() -> Bool {
            let count = gpslocd_epoll_wait(epoll, &data, &events, 4, 0)
            return (0..<Int(max(count, 0))).contains { events[$0] & 2 != 0 }
        }
        client.send("FIX 1\n", droppable: true, epoch: client.epoch)
        #expect(drain() == 6)
        #expect(!writable(), "a read of what was sent at once wakes nobody")
        // Behind: the socket fills, the rest waits, and room to write is watched.
        let line = String(repeating: "x", count: 1_000) + "\n"
        for _ in 0..<200 { client.send(line) }
        #expect(!writable(), "no room yet")
        var received = drain()
        #expect(writable(), "the program read: the loop hears of it")
        while received < 200 * line.utf8.count {
            client.flush()
            let more = drain()
            if more == 0 { break }
            received += more
        }
        #expect(received == 200 * line.utf8.count)
        _ = writable()
        client.send("FIX 2\n", droppable: true, epoch: client.epoch)
        #expect(drain() == 6)
        #expect(!writable(), "all sent: no longer watched")
    }

    /// #51: a program behind on its reading learns of a revocation before what waits for it:
    /// the AUTHORIZATION line goes after the line on the wire (finished first) and any earlier
    /// AUTHORIZATION line, and the location lines behind it are dropped; replies are kept.
    @Test("an AUTHORIZATION line goes ahead of what a program has not read, and no location follows it")
    func authorizationGoesAhead() throws {
        let connection = try ProgramConnection(sendBuffer: 4096, receiveBuffer: 4096)
        let client = connection.client
        // Fill the socket and the queue: replies and fixes, the lines numbered.
        let padding = String(repeating: "x", count: 200)
        for index in 0..<400 {
            if index % 2 == 0 {
                client.send("REPLY \(index) \(padding)\n")
            } else {
                client.send("FIX \(index) \(padding)\n", droppable: true, epoch: client.epoch)
            }
        }
        client.sendAuthorization("AUTHORIZATION reduced\n")
        client.sendAuthorization("AUTHORIZATION denied\n")
        client.send("REPLY last\n")
        var received: [UInt8] = []
        while true {
            let chunk = connection.take()
            if !chunk.isEmpty {
                received += chunk
                continue
            }
            client.flush()
            let more = connection.take()
            if more.isEmpty { break }
            received += more
        }
        let lines = String(decoding: received, as: UTF8.self).split(separator: "\n").map(String.init)
        // Every line whole (none cut by the insertion), in order.
        #expect(lines.allSatisfy { $0.hasPrefix("REPLY ") || $0.hasPrefix("FIX ") || $0.hasPrefix("AUTHORIZATION ") })
        let first = try #require(lines.firstIndex(of: "AUTHORIZATION reduced"))
        #expect(lines[first + 1] == "AUTHORIZATION denied")
        #expect(first < 100, "the revocation came after \(first) lines")
        #expect(!lines[(first + 1)...].contains { $0.hasPrefix("FIX ") }, "a fix after the revocation")
        // The replies were all kept, in order.
        let replies = lines.filter { $0.hasPrefix("REPLY ") }
        #expect(replies.count == 201 && replies.last == "REPLY last")
    }

    /// The box's one reduced secret (#51) replaces the per-uid ones: on the first start after,
    /// the lowest uid's secret and kept cell become the box's, so that uid's apps see no change.
    @Test("upgrading to one reduced secret per box keeps the lowest uid's, and never replaces a box secret")
    func boxReducedSecretMigration() throws {
        let state = FileManager.default.temporaryDirectory.appendingPathComponent("reduced-\(UUID())")
        defer { try? FileManager.default.removeItem(at: state) }
        for uid in ["1000", "5", "notauid"] {
            let folder = state.appendingPathComponent("users/\(uid)/reduced")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try Data("secret of \(uid)".utf8).write(to: folder.appendingPathComponent("secret.json"))
        }
        let box = BrokerService.boxReducedFolder(state)
        #expect(box.path == state.appendingPathComponent("reduced").path)
        let secret = box.appendingPathComponent("secret.json")
        #expect(try String(contentsOf: secret, encoding: .utf8) == "secret of 5")
        try Data("the box's".utf8).write(to: secret)
        _ = BrokerService.boxReducedFolder(state)
        #expect(try String(contentsOf: secret, encoding: .utf8) == "the box's")
    }

    @Test("gpsloc doctor says which mode is in force: through gpslocd, with the app's decision there")
    func doctorNamesTheMode() async throws {
        let broker = try InProcessBroker()
        defer { broker.stop() }
        var environment = GPSLocBinary.environment()
        environment["GPSLOCATION_BROKER"] = broker.socket
        environment["GPSLOCATION_GPSD"] = "127.0.0.1:9"
        let doctor = try await runProgram(GPSLocBinary.path, ["doctor"], environment: environment)
        #expect(doctor.stdout.contains("broker mode: gpslocd answers at \(broker.socket)"), "\(doctor.stdout)")
        #expect(doctor.stdout.contains("gpsloc: notDetermined"))
        environment["GPSLOCATION_BROKER"] = broker.folder.appendingPathComponent("absent").path
        let absent = try await runProgram(GPSLocBinary.path, ["doctor"], environment: environment)
        #expect(absent.stdout.contains("fail  broker mode: gpslocd cannot be reached"), "\(absent.stdout)")
    }

    /// gpslocd's stop waits for its last-location writes as a manager's stop does: not for ever.
    @Test("gpslocd's stop waits for the last locations' writes at most its bound: a disk that does not answer")
    func lastFixesWaitIsBounded() {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("lastfixes-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let fixes = LastFixes { _ in folder }
        let disk = DispatchSemaphore(value: 0)
        fixes.writes.async { disk.wait() }  // a write the disk holds
        #expect(!fixes.waitForWrites(timeout: 0.05), "not finished: the wait ends anyway")
        disk.signal()
        #expect(fixes.waitForWrites(timeout: 60), "the disk answered: finished")
    }

    @Test("a kept line loses its final newline and nothing else")
    func keptObject() {
        let fix = BrokerProtocol.fixLine(
            Fix(
                mode: .threeDimensional, time: Date(timeIntervalSince1970: 1_781_510_405), latitude: 51.45,
                longitude: -2.59))
        #expect(fix.hasSuffix("}\n"))
        #expect(LastFixes.object(of: fix) == String(fix.dropLast()))
        for (line, object) in [
            ("", ""), ("\n", ""), ("{}", "{}"), ("{}\n", "{}"), ("{\"app\":\"café\"}\n", "{\"app\":\"café\"}"),
            ("{\"a\":\"é\n\"}\n", "{\"a\":\"é\n\"}"), ("\n\n", "\n"),
        ] {
            #expect(LastFixes.object(of: line) == object, "\(line.debugDescription)")
        }
    }

    @Test(
        "gpslocd keeps each app's last location and gives it only while the app may see it (gpsloc last, manager.location)"
    )
    func lastLocationKeptByBroker() async throws {
        let broker = try InProcessBroker()
        defer { broker.stop() }
        let uid = geteuid()
        let service = broker.server.service
        let precise = Fix(
            mode: .threeDimensional, time: Date(timeIntervalSince1970: 1_781_510_405), latitude: 51.454094,
            longitude: -2.596345, altitudeHAE: 87.3, errors: FixErrors(longitude: 3, latitude: 4), speed: 2)
        let point = Fix(
            mode: .twoDimensional, time: Date(timeIntervalSince1970: 1_781_510_400), latitude: 51.45,
            longitude: -2.59, errors: FixErrors(horizontal: 6400))
        service.lastFixes.record(uid: uid, app: "keeper", line: BrokerProtocol.fixLine(precise), reduced: false)
        // The receiver's GST of that fix, as the app received it after the fix: kept beside it.
        service.lastFixes.recordEstimate(
            uid: uid, app: "keeper",
            line: BrokerProtocol.line(
                for: .errorEstimate(
                    ReceiverErrorEstimate(time: precise.time, latitude: 1.2, longitude: 0.9, altitude: 2))))
        service.lastFixes.record(
            uid: uid, app: "dimmed", line: BrokerProtocol.fixLine(point, reduced: true), reduced: true)
        service.lastFixes.waitForWrites()
        // Kept in gpslocd's state folder, 0600 — not in the user's cache.
        let kept = broker.folder.appendingPathComponent("state/users/\(uid)/last/keeper.json")
        #expect((try FileManager.default.attributesOfItem(atPath: kept.path)[.posixPermissions] as? Int) == 0o600)

        var environment = GPSLocBinary.environment()
        environment["GPSLOCATION_BROKER"] = broker.socket
        // Not authorized: nothing, and the reason.
        let refused = try await runProgram(GPSLocBinary.path, ["last", "--app", "keeper"], environment: environment)
        // (stdout is no terminal here: the reason is an NDJSON error.)
        #expect(refused.status == 1 && refused.stdout.contains("\"locationUnknown\""))
        #expect(refused.stdout.contains("gpslocd's decision"), "\(refused.stdout)")
        for (app, accuracy) in [("keeper", "--full"), ("dimmed", "--reduced")] {
            let grant = try await runProgram(
                GPSLocBinary.path, ["auth", "grant", app, "--always", accuracy], environment: environment)
            #expect(grant.status == 0, "\(grant.stderr)")
        }
        let shown = try await runProgram(
            GPSLocBinary.path, ["last", "--app", "keeper", "--json"], environment: environment)
        #expect(shown.status == 0, "\(shown.stderr)")
        #expect(shown.stdout.contains("51.454094") && shown.stdout.contains("-2.596345"), "\(shown.stdout)")
        // With the accuracy the app was given: the GST's √(1.2² + 0.9²), not the DOP model's.
        #expect(shown.stdout.contains("\"horizontalAccuracy\":1.500"), "\(shown.stdout)")
        let approximate = try await runProgram(
            GPSLocBinary.path, ["last", "--app", "dimmed", "--json"], environment: environment)
        #expect(approximate.stdout.contains("51.45") && !approximate.stdout.contains("51.454"))
        #expect(approximate.stdout.contains("\"reduced\":true"), "\(approximate.stdout)")
        // A manager of the app shows it as `location` before updates start.
        let authorizer = LocationAuthorizer.brokered(appID: "keeper", socketPath: broker.socket)
        defer { authorizer.disconnect() }
        let manager = CLLocationManager(
            source: NMEAReplaySource(path: "/dev/null"), authorizer: authorizer,
            delegateQueue: DispatchQueue(label: "last"))
        #expect(manager.location?.coordinate.latitude == 51.454094)
        #expect(manager.lastLocationCache == nil)
        // Reduced now: the precise one is never shown.
        let reduce = try await runProgram(
            GPSLocBinary.path, ["auth", "grant", "keeper", "--always", "--reduced"], environment: environment)
        #expect(reduce.status == 0)
        let hidden = try await runProgram(GPSLocBinary.path, ["last", "--app", "keeper"], environment: environment)
        #expect(hidden.status == 1 && !hidden.stdout.contains("51.45"), "\(hidden.stdout)")
        // Reset forgets it, file and all.
        let reset = try await runProgram(GPSLocBinary.path, ["auth", "reset", "keeper"], environment: environment)
        service.lastFixes.waitForWrites()
        #expect(reset.status == 0 && !FileManager.default.fileExists(atPath: kept.path))
        // gpslocd restarted reads what it kept.
        let again = LastFixes { _ in broker.folder.appendingPathComponent("state/users/\(uid)") }
        #expect(again.entry(uid: uid, app: "dimmed")?.reduced == true)
    }

    @Test(
        "a session with no agent, and one with no fix (gpsd absent behind gpslocd), each ends with an error — never a hang"
    )
    func noAgentNoFixEnds() async throws {
        let broker = try InProcessBroker()
        defer { broker.stop() }
        var environment = GPSLocBinary.environment()
        environment["GPSLOCATION_BROKER"] = broker.socket
        // Not determined, no agent: gpslocd refuses the request with the command; watch ends.
        let undecided = try await runProgram(
            GPSLocBinary.path, ["watch", "--once", "--json", "--app", "lonely"], environment: environment)
        #expect(undecided.status == 1)
        #expect(undecided.stdout.contains("gpsloc auth grant lonely"), "\(undecided.stdout)")
        #expect(!undecided.stdout.contains("\"type\":\"location\""))
        // Granted, but gpsd is not there: gpslocd says so at once, and watch --once ends at its
        // timeout with that reason (requestLocation's rule: gpsd may come back within it; a busy
        // machine's 1 s timeout came before gpslocd's report, so 5 s).
        let grant = try await runProgram(
            GPSLocBinary.path, ["auth", "grant", "lonely", "--always"], environment: environment)
        #expect(grant.status == 0, "\(grant.stderr)")
        let noFix = try await runProgram(
            GPSLocBinary.path, ["watch", "--once", "--json", "--timeout", "5", "--app", "lonely"],
            environment: environment)
        #expect(noFix.status == 1, "\(noFix.stdout)")
        #expect(noFix.stdout.contains("127.0.0.1:9"), "\(noFix.stdout)")
        #expect(!noFix.stdout.contains("\"type\":\"location\""))
    }

    @Test("a program that starts watching while gpsd is down is told at once, not at the next once-a-minute notice")
    func lateWatcherHearsTheProblem() async throws {
        let broker = try InProcessBroker()
        defer { broker.stop() }
        func watcher(_ app: String) -> (BrokerLink, Locked<[BrokerMessage]>, EventCounter) {
            let seen = Locked<[BrokerMessage]>([])
            let count = EventCounter()
            let link = BrokerLink(
                path: broker.socket, app: app, afterWelcome: [BrokerLine("WATCH").line],
                onMessage: { message in
                    seen.withLock { $0.append(message) }
                    count.increment()
                }, onState: { _ in })
            return (link, seen, count)
        }
        // The first program starts gpslocd's gpsd connection, which fails (nothing on port 9).
        let (first, firstSeen, firstCount) = watcher("early")
        defer { first.close() }
        _ = try first.startAndWait()
        #expect(
            await firstCount.wait(hangLimit: 10) { _ in
                firstSeen.withLock { $0.contains { $0.messageClass == "PROBLEM" } }
            })
        // A later one: its first line after the WELCOME is that problem (before this, it heard
        // nothing until gpslocd's next reconnect notice, up to a minute away).
        let (late, lateSeen, lateCount) = watcher("late")
        defer { late.close() }
        _ = try late.startAndWait()
        #expect(await lateCount.wait(hangLimit: 10) { $0 >= 1 })
        let firstLine = try #require(lateSeen.withLock { $0.first })
        #expect(firstLine.messageClass == "PROBLEM", "\(firstLine.fields)")
        // The wire carries what happened as values; the program puts them in words.
        let error = BrokerProtocol.error(from: firstLine)
        guard case .gpsd(let gpsd) = error.facts else {
            Issue.record("not gpsd's error: \(error.facts)")
            return
        }
        #expect(gpsd.endpoint.port == 9 && gpsd.code == .unreachable)
        #expect(error.message.contains("127.0.0.1:9"), "\(error.message)")
    }

    @Test("policy brokerRequired: no direct mode — without gpslocd nothing is delivered and the error says to start it")
    func brokerRequiredFailsClosed() async throws {
        let broker = try InProcessBroker()
        defer { broker.stop() }
        var required = LocationPolicy()
        required.brokerRequired = true
        #expect(BrokerProtocol.socketPath(environment: [:], policy: required) == BrokerProtocol.defaultSocketPath)
        #expect(
            BrokerProtocol.socketPath(environment: ["GPSLOCATION_BROKER": "none"], policy: required)
                == BrokerProtocol.defaultSocketPath)
        #expect(BrokerProtocol.socketPath(environment: ["GPSLOCATION_BROKER": "none"], policy: LocationPolicy()) == nil)
        // Through gpsloc, as an administrator's policy would make it (GPSLOCATION_POLICY adds it).
        let policy = broker.folder.appendingPathComponent("policy-required.json")
        try Data(#"{"brokerRequired": true}"#.utf8).write(to: policy)
        #expect(LocationPolicy.load(path: policy.path).brokerRequired)
        var environment = GPSLocBinary.environment()
        environment["GPSLOCATION_POLICY"] = policy.path
        environment["GPSLOCATION_BROKER"] = "none"
        if FileManager.default.fileExists(atPath: BrokerProtocol.defaultSocketPath) { return }  // a real gpslocd
        let watch = try await runProgram(GPSLocBinary.path, ["watch", "--once", "--json"], environment: environment)
        #expect(watch.status == 1)
        #expect(watch.stdout.contains("requires gpslocd (brokerRequired)"), "\(watch.stdout)")
        #expect(watch.stdout.contains("systemctl start gpslocd.socket"))
        #expect(!watch.stdout.contains("\"type\":\"location\""))
        let doctor = try await runProgram(GPSLocBinary.path, ["doctor"], environment: environment)
        #expect(doctor.stdout.contains("fail  broker mode: gpslocd cannot be reached"), "\(doctor.stdout)")
    }

    @Test(
        "When In Use is judged again every second: leaving the terminal's foreground stops delivery, coming back restarts it"
    )
    func inUseFollowsTheForeground() async throws {
        let foreground = Locked(false)
        let broker = try InProcessBroker(inUseProbe: { _ in foreground.withLock { $0 } })
        defer { broker.stop() }
        var environment = GPSLocBinary.environment()
        environment["GPSLOCATION_BROKER"] = broker.socket
        let grant = try await runProgram(
            GPSLocBinary.path, ["auth", "grant", "desk", "--when-in-use"], environment: environment)
        #expect(grant.status == 0, "\(grant.stderr)")
        let authorizer = LocationAuthorizer.brokered(appID: "desk", socketPath: broker.socket)
        defer { authorizer.disconnect() }
        let changes = EventCounter()
        authorizer.addObserver { changes.increment() }
        // This test has no terminal: not in use, nothing may flow.
        #expect(authorizer.status == .authorizedWhenInUse, "\(authorizer.status)")
        #expect(!authorizer.state.allowsDelivery, "\(authorizer.state)")
        foreground.withLock { $0 = true }
        broker.server.service.refreshInUse()
        #expect(await changes.wait(hangLimit: 10) { _ in authorizer.isInUse })
        #expect(authorizer.state.allowsDelivery)
        foreground.withLock { $0 = false }
        broker.server.service.refreshInUse()
        #expect(await changes.wait(hangLimit: 10) { _ in !authorizer.isInUse })
        #expect(!authorizer.state.allowsDelivery)
        // The real probe: a process that has exited is never judged in use.
        #expect(PeerIdentity.isInUse(pid: getpid(), pidfd: -1) == nil)
        let own = PeerIdentity.openPidfd(getpid())
        defer { close(own) }
        #expect(PeerIdentity.isInUse(pid: getpid(), pidfd: own) != nil)
    }

    @Test("an edit of the policy reaches running programs through gpslocd: a restriction cuts a granted session")
    func policyFollowedLive() async throws {
        let broker = try InProcessBroker()
        defer { broker.stop() }
        var environment = GPSLocBinary.environment()
        environment["GPSLOCATION_BROKER"] = broker.socket
        let grant = try await runProgram(
            GPSLocBinary.path, ["auth", "grant", "tracker", "--always"], environment: environment)
        #expect(grant.status == 0, "\(grant.stderr)")
        let authorizer = LocationAuthorizer.brokered(appID: "tracker", socketPath: broker.socket)
        defer { authorizer.disconnect() }
        #expect(authorizer.status == .authorizedAlways)
        let changes = EventCounter()
        authorizer.addObserver { changes.increment() }
        try Data(#"{"restricted": ["tracker"]}"#.utf8).write(
            to: broker.folder.appendingPathComponent("policy"), options: .atomic)
        #expect(await changes.wait(hangLimit: 10) { _ in authorizer.status == .restricted })
        // Lifted again: the user's grant holds once more.
        try Data(#"{"restricted": []}"#.utf8).write(
            to: broker.folder.appendingPathComponent("policy"), options: .atomic)
        #expect(await changes.wait(hangLimit: 10) { _ in authorizer.status == .authorizedAlways })
    }

    @Test("only root decides for another uid; a malformed line is answered, not fatal")
    func permissions() async throws {
        let broker = try InProcessBroker()
        defer { broker.stop() }
        let link = BrokerLink(path: broker.socket, app: "admin", onMessage: { _ in }, onState: { _ in })
        defer { link.close() }
        _ = try link.startAndWait()
        let grant = try link.request(
            {
                $0.add("app", "someone")
                $0.add("uid", 4242)
                $0.add("status", "authorizedAlways")
            }, className: "GRANT", timeout: 10)
        // The test runs as root in CI: root may; anyone else is told to use root.
        if geteuid() == 0 {
            #expect(grant.bool("ok") == true)
            let listed = try link.request({ $0.add("uid", 4242) }, className: "LIST", timeout: 10)
            #expect(listed.objects("rows").map { $0.string("app") } == ["someone"])
        } else {
            #expect(grant.bool("ok") == false)
        }
        #expect(link.send("{not json\n"))
        #expect(try link.request({ _ in }, className: "WHO", timeout: 10).bool("ok") == true)
    }

    @Test("a program that never reads: sends return at once, what waits is bounded, the drop is told")
    func slowReaderNeverBlocks() throws {
        let connection = try ProgramConnection(identity: PeerIdentity(uid: 0, gid: 0, pid: getpid()))
        let (client, program) = (connection.client, connection.program)
        let line = BrokerProtocol.fixLine(Fix(mode: .threeDimensional, time: Date(), latitude: 51.5, longitude: -2.6))
        for _ in 0..<20_000 { client.send(line, droppable: true) }
        // 20,000 lines (~3 MB) to a reader that took none: the socket's buffer plus at most
        // `maximumPending` (and one line) wait; the rest were dropped, not queued, not blocked on.
        var drained = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = read(program, &buffer, buffer.count)
            if count <= 0 { break }
            drained += count
            client.flush()
            if drained > 8 << 20 { break }
            var ready = pollfd(fd: program, events: Int16(POLLIN), revents: 0)
            if poll(&ready, 1, 0) == 0 { break }
        }
        #expect(drained < BrokerClient.maximumPending + (2 << 20))
        client.send(line, droppable: true)
        let count = read(program, &buffer, buffer.count)
        let text = String(decoding: buffer[0..<max(count, 0)], as: UTF8.self)
        #expect(text.contains("brokerDropped"), "\(text.prefix(200))")
    }

    @Test("identity: a process that has exited, or a pid younger than the connection, is never trusted")
    func recycledPid() async throws {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sleep")
        child.arguments = ["30"]
        try child.run()
        let pid = child.processIdentifier
        let pidfd = PeerIdentity.openPidfd(pid)
        try #require(pidfd >= 0)
        defer { close(pidfd) }
        // Alive, started before "the connection": identified.
        let alive = try PeerIdentity.read(
            pid: pid, uid: 0, gid: 0, pidfd: pidfd, startedNoLaterThan: PeerIdentity.bootSeconds())
        #expect(alive.pid == pid && !alive.inUse)
        // The connection was accepted before this process started: the pid was recycled.
        #expect(throws: PeerIdentity.Failure.self) {
            try PeerIdentity.read(pid: pid, uid: 0, gid: 0, pidfd: pidfd, startedNoLaterThan: 1)
        }
        kill(pid, SIGKILL)
        let reference = ProcessReference(child)
        _ = try await offConcurrencyThreads { reference.process.waitUntilExit() }
        // Gone: whatever now has its pid is not the process that connected.
        #expect(throws: PeerIdentity.Failure.self) {
            try PeerIdentity.read(pid: pid, uid: 0, gid: 0, pidfd: pidfd, startedNoLaterThan: nil)
        }
        #expect(PeerIdentity.systemUnit(cgroup: "0::/system.slice/fleetd.service\n") == "fleetd.service")
        #expect(
            PeerIdentity.systemUnit(cgroup: "0::/user.slice/user-1000.slice/user@1000.service/app.slice/x.service")
                == nil)
        #expect(PeerIdentity.flatpakID(info: "[Application]\nname=org.example.Maps\nruntime=x\n") == "org.example.Maps")
    }

    @Test("the protocol: a fix and the satellites survive the wire field for field")
    func roundTrip() throws {
        let fix = Fix(
            mode: .threeDimensional, quality: .dgps, time: Date(timeIntervalSince1970: 1_781_510_405.25),
            latitude: 51.454094405, longitude: -2.596345072, altitudeHAE: 87.3, altitudeMSL: 39.1,
            geoidSeparation: 48.2, errors: FixErrors(time: 0.005, longitude: 3.1, latitude: 4.2, vertical: 7.5),
            speed: 13.763, course: 72.3, climb: -1.3, magneticVariation: -1.0, device: "/dev/ttyACM0 \"x\"")
        let line = BrokerProtocol.line(for: .fix(fix))
        guard
            case .fix(let back) = BrokerProtocol.event(
                from: try #require(BrokerMessage(line: Array(line.utf8.dropLast()))))
        else {
            Issue.record("not a fix: \(line)")
            return
        }
        #expect(back == fix)
        let sky = SkyView(
            time: nil,
            satellites: [
                Satellite(
                    prn: 7, constellation: .gps, satelliteID: 7, signalToNoise: 41, elevation: 33, azimuth: 120,
                    used: true)
            ], dilution: DilutionOfPrecision(horizontal: 0.9))
        guard
            case .sky(let skyBack) = BrokerProtocol.event(
                from: try #require(BrokerMessage(line: Array(BrokerProtocol.line(for: .sky(sky)).utf8))))
        else {
            Issue.record("not a sky")
            return
        }
        #expect(skyBack == sky)
    }
}

/// The few seconds of reports gpslocd keeps for a face that subscribes later (GeoClue's): kept
/// in time order, old ones dropped from the front each cycle, those in the future dropped when
/// the receiver's time goes back, at most `recentLimit`, and none across a problem.
@Suite("gpslocd's recent reports for faces that subscribe later")
struct RecentReportsTests {
    private static func fix(_ second: Double) -> LocationSourceEvent {
        .fix(Fix(mode: .threeDimensional, time: Date(timeIntervalSince1970: second), latitude: 51.45, longitude: -2.59))
    }
    private static func estimate(_ second: Double) -> LocationSourceEvent {
        .errorEstimate(
            ReceiverErrorEstimate(time: Date(timeIntervalSince1970: second), latitude: 1, longitude: 1, altitude: 2))
    }
    private static func times(_ recent: BrokerService.RecentReports) -> [Double] {
        recent.current.compactMap { event in
            switch event {
            case .fix(let fix): fix.time?.timeIntervalSince1970
            case .errorEstimate(let estimate): estimate.time?.timeIntervalSince1970
            default: nil
            }
        }
    }

    @Test(
        "in order: the last recentSeconds kept, fix and estimate of one time both; back in time: the future dropped; at most recentLimit"
    )
    func window() {
        var recent = BrokerService.RecentReports()
        // Quarter seconds (exact in the fix's packed time), 10 s of them.
        for quarter in 0..<40 {
            recent.remember(Self.fix(1000 + Double(quarter) / 4))
            recent.remember(Self.estimate(1000 + Double(quarter) / 4))
        }
        let last = 1000 + 39.0 / 4
        #expect(Self.times(recent).allSatisfy { last - $0 <= BrokerService.recentSeconds })
        #expect(Self.times(recent).count == min(BrokerService.recentLimit, 2 * 13))
        #expect(Self.times(recent) == Self.times(recent).sorted())
        // Reports without a time, and other events, are not kept.
        recent.remember(.fix(Fix(mode: .noFix)))
        recent.remember(.heading(HeadingReading(trueHeading: 10)))
        #expect(Self.times(recent).last == last)
        // The receiver's time went back 5 s: what is now in the future goes, the rest stays.
        recent.remember(Self.fix(1005))
        #expect(Self.times(recent) == [1005])
        recent.remember(Self.fix(1005.25))
        recent.remember(Self.fix(1005.25))
        #expect(Self.times(recent) == [1005, 1005.25, 1005.25])
        recent.remember(.problem(CLError(.locationUnknown, message: "gpsd went"), terminal: false))
        #expect(recent.current.isEmpty)
        // A receiver that reports more than recentLimit times inside the window: the newest kept.
        for index in 0..<(BrokerService.recentLimit + 36) {
            recent.remember(Self.fix(2000 + Double(index) / 64))
        }
        #expect(recent.current.count == BrokerService.recentLimit)
        #expect(Self.times(recent).first == 2000 + 36.0 / 64)
        #expect(Self.times(recent).last == 2000 + Double(BrokerService.recentLimit + 35) / 64)
    }

    /// Each kept report as its kind and time.
    private static func signature(_ events: some Collection<LocationSourceEvent>) -> [String] {
        events.map { event in
            switch event {
            case .fix(let fix): "fix \(fix.time?.timeIntervalSince1970 ?? -1)"
            case .errorEstimate(let estimate): "estimate \(estimate.time?.timeIntervalSince1970 ?? -1)"
            default: "other"
            }
        }
    }

    /// The rule as the plain array kept it before 0.13.5 (each report's stale front removed at once).
    private static func reference(_ event: LocationSourceEvent, in recent: inout [LocationSourceEvent]) {
        func time(_ event: LocationSourceEvent) -> Date? {
            switch event {
            case .fix(let fix): fix.time
            case .errorEstimate(let estimate): estimate.time
            default: nil
            }
        }
        if case .problem = event {
            recent = []
            return
        }
        guard let now = time(event) else { return }
        recent.removeAll { old in
            time(old).map { now.timeIntervalSince($0) > BrokerService.recentSeconds || $0 > now } ?? true
        }
        recent.append(event)
        if recent.count > BrokerService.recentLimit { recent.removeFirst(recent.count - BrokerService.recentLimit) }
    }

    @Test("20,000 random reports (bursts, gaps, time going back, problems, no time): what the plain array kept")
    func sameAsPlainArray() {
        var generator = SplitMix64(seed: 41)
        var recent = BrokerService.RecentReports()
        var plain: [LocationSourceEvent] = []
        var second = 1000.0
        for step in 0..<20_000 {
            let event: LocationSourceEvent
            switch Int.random(in: 0..<100, using: &generator) {
            case 0: event = .problem(CLError(.locationUnknown, message: "gpsd went"), terminal: false)
            case 1: event = .fix(Fix(mode: .noFix))
            case 2..<4:
                second -= Double(Int.random(in: 1...40, using: &generator)) / 8
                event = Self.fix(second)
            case 4..<6:
                second += Double(Int.random(in: 1...80, using: &generator)) / 8
                event = Self.estimate(second)
            case 6..<40: event = Self.estimate(second)
            default:
                second += Double(Int.random(in: 0...4, using: &generator)) / 64
                event = Self.fix(second)
            }
            recent.remember(event)
            Self.reference(event, in: &plain)
            let (kept, expected) = (Self.signature(recent.current), Self.signature(plain))
            #expect(kept == expected, "step \(step)")
            if kept != expected { return }
        }
    }
}

extension RealGPSD.LaneC {
    /// gpslocd decodes gpsd's SKY only while someone asks for it (`followSkyDemand`): a watching
    /// program that asked for the sky, or another face's engine.
    @Suite("gpslocd decodes the sky only while asked", .timeLimit(.minutes(2)))
    struct SkyDemandTests {
        @Test(
            "off for programs that only watch; on while one that asks watches, until the last such goes; on while a face listens"
        )
        func followsDemand() async throws {
            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("clean-1hz-multi.nmea"), cycle: 0.02)
            defer { server.stop() }
            let broker = try InProcessBroker(endpoint: server.endpoint)
            defer { broker.stop() }
            let service = broker.server.service
            func decoding() -> (service: Bool, connection: Bool?) {
                (service.state.withLock { $0.decodesSky }, service.hub.connectionDecodesSky)
            }
            // gpslocd has handled `app`'s going once its audit line is there: it is written
            // after the state changed (`BrokerService.disconnected`) — read at each write, no timer.
            func gone(_ app: String) async -> Bool {
                await fileText(broker.folder.appendingPathComponent("state/audit.log"), timeout: 30) { text in
                    text.split(separator: "\n").contains {
                        $0.contains(" disconnect uid=") && $0.hasSuffix(" app=\(app)")
                    }
                }
            }
            let (plainFixes, skyLines) = (EventCounter(), EventCounter())
            func program(_ app: String, _ watch: String, sky: EventCounter? = nil) throws -> BrokerLink {
                let link = BrokerLink(
                    path: broker.socket, app: app, afterWelcome: [watch],
                    onMessage: { message in
                        if message.messageClass == "FIX" && sky == nil { plainFixes.increment() }
                        if message.messageClass == "SKY" { sky?.increment() }
                    }, onState: { _ in })
                _ = try link.startAndWait()
                let grant = try link.request(
                    {
                        $0.add("app", app)
                        $0.add("status", "authorizedAlways")
                    }, className: "GRANT", timeout: 10)
                #expect(grant.bool("ok") == true)
                return link
            }
            let plain = try program("plain", BrokerLine("WATCH").line)
            defer { plain.close() }
            #expect(await plainFixes.wait(hangLimit: 30) { $0 >= 3 })
            #expect(decoding() == (false, false))
            // A program that asks for the sky switches it on, and gets SKY lines.
            var skyWatch = BrokerLine("WATCH")
            skyWatch.add("sky", true)
            let skyward = try program("skyward", skyWatch.line, sky: skyLines)
            #expect(await skyLines.wait(hangLimit: 30) { $0 >= 2 })
            #expect(decoding() == (true, true))
            // It stops watching: off; it watches again and goes away: on, then off.
            var stop = BrokerLine("WATCH")
            stop.add("enable", false)
            #expect(skyward.send(stop.line))
            _ = try skyward.request({ _ in }, className: "WHO", timeout: 10)
            #expect(decoding() == (false, false))
            #expect(skyward.send(skyWatch.line))
            _ = try skyward.request({ _ in }, className: "WHO", timeout: 10)
            #expect(decoding() == (true, true))
            // A second one asks too: the first going leaves it on, the second going turns it off.
            let second = try program("second", skyWatch.line, sky: EventCounter())
            skyward.close()
            #expect(await gone("skyward"))
            #expect(service.state.withLock { $0.skyWatchers.count } == 1)
            #expect(decoding() == (true, true))
            second.close()
            #expect(await gone("second"))
            #expect(decoding() == (false, false))
            // Another face's engine (GeoClue's) reads the sky's DOPs: on while it listens.
            let faceSky = EventCounter()
            let token = service.subscribe { event in if case .sky = event { faceSky.increment() } }
            #expect(decoding() == (true, true))
            #expect(await faceSky.wait(hangLimit: 30) { $0 >= 2 })
            service.unsubscribe(token)
            #expect(decoding() == (false, false))
            // The plain program was served throughout.
            let before = plainFixes.value
            #expect(await plainFixes.wait(hangLimit: 30) { $0 > before })
        }
    }
}
