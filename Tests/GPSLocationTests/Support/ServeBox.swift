import Foundation
import GNSSCore
import TestSupport
import Testing

/// `gpsloc serve` started as a user starts it, and an HTTP client that writes requests byte for
/// byte (a foreign `Host`, an `Origin`, a missing token) and reads replies and event streams on
/// a thread of its own (`LineReader`), so no concurrency thread waits on a socket.
final class ServeBox: Sendable {
    let program: RunningProgram
    let log: LineReader
    let url: String
    let port: Int
    let configHome: URL

    static let chromium = "/usr/bin/chromium"
    static let chromedriver = "/usr/bin/chromedriver"
    /// Whether the browser test can run here (always under CI, where a missing program fails).
    static let browserAvailable =
        Conditions.underCI
        || (FileManager.default.isExecutableFile(atPath: chromium)
            && FileManager.default.isExecutableFile(atPath: chromedriver)
            && FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/selenium"))
    static let browserMissingReason: Comment =
        "browser test skipped: install chromium, chromium-driver and python3-selenium (scripts/setup.sh does)"
    /// The Python with Mozilla's marionette_driver that drives Firefox ESR (scripts/setup.sh).
    static let marionettePython = Paths.packageRoot.appendingPathComponent(".build/marionette/bin/python").path
    /// Whether the Firefox test can run here (always under CI, where a missing program fails).
    static let firefoxAvailable =
        Conditions.underCI
        || (FileManager.default.isExecutableFile(atPath: "/usr/bin/firefox-esr")
            && FileManager.default.isExecutableFile(atPath: marionettePython))
    static let firefoxMissingReason: Comment =
        "Firefox test skipped: install firefox-esr and run scripts/setup.sh (marionette_driver into .build/marionette)"

    private init(program: RunningProgram, log: LineReader, url: String, port: Int, configHome: URL) {
        self.program = program
        self.log = log
        self.url = url
        self.port = port
        self.configHome = configHome
    }

    /// Starts `gpsloc serve ARGUMENTS` on a free port (unless `--listen` is among them) and
    /// waits for the URL it prints.
    static func start(_ arguments: [String], configHome: URL? = nil, environment extra: [String: String] = [:])
        async throws -> ServeBox
    {
        let home = try configHome ?? GPSLocBinary.makeConfigHome()
        var all = ["serve"] + arguments
        if !arguments.contains("--listen") { all += ["--listen", "127.0.0.1:0"] }
        var environment = GPSLocBinary.environment(configHome: home).merging(extra) { $1 }
        environment["GPSLOCATION_BROKER"] = environment["GPSLOCATION_BROKER"] ?? "none"
        let (program, log) = try launchReading(GPSLocBinary.path, all, environment: environment)
        let started = await log.waitFor(timeout: 60) { lines in
            lines.contains { $0.text.hasPrefix("gpsloc serve: http://") }
        }
        guard started, let line = log.snapshot.first(where: { $0.text.hasPrefix("gpsloc serve: http://") })?.text,
            let address = line.split(separator: " ").dropFirst(2).first,
            let portText = address.split(separator: "/")[1].split(separator: ":").last,
            let port = Int(portText)
        else {
            program.kill(SIGKILL)
            throw ServeBoxError("gpsloc serve printed no URL: \(log.snapshot.map(\.text))")
        }
        return ServeBox(program: program, log: log, url: String(address), port: port, configHome: home)
    }

    func stop() { program.kill(SIGKILL) }

    /// One request, `Connection: close`, HTTP/1.0 (so no chunking): the reply once it is whole.
    func request(
        _ method: String = "GET", _ path: String, host: String? = nil, headers: [String: String] = [:]
    ) async throws -> HTTPReply {
        let (_, reader) = try open(method, path, host: host, headers: headers)
        let lines = await reader.finish().map(\.text)
        return HTTPReply(lines: lines)
    }

    /// Opens `path` and reads it as it comes (an event stream); end it with `close()`.
    func stream(_ path: String = "/api/events", headers: [String: String] = [:]) throws -> EventStream {
        let (socket, reader) = try open("GET", path, host: nil, headers: headers)
        return EventStream(reader, socket: socket)
    }

    private func open(_ method: String, _ path: String, host: String?, headers: [String: String]) throws -> (
        Int32, LineReader
    ) {
        let socket = try Self.connect(port: port)
        var text = "\(method) \(path) HTTP/1.0\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        text += "Content-Length: 0\r\n\r\n"
        let bytes = Array(text.utf8)
        guard write(socket, bytes, bytes.count) == bytes.count else {
            close(socket)
            throw ServeBoxError("cannot send the request: \(String(cString: strerror(errno)))")
        }
        return (socket, LineReader(descriptor: socket))
    }

    /// A socket connected to 127.0.0.1:`port`.
    static func connect(port: Int) throws -> Int32 {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            close(socket)
            throw ServeBoxError("cannot connect to 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        return socket
    }
}

/// A reply: status, headers (names in lower case), body.
struct HTTPReply: Sendable {
    var status = 0
    var headers: [String: String] = [:]
    var body = ""

    init(lines: [String]) {
        var index = 0
        if let first = lines.first { status = Int(first.split(separator: " ").dropFirst().first ?? "") ?? 0 }
        index = 1
        while index < lines.count {
            let line = lines[index].trimmingCharacters(in: .whitespacesAndNewlines)
            index += 1
            if line.isEmpty { break }
            if let colon = line.firstIndex(of: ":") {
                headers[line[..<colon].lowercased()] = line[line.index(after: colon)...]
                    .trimmingCharacters(in: .whitespaces)
            }
        }
        body = lines[min(index, lines.count)...].joined(separator: "\n")
    }

    var json: [String: Any]? { try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any] }
}

/// Server-Sent Events as they arrive: each with its name, id and data.
final class EventStream: Sendable {
    struct Event: Sendable {
        var name: String
        var id: Int?
        var data: String

        /// A `locations` event's batch.
        var locations: [[String: Any]] {
            (try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [[String: Any]]) ?? []
        }
    }

    let reader: LineReader
    private let socket: Int32

    init(_ reader: LineReader, socket: Int32) {
        self.reader = reader
        self.socket = socket
    }

    /// Ends the stream from this side (the server sees the connection go).
    func close() { shutdown(socket, Int32(SHUT_RDWR)) }

    /// The events whole so far (a blank line ends each).
    var events: [Event] { Self.parse(reader.snapshot.map(\.text)) }

    static func parse(_ lines: [String]) -> [Event] {
        var events: [Event] = []
        var current = Event(name: "message", id: nil, data: "")
        var inBody = false
        for raw in lines {
            let line = raw.hasSuffix("\r") ? String(raw.dropLast()) : raw
            if !inBody {
                if line.isEmpty { inBody = true }
                continue
            }
            if line.isEmpty {
                if !current.data.isEmpty { events.append(current) }
                current = Event(name: "message", id: nil, data: "")
            } else if line.hasPrefix("event: ") {
                current.name = String(line.dropFirst(7))
            } else if line.hasPrefix("id: ") {
                current.id = Int(line.dropFirst(4))
            } else if line.hasPrefix("data: ") {
                current.data += String(line.dropFirst(6))
            }
        }
        return events
    }

    /// Waits until `condition` holds of the events (true), or the stream ends or `timeout`
    /// passes (false).
    func waitFor(timeout: Double = 60, _ condition: @escaping @Sendable ([Event]) -> Bool) async -> Bool {
        await reader.waitFor(timeout: timeout) { lines in condition(Self.parse(lines.map(\.text))) }
    }
}

struct ServeBoxError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
