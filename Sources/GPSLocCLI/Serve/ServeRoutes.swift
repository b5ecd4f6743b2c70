import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// Who may ask `gpsloc serve` for what. Every request is checked before anything is read from
/// the hub: a refused request gets an error object and never a location.
///
/// - `Host` must name this server: the address it listens on, `localhost` when that is a
///   loopback address, an IP literal when it listens on every address, or a name the operator
///   allowed (`--allow-host`). A page on another site whose name was re-pointed at this box
///   (DNS rebinding) sends its own name, and is refused.
/// - Beyond loopback every request needs the token (`?token=` once, then a cookie the page
///   keeps; `X-GPSLoc-Token` or `Authorization: Bearer` for scripts).
/// - Requests that change state (`POST /api/start`, `/api/stop`) need the token in
///   `X-GPSLoc-Token` always — a header no other site's page can send without CORS, which this
///   server never grants — and are refused from another `Origin`.
struct ServeAccess: Sendable {
    let host: String
    let port: Int
    let allowedNames: Set<String>
    let token: String
    /// Listening beyond loopback: every request needs the token.
    let tokenRequired: Bool

    var isLoopback: Bool { Self.isLoopback(host) }
    var isWildcard: Bool { host == "0.0.0.0" || host == "::" }

    static func isLoopback(_ host: String) -> Bool { host.hasPrefix("127.") || host == "::1" }

    /// Why `request` is refused (status, code, message), or nil when it may go on.
    func refusal(_ request: HTTPRequest) -> (Int, String, String)? {
        guard let hostHeader = request.header("Host"), hostAllowed(hostHeader) else {
            return (
                403, "forbiddenHost",
                "this server answers only to \(HTTPServer.display(host: host, port: port))"
                    + (allowedNames.isEmpty ? "" : " and \(allowedNames.sorted().joined(separator: ", "))")
                    + " — to reach it by another name, start it with --allow-host NAME"
            )
        }
        if tokenRequired && !hasToken(request) {
            return (
                401, "tokenRequired",
                "this server listens beyond loopback and needs its token: open the URL it printed (with ?token=…)"
            )
        }
        if request.method == "POST" {
            guard let given = request.header("X-GPSLoc-Token"), Self.same(given, token) else {
                return (403, "tokenRequired", "changing tracking needs the page's token (X-GPSLoc-Token)")
            }
            if let origin = request.header("Origin"), origin != "http://\(hostHeader)" {
                return (403, "forbiddenOrigin", "requests from \(origin) may not change tracking on this server")
            }
            if let site = request.header("Sec-Fetch-Site"), site != "same-origin" && site != "none" {
                return (403, "forbiddenOrigin", "a \(site) request may not change tracking on this server")
            }
        }
        return nil
    }

    func hasToken(_ request: HTTPRequest) -> Bool {
        let bearer = request.header("Authorization").flatMap { $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }
        return [request.query["token"], request.cookies["gpsloc_token"], request.header("X-GPSLoc-Token"), bearer]
            .contains { $0.map { Self.same($0, token) } == true }
    }

    /// `Host` as `name[:port]` or `[v6]:port`: this server's port, and a name it answers to.
    func hostAllowed(_ value: String) -> Bool {
        var name = value.lowercased()
        var portPart: String?
        if name.hasPrefix("[") {
            guard let close = name.firstIndex(of: "]") else { return false }
            let rest = name[name.index(after: close)...]
            portPart = rest.hasPrefix(":") ? String(rest.dropFirst()) : (rest.isEmpty ? nil : "bad")
            name = String(name[name.index(after: name.startIndex)..<close])
        } else if let colon = name.lastIndex(of: ":") {
            portPart = String(name[name.index(after: colon)...])
            name = String(name[..<colon])
        }
        guard (portPart.flatMap { Int($0) } ?? 80) == port, portPart != "bad" else { return false }
        if allowedNames.contains(name) { return true }
        if name == host.lowercased() { return true }
        if name == "localhost" && isLoopback { return true }
        // Listening on every address: any address of this box, written as an address (a name
        // cannot be re-pointed at an address literal).
        return isWildcard && Self.isAddressLiteral(name)
    }

    static func isAddressLiteral(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4 && parts.allSatisfy({ UInt8($0) != nil }) { return true }
        return name.contains(":") && name.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
    }

    /// Compares without stopping at the first difference.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        guard x.count == y.count else { return false }
        var difference: UInt8 = 0
        for index in x.indices { difference |= x[index] ^ y[index] }
        return difference == 0
    }

    /// 32 random hex digits from the kernel.
    static func makeToken() -> String {
        var random = SystemRandomNumberGenerator()  // getrandom(2)
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: bytes.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 15)]] }, as: UTF8.self)
    }
}

/// JSON objects of `gpsloc serve`'s own (the rest are `gpsloc watch --json`'s).
enum ServeJSON {
    /// `{"type":"tracking","tracking":true|false,"reason":…|null,"source":"live"|"replay","recording":…|null}`.
    static func tracking(_ state: ServeHub.State, replay: String?) -> [UInt8] {
        var writer = NDJSONWriter()
        writer.object([
            ("type", .string("tracking")), ("tracking", .bool(state.tracking)),
            ("reason", state.trackingReason.map { .string($0) } ?? .null),
            ("source", .string(replay == nil ? "live" : "replay")),
            ("recording", replay.map { .string($0) } ?? .null),
        ])
        return writer.buffer
    }

    /// `{"type":"error","code":…,"message":…}`.
    static func error(code: String, _ message: String) -> [UInt8] {
        var writer = NDJSONWriter()
        writer.error(code: code, message: message)
        return writer.buffer
    }
}
