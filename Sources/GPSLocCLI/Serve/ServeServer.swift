import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// `gpsloc serve`'s routes over its hub: the page and its files, the API, the event stream and
/// the GPX track. Every request passes `ServeAccess` first.
final class ServeServer: Sendable {
    let hub: ServeHub
    /// The port is the one listened on once started (port 0 picks a free one).
    private let accessRules: Locked<ServeAccess>
    var access: ServeAccess { accessRules.withLock { $0 } }
    let tiles: String?
    let leafletFolder: String
    /// Leaflet's files, read once at start (about 200 KB); a missing one is nil.
    private let leafletBytes: [String: [UInt8]]
    private let control: @Sendable (Bool) -> Void
    private let server: Locked<HTTPServer?> = Locked(nil)

    /// `control(true|false)`: start or stop tracking (the page's button, `POST /api/start|stop`).
    init(
        hub: ServeHub, access: ServeAccess, tiles: String?, leafletFolder: String = ServeServer.leafletDefault,
        control: @escaping @Sendable (Bool) -> Void
    ) {
        self.hub = hub
        accessRules = Locked(access)
        self.tiles = tiles
        self.leafletFolder = leafletFolder
        self.control = control
        var bytes: [String: [UInt8]] = [:]
        for name in Self.leafletFiles.keys {
            if let data = FileManager.default.contents(atPath: leafletFolder + "/" + name) { bytes[name] = Array(data) }
        }
        leafletBytes = bytes
    }

    /// Listens; returns the port (the one asked for, or the free one chosen for port 0).
    func start() throws(HTTPServer.ListenError) -> Int {
        let rules = access
        let started = try HTTPServer(host: rules.host, port: rules.port) { [weak self] request in
            self?.answer(request) ?? .json(503, ServeJSON.error(code: "stopping", "gpsloc serve is stopping"))
        }
        accessRules.withLock {
            $0 = ServeAccess(
                host: $0.host, port: started.port, allowedNames: $0.allowedNames, token: $0.token,
                tokenRequired: $0.tokenRequired)
        }
        server.withLock { $0 = started }
        return started.port
    }

    func stop() {
        hub.stop()
        server.withLock { $0 }?.stop()
    }

    /// Where Debian's libjs-leaflet installs Leaflet.
    static let leafletDefault = "/usr/share/javascript/leaflet"

    static let common: [(String, String)] = [
        ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
    ]

    func answer(_ request: HTTPRequest) -> HTTPResponse {
        let access = access
        if let (status, code, message) = access.refusal(request) {
            return .json(status, ServeJSON.error(code: code, message), headers: Self.common)
        }
        let method = request.method == "HEAD" ? "GET" : request.method
        var headers = Self.common
        if let replay = hub.settings.replay { headers.append(("X-GPSLoc-Replay", TerminalText.escaped(replay))) }
        switch (method, request.path) {
        case ("GET", "/"):
            if access.tokenRequired, let token = request.query["token"], ServeAccess.same(token, access.token) {
                headers.append(("Set-Cookie", "gpsloc_token=\(token); HttpOnly; SameSite=Strict; Path=/"))
            }
            headers.append(("Content-Security-Policy", contentPolicy))
            return .bytes(
                status: 200, type: "text/html; charset=utf-8",
                body: Array(
                    ServePage.html(token: access.token, replay: hub.settings.replay, tiles: tiles).utf8),
                headers: headers)
        case ("GET", "/app.js"):
            return .bytes(
                status: 200, type: "text/javascript; charset=utf-8", body: Array(ServeScript.text.utf8),
                headers: headers)
        case ("GET", "/app.css"):
            return .bytes(
                status: 200, type: "text/css; charset=utf-8", body: Array(ServePage.css.utf8), headers: headers)
        case ("GET", "/api/location"):
            return location(headers: headers)
        case ("GET", "/api/status"):
            return .json(200, status(), headers: headers)
        case ("GET", "/api/events"):
            let after = (request.header("Last-Event-ID") ?? request.query["lastEventId"]).flatMap { Int($0) }
            return .stream(
                status: 200, type: "text/event-stream", stream: ServeStream(hub: hub, after: after), headers: headers)
        case ("POST", "/api/start"), ("POST", "/api/stop"):
            control(request.path == "/api/start")
            return .json(200, status(), headers: headers)
        case ("GET", "/api/track"):
            return .json(200, trackPoints(), headers: headers)
        case ("GET", "/track.gpx"):
            headers.append(("Content-Disposition", "attachment; filename=\"track.gpx\""))
            let name = hub.settings.replay.map { "replay of \($0)" } ?? "gpsloc serve"
            return .bytes(
                status: 200, type: "application/gpx+xml", body: GPXWriter.document(name: name, locations: hub.track()),
                headers: headers)
        case ("GET", let path) where path.hasPrefix("/leaflet/"):
            return leaflet(String(path.dropFirst("/leaflet/".count)), headers: headers)
        case (_, "/"), (_, "/api/location"), (_, "/api/status"), (_, "/api/events"), (_, "/track.gpx"):
            return .json(
                405, ServeJSON.error(code: "methodNotAllowed", "\(method) is not served here"), headers: headers)
        case (_, "/api/start"), (_, "/api/stop"):
            return .json(
                405, ServeJSON.error(code: "methodNotAllowed", "use POST with the page's token"), headers: headers)
        default:
            return .json(404, ServeJSON.error(code: "notFound", "no such page: \(request.path)"), headers: headers)
        }
    }

    /// The page's sources: itself, and the map tiles' origin when tiles are configured.
    private var contentPolicy: String {
        var images = "'self' data:"
        if let tiles, let origin = Self.origin(of: tiles) { images += " \(origin)" }
        return "default-src 'self'; img-src \(images); style-src 'self' 'unsafe-inline'; script-src 'self'; "
            + "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    }

    /// `https://tile.example.org` of `https://tile.example.org/{z}/{x}/{y}.png`.
    static func origin(of url: String) -> String? {
        guard let scheme = url.firstRange(of: "://") else { return nil }
        let rest = url[scheme.upperBound...]
        let host = rest.prefix { $0 != "/" }
        guard !host.isEmpty else { return nil }
        return String(url[..<scheme.upperBound]) + host
    }

    /// The latest location, or 503 saying why there is none.
    private func location(headers: [(String, String)]) -> HTTPResponse {
        let (line, why) = hub.state.withLock { state -> ([UInt8]?, [UInt8]) in
            if state.permits, let location = state.location(id: state.newestID) {
                var writer = NDJSONWriter()
                writer.location(location)
                return (writer.buffer, [])
            }
            return (nil, Self.why(state))
        }
        if let line { return .json(200, line, headers: headers) }
        return .json(503, why, headers: headers)
    }

    /// Why there is no location: authorization, tracking stopped, the engine's latest error, or
    /// no fix yet.
    static func why(_ state: ServeHub.State) -> [UInt8] {
        if !state.permits {
            if let problem = state.problem { return ServeJSON.error(code: problem.code.name, problem.description) }
            return ServeJSON.error(
                code: "denied",
                "gpsloc is not authorized to serve locations (\(state.authorization.status.name)) — grant it with `gpsloc auth grant gpsloc --always` (or the app given with -a)"
            )
        }
        if let problem = state.problem { return ServeJSON.error(code: problem.code.name, problem.description) }
        if !state.tracking {
            return ServeJSON.error(
                code: "trackingStopped",
                "tracking is stopped\(state.trackingReason.map { " (\($0))" } ?? "") — press Start on the page or POST /api/start"
            )
        }
        return ServeJSON.error(code: "locationUnknown", "no location yet: waiting for the receiver's first fix")
    }

    /// `/api/status`: tracking, the source, the authorization and what the box holds.
    private func status() -> [UInt8] {
        hub.state.withLock { state in
            var writer = NDJSONWriter()
            writer.object([
                ("type", .string("serve")), ("tracking", .bool(state.tracking)),
                ("source", .string(hub.settings.replay == nil ? "live" : "replay")),
                ("recording", hub.settings.replay.map { .string($0) } ?? .null),
                ("authorization", .string(state.authorization.status.name)),
                ("accuracy", .string(state.authorization.accuracy.name)),
                ("held", .integer(state.count)), ("newestID", .integer(state.newestID)),
                ("batchSeconds", .number(hub.settings.batch, decimals: 3)),
            ])
            return writer.buffer
        }
    }

    /// `/api/track`: `{"newestID":N,"points":[[lat,lon],…]}`, the held locations oldest first
    /// (the page draws the session's track before its stream adds to it).
    private func trackPoints() -> [UInt8] {
        let (newest, locations) = hub.state.withLock { state in (state.newestID, state.permits) }
        var writer = NDJSONWriter()
        writer.object([("newestID", .integer(newest))])
        var bytes = Array(writer.buffer.dropLast(2))  // "}\n"
        bytes += Array(#","points":["#.utf8)
        if locations {
            for (index, location) in hub.track().enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                bytes += Array(
                    "[\(fixedDecimal(location.coordinate.latitude, decimals: 7)),\(fixedDecimal(location.coordinate.longitude, decimals: 7))]"
                        .utf8)
            }
        }
        return bytes + Array("]}\n".utf8)
    }

    /// The files of Debian's libjs-leaflet this page uses, and nothing else.
    static let leafletFiles: [String: String] = [
        "leaflet.js": "text/javascript", "leaflet.css": "text/css", "images/marker-icon.png": "image/png",
        "images/marker-icon-2x.png": "image/png", "images/marker-shadow.png": "image/png",
        "images/layers.png": "image/png", "images/layers-2x.png": "image/png",
    ]

    private func leaflet(_ name: String, headers: [(String, String)]) -> HTTPResponse {
        guard let type = Self.leafletFiles[name] else {
            return .json(404, ServeJSON.error(code: "notFound", "no such file of Leaflet: \(name)"), headers: headers)
        }
        let path = leafletFolder + "/" + name
        guard let bytes = leafletBytes[name] else {
            return .json(
                404,
                ServeJSON.error(
                    code: "leafletMissing", "\(path) cannot be read — install Debian's libjs-leaflet for the map"),
                headers: headers)
        }
        return .bytes(
            status: 200, type: type, body: bytes,
            headers: headers.filter { $0.0 != "Cache-Control" } + [("Cache-Control", "max-age=3600")])
    }
}
