import Foundation
import GNSSCore
import GPSLocation
import TestSupport
import Testing

/// A one-client TCP server on a free loopback port that sends `lines` in chunks of the sizes
/// `chunk` gives (each its own segment: TCP_NODELAY), then closes: how gpsd's lines reach
/// `GPSDConnection` when the network splits them anywhere or delivers many at once.
private final class LineServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32

    /// A listening socket on a free loopback port.
    static func listening() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard listen(fd, 4) == 0 else { throw POSIXError(.EADDRINUSE) }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// Ends a client: closing with its WATCH unread would reset the connection and could drop
    /// lines not yet read, so our side ends first, then `awaitClose`.
    static func finish(_ client: Int32) {
        shutdown(client, Int32(SHUT_WR))
        awaitClose(client)
    }

    /// Reads (and drops) what the client sends until it closes the connection, then closes ours.
    static func awaitClose(_ client: Int32) {
        var sink = [UInt8](repeating: 0, count: 4096)
        while sink.withUnsafeMutableBytes({ recv(client, $0.baseAddress, $0.count, 0) }) > 0 {}
        close(client)
    }

    /// Listens on a free loopback port and serves the first client with `serve` on a thread of
    /// its own.
    static func servingOne(_ serve: @escaping @Sendable (Int32) -> Void) throws -> (fd: Int32, port: Int) {
        let server = try listening()
        Thread.detachNewThread {
            let client = accept(server.fd, nil, nil)
            if client >= 0 { serve(client) }
        }
        return server
    }

    init(payload: [UInt8], chunk: @escaping @Sendable (Int) -> Int) throws {
        (listener, port) = try Self.servingOne { client in
            var noDelay: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
            var offset = 0
            var index = 0
            while offset < payload.count {
                let size = min(max(1, chunk(index)), payload.count - offset)
                let sent = payload[offset..<offset + size].withUnsafeBytes {
                    send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if sent <= 0 { break }
                offset += sent
                index += 1
            }
            Self.finish(client)
        }
    }

    deinit { close(listener) }
}

/// Plays a script to one client: texts to send, and gates to wait at (opened by the test when
/// its client has seen what it must); then keeps the connection open (silent) until the client
/// closes it.
private final class ScriptServer: @unchecked Sendable {
    enum Step {
        case send(String)
        case wait(DispatchSemaphore)
    }
    let port: Int
    private let listener: Int32

    init(_ steps: [Step]) throws {
        (listener, port) = try LineServer.servingOne { client in
            for step in steps {
                switch step {
                case .send(let text): _ = text.withCString { send(client, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
                case .wait(let gate): gate.wait()
                }
            }
            LineServer.awaitClose(client)
        }
    }

    deinit { close(listener) }
}

@Suite("reading gpsd's stream: framing and decoding", .timeLimit(.minutes(5)))
struct GPSDReaderTests {
    /// gpsd 3.22's greeting line.
    static let version = #"{"class":"VERSION","release":"3.22","rev":"3.22","proto_major":3,"proto_minor":14}"#

    /// gpsd's greeting, its device list, and a recording's TPV and SKY reports with a GST and
    /// a deactivation among them: every kind of line the reader treats differently.
    static func stream() throws -> [String] {
        let recorded = try String(
            contentsOf: Paths.fixtures.appendingPathComponent("drive-10hz-multi.gpsd.json"), encoding: .utf8
        ).split(whereSeparator: \.isNewline).prefix(120).map(String.init)
        let greeting = [
            Self.version,
            #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyACM0","driver":"NMEA0183","activated":"2026-06-15T08:00:00.000Z","flags":1,"native":0,"bps":9600,"parity":"N","stopbits":1,"cycle":1.00}]}"#,
            #"{"class":"WATCH","enable":true,"json":true,"nmea":false,"raw":0,"scaled":false,"timing":false,"split24":false,"pps":false}"#,
        ]
        let gst =
            #"{"class":"GST","device":"/dev/ttyACM0","time":"2026-06-15T08:00:01.000Z","rms":1.500,"major":2.100,"minor":1.200,"orient":35.0,"lat":1.600,"lon":1.300,"alt":2.800}"#
        let deactivation = #"{"class":"DEVICE","path":"/dev/ttyACM0","activated":0}"#
        return greeting + recorded.prefix(60) + [gst] + recorded.dropFirst(60) + [deactivation]
    }

    /// What each line gives decoded alone by libgps (`gps_unpack`), with SKY as `.other` when
    /// it is not wanted.
    static func expected(_ lines: [String], sky: Bool) -> [GPSDEvent] {
        let decoder = GPSDJSONDecoder()
        return lines.map { line in
            if !sky && line.hasPrefix(#"{"class":"SKY""#) { return .other(className: "SKY") }
            return decoder.decode(line) ?? .other(className: "undecodable")
        }
    }

    /// Every report a source read from `server` until the server closed.
    static func reports(port: Int, sky: Bool) async -> [GPSDEvent] {
        let source = GPSDConnection(endpoint: GPSDEndpoint(port: port), noDataTimeout: nil, decodesSky: sky)
        var reports: [GPSDEvent] = []
        for await event in source.events() {
            if event.isReport { reports.append(event) }
        }
        return reports
    }

    @Test(
        "lines split anywhere or many in one read give what each line gives alone",
        arguments: [
            ("whole", 1 << 20), ("byte by byte", 1), ("7 bytes", 7), ("uneven", -1), ("one line less a byte", -2),
        ])
    func framing(_ shape: (name: String, size: Int)) async throws {
        let lines = try Self.stream()
        let payload = Array(lines.map { $0 + "\r\n" }.joined().utf8)
        let size = shape.size
        let server = try LineServer(
            payload: payload,
            chunk: { index in
                switch size {
                case -1: [1, 300, 17, 4_000, 2, 9_000][index % 6]
                case -2: 364
                default: size
                }
            })
        let reports = await Self.reports(port: server.port, sky: true)
        let expected = Self.expected(lines, sky: true)
        #expect(reports.count == expected.count, "\(shape.name)")
        #expect(reports == expected, "\(shape.name)")
        #expect(reports.contains { if case .sky = $0 { true } else { false } })
        #expect(reports.last == .device(DeviceEvent(path: "/dev/ttyACM0", driver: nil, activated: false)))
        #expect(
            reports.dropFirst().first
                == .devices([DeviceEvent(path: "/dev/ttyACM0", driver: "NMEA0183", activated: true, baudRate: 9600)]))
        withExtendedLifetime(server) {}
    }

    /// gpslocd's reading (`start(_:burstEnded:)`): the same reports, each burst's end said after
    /// its last report and before the thread waits again — never an empty burst, and never a
    /// report left unended.
    @Test("with burst ends: the same reports, every burst ended after its reports", arguments: [1 << 20, 7, 1_500])
    func burstEnds(_ size: Int) async throws {
        let lines = try Self.stream()
        let server = try LineServer(payload: Array(lines.map { $0 + "\r\n" }.joined().utf8), chunk: { _ in size })
        enum Heard: Equatable {
            case event(GPSDEvent)
            case burstEnd
        }
        let heard = Watched<[Heard]>([])
        let source = GPSDConnection(endpoint: GPSDEndpoint(port: server.port), noDataTimeout: nil, decodesSky: true)
        source.start(
            { event in heard.withLock { $0.append(.event(event)) } },
            burstEnded: { heard.withLock { $0.append(.burstEnd) } })
        #expect(
            await heard.wait(timeout: 60) {
                $0.contains { if case .event(.failed) = $0 { true } else { false } }
            })
        source.stop()
        let all = heard.withLock { $0 }
        let reports = all.compactMap { if case .event(let event) = $0, event.isReport { event } else { nil } }
        #expect(reports == Self.expected(lines, sky: true))
        #expect(all.contains(.burstEnd))
        // No burst ends without a report in it; the last report is followed by an end.
        var sinceEnd = 0
        for entry in all {
            switch entry {
            case .burstEnd:
                #expect(sinceEnd > 0, "an empty burst")
                sinceEnd = 0
            case .event(let event): if event.isReport { sinceEnd += 1 }
            }
        }
        #expect(sinceEnd == 0, "\(sinceEnd) report(s) after the last burst's end")
        withExtendedLifetime(server) {}
    }

    /// gpslocd's switch (`decodesSky` set while the connection runs, from its handler as the
    /// hub's lock does): the line after the switch follows it, none before.
    @Test("SKY decoding switched on and off while reading: each line after a switch follows it")
    func skySwitched() async throws {
        let lines = try Self.stream()
        let server = try LineServer(payload: Array(lines.map { $0 + "\r\n" }.joined().utf8), chunk: { _ in 1_500 })
        let source = GPSDConnection(endpoint: GPSDEndpoint(port: server.port), noDataTimeout: nil, decodesSky: false)
        let switchOn = 40
        let reports = Watched<[GPSDEvent]>([])
        source.start { event in
            guard event.isReport else { return }
            let count = reports.withLock { reports in
                reports.append(event)
                return reports.count
            }
            // On after the 40th report; off again after the first SKY decoded.
            if count == switchOn { source.decodesSky = true }
            if case .sky = event { source.decodesSky = false }
        }
        #expect(await reports.wait(timeout: 60) { $0.count == lines.count })
        source.stop()
        // The same rule over the lines, each decoded alone.
        var decoding = false
        var expected: [GPSDEvent] = []
        for (index, line) in lines.enumerated() {
            let event = Self.expected([line], sky: decoding)[0]
            expected.append(event)
            if index + 1 == switchOn { decoding = true }
            if case .sky = event { decoding = false }
        }
        let read = reports.withLock { $0 }
        #expect(read == expected)
        let skyLines = lines.count { $0.hasPrefix(#"{"class":"SKY""#) }
        let decoded = read.count { if case .sky = $0 { true } else { false } }
        // Several SKY lines on each side of the one decoded.
        #expect(decoded == 1 && skyLines > 4, "\(decoded) of \(skyLines)")
        #expect(lines.prefix(switchOn).contains { $0.hasPrefix(#"{"class":"SKY""#) })
        withExtendedLifetime(server) {}
    }

    @Test("without sky, SKY lines are left undecoded and everything else is the same")
    func withoutSky() async throws {
        let lines = try Self.stream()
        let server = try LineServer(payload: Array(lines.map { $0 + "\r\n" }.joined().utf8), chunk: { _ in 1_500 })
        let reports = await Self.reports(port: server.port, sky: false)
        #expect(reports == Self.expected(lines, sky: false))
        #expect(reports.contains(.other(className: "SKY")))
        #expect(
            reports.contains(
                .errorEstimate(
                    ReceiverErrorEstimate(
                        time: ISO8601.parse("2026-06-15T08:00:01.000Z"), latitude: 1.6, longitude: 1.3, altitude: 2.8)))
        )
        withExtendedLifetime(server) {}
    }

    @Test("stop() from another thread while reports flow: nothing arrives after it returns", arguments: 0..<10)
    func stopWhileFlowing(_ round: Int) async throws {
        let lines = try Self.stream()
        let payload = Array(Array(repeating: lines.map { $0 + "\n" }.joined(), count: 50).joined().utf8)
        let server = try LineServer(payload: payload, chunk: { _ in 512 })
        let source = GPSDConnection(endpoint: GPSDEndpoint(port: server.port), noDataTimeout: nil)
        let stopped = Locked(false)
        let late = Locked(0)
        let seen = EventCounter()
        source.start { _ in
            if stopped.withLock({ $0 }) { late.withLock { $0 += 1 } }
            seen.increment()
        }
        // The stop lands at a chosen point of the stream: after 1 + 7 × round events.
        #expect(await seen.wait { $0 > round * 7 })
        // stop() waits for the reader thread: no event can be delivered once it has returned.
        source.stop()
        stopped.withLock { $0 = true }
        #expect(late.withLock { $0 } == 0)
        withExtendedLifetime(server) {}
    }

    @Test("stop() from inside the handler ends the reports at once")
    func stopInsideHandler() async throws {
        let lines = try Self.stream()
        let server = try LineServer(payload: Array(lines.map { $0 + "\n" }.joined().utf8), chunk: { _ in 1 << 20 })
        let source = GPSDConnection(endpoint: GPSDEndpoint(port: server.port), noDataTimeout: nil)
        let fixes = Locked(0)
        let after = Locked(0)
        let third = ExitLatch()
        source.start { event in
            guard case .fix = event else { return }
            if fixes.withLock({ $0 }) >= 3 {
                after.withLock { $0 += 1 }
                return
            }
            fixes.withLock { $0 += 1 }
            if fixes.withLock({ $0 }) == 3 {
                source.stop()
                third.finish(0)
            }
        }
        await third.wait()
        // Once the reader's thread has ended nothing can follow, buffered reports included.
        _ = try await offConcurrencyThreads { source.waitUntilStopped() }
        #expect(after.withLock { $0 } == 0, "no report after stop() inside the handler")
        withExtendedLifetime(server) {}
    }

    @Test("silence: reported once after the timeout, again after fixes return and stop; none while they flow")
    func silence() async throws {
        let tpv =
            #"{"class":"TPV","device":"/dev/ttyACM0","mode":3,"time":"2026-06-15T08:00:00.000Z","lat":51.45,"lon":-2.59}"#
            + "\n"
        let greeting = Self.version + "\n"
        // Six fixes, silence until the client has reported it, six fixes again, then silence.
        let silenceReported = DispatchSemaphore(value: 0)
        var steps: [ScriptServer.Step] = [.send(greeting)]
        steps += Array(repeating: .send(tpv), count: 6)
        steps.append(.wait(silenceReported))
        steps += Array(repeating: .send(tpv), count: 6)
        let server = try ScriptServer(steps)
        let source = GPSDConnection(endpoint: GPSDEndpoint(port: server.port), noDataTimeout: .milliseconds(400))
        let start = Date()
        let events = Locked<[(String, Double)]>([])
        let changes = EventCounter()
        source.start { event in
            let name: String? =
                switch event {
                case .noData: "noData"
                case .fix: "fix"
                default: nil
                }
            guard let name else { return }
            let silences = events.withLock {
                $0.append((name, Date().timeIntervalSince(start)))
                return $0.count { $0.0 == "noData" }
            }
            if name == "noData" && silences == 1 { silenceReported.signal() }
            changes.increment()
        }
        #expect(
            await changes.wait { _ in
                let seen = events.withLock { $0 }
                return seen.count { $0.0 == "noData" } == 2 && seen.count { $0.0 == "fix" } == 12
            })
        source.stop()
        let seen = events.withLock { $0 }
        let silences = seen.filter { $0.0 == "noData" }.map(\.1)
        let fixes = seen.filter { $0.0 == "fix" }.map(\.1)
        #expect(fixes.count == 12)
        #expect(silences.count == 2, "\(seen)")
        if silences.count == 2, fixes.count == 12 {
            // Each silence comes 0.4 s after the last fix before it (loosely: the suite runs in parallel).
            #expect(silences[0] - fixes[5] >= 0.39 && silences[0] - fixes[5] < 0.9)
            #expect(silences[0] < fixes[6], "the first silence is reported before fixes return")
            #expect(silences[1] - fixes[11] >= 0.39 && silences[1] - fixes[11] < 0.9)
        }
        withExtendedLifetime(server) {}
    }

    @Test("stop() ends a read blocked on a connection that sends nothing, at once")
    func stopWhileBlocked() async throws {
        let greeting = Self.version + "\n"
        let server = try ScriptServer([.send(greeting)])
        let source = GPSDConnection(endpoint: GPSDEndpoint(port: server.port), noDataTimeout: nil)
        let heard = EventCounter()
        source.start { _ in heard.increment() }
        #expect(await heard.wait { $0 >= 2 }, "connected and greeted")
        let began = Date()
        source.stop()
        #expect(Date().timeIntervalSince(began) < 1, "stop() did not wait for data that never comes")
        withExtendedLifetime(server) {}
    }
}
