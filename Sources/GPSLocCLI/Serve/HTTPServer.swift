import CServeHTTP
import Dispatch
import FoundationEssentials
import GNSSCore
import Glibc

/// One HTTP request as `gpsloc serve` sees it: libmicrohttpd has parsed it; these are the parts
/// the server's rules look at.
struct HTTPRequest: Sendable {
    var method: String
    var path: String
    var query: [String: String]
    /// Header names in lower case.
    var headers: [String: String]
    var cookies: [String: String]
    var peer: String

    func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// What the server answers: bytes, or a stream it reads until the stream ends.
enum HTTPResponse: Sendable {
    case bytes(status: Int, type: String, body: [UInt8], headers: [(String, String)])
    case stream(status: Int, type: String, stream: any HTTPStream, headers: [(String, String)])

    static func json(_ status: Int, _ body: [UInt8], headers: [(String, String)] = []) -> HTTPResponse {
        .bytes(status: status, type: "application/json", body: body, headers: headers)
    }
}

/// A response body produced as it goes (Server-Sent Events). `next(max:)` runs on the
/// connection's own thread and may block there until it has something: bytes to send (at most
/// `max`), or nil at the end.
protocol HTTPStream: AnyObject, Sendable {
    func next(max: Int) -> [UInt8]?
}

/// An HTTP server through libmicrohttpd (Debian's libmicrohttpd): a thread per connection, so a
/// client that reads slowly, or not at all, holds only its own thread; connections are limited
/// in all and per address, and one that makes no progress for `timeout` seconds is closed.
final class HTTPServer: Sendable {
    typealias Handler = @Sendable (HTTPRequest) -> HTTPResponse

    struct ListenError: Error, CustomStringConvertible {
        let description: String
    }

    let port: Int
    private let handler: Handler
    /// libmicrohttpd's daemon, as its address (0: stopped).
    private let daemon: Locked<UInt>

    /// Listens on `host` (a numeric IPv4 or IPv6 address) and `port` (0: a free one).
    init(
        host: String, port: Int, connectionLimit: Int = 128, perAddress: Int = 32, timeout: Int = 60,
        handler: @escaping Handler
    )
        throws(ListenError)
    {
        if let problem = gpsloc_http_load() {
            throw ListenError(
                description:
                    "gpsloc serve needs libmicrohttpd (\(String(cString: problem))) — `sudo apt-get install libmicrohttpd12`"
            )
        }
        var bound: Int32 = 0
        let socket = gpsloc_http_listen(host, Int32(port), &bound)
        guard socket >= 0 else {
            let error = errno
            let hint =
                error == EADDRINUSE
                ? " — another program listens there; choose another port with --listen ADDR:PORT"
                : error == EADDRNOTAVAIL
                    ? " — this machine has no such address (`ip addr` lists them)"
                    : error == EACCES ? " — ports below 1024 need root; choose a port above 1024" : ""
            throw ListenError(
                description:
                    "cannot listen on \(Self.display(host: host, port: port)): \(String(cString: strerror(error)))\(hint)"
            )
        }
        self.port = Int(bound)
        self.handler = handler
        daemon = Locked(0)
        let context = Unmanaged.passUnretained(self).toOpaque()
        let started = gpsloc_http_start(
            socket, host.contains(":") ? 1 : 0, UInt32(connectionLimit), UInt32(perAddress), UInt32(timeout),
            { context, connection, url, method, _, _, uploadSize, state in
                guard let context, let connection, let state, let uploadSize else { return .NO }
                // The first call only announces the request (its headers are read): answered
                // on the next, after any body — which is read and dropped, never kept.
                if state.pointee == nil {
                    state.pointee = UnsafeMutableRawPointer(bitPattern: 1)
                    return .YES
                }
                if uploadSize.pointee != 0 {
                    uploadSize.pointee = 0
                    return .YES
                }
                let server = Unmanaged<HTTPServer>.fromOpaque(context).takeUnretainedValue()
                return server.answer(
                    connection, method: method.map { String(cString: $0) } ?? "",
                    url: url.map { String(cString: $0) } ?? "/")
            }, context)
        guard let started else {
            close(socket)
            throw ListenError(
                description: "libmicrohttpd could not start on \(Self.display(host: host, port: self.port))")
        }
        daemon.withLock { $0 = UInt(bitPattern: started) }
    }

    static func display(host: String, port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Stops listening and ends every connection (their streams must end: the caller ends them
    /// first); waits for the connections' threads.
    func stop() {
        let address = daemon.withLock { daemon -> UInt in
            defer { daemon = 0 }
            return daemon
        }
        if let running = OpaquePointer(bitPattern: address) { gpsloc_http_stop(running) }
    }

    private func answer(_ connection: OpaquePointer, method: String, url: String) -> MHD_Result {
        var request = HTTPRequest(method: method, path: url, query: [:], headers: [:], cookies: [:], peer: "")
        request.query = Self.values(connection, kind: .GET_ARGUMENT_KIND, lowercased: false)
        request.headers = Self.values(connection, kind: .HEADER_KIND, lowercased: true)
        request.cookies = Self.values(connection, kind: .COOKIE_KIND, lowercased: false)
        var peer = [CChar](repeating: 0, count: 64)
        gpsloc_http_peer(connection, &peer, peer.count)
        request.peer = String(decoding: peer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let response = handler(request)
        let made: OpaquePointer?
        let status: Int
        switch response {
        case .bytes(let code, let type, let body, let headers):
            status = code
            made = body.withUnsafeBytes { raw in
                gpsloc_http_copied_response(raw.count, raw.baseAddress)
            }
            if let made { Self.add(headers + [("Content-Type", type)], to: made) }
        case .stream(let code, let type, let stream, let headers):
            status = code
            let box = Unmanaged.passRetained(StreamBox(stream)).toOpaque()
            made = gpsloc_http_stream_response(
                16 * 1024,
                { context, _, buffer, max in
                    guard let context, let buffer else { return -1 }
                    let box = Unmanaged<StreamBox>.fromOpaque(context).takeUnretainedValue()
                    guard let bytes = box.stream.next(max: max), !bytes.isEmpty else { return -1 }
                    bytes.withUnsafeBytes { raw in
                        UnsafeMutableRawPointer(buffer).copyMemory(from: raw.baseAddress!, byteCount: raw.count)
                    }
                    return bytes.count
                },
                box,
                { context in
                    if let context { Unmanaged<StreamBox>.fromOpaque(context).release() }
                })
            if let made {
                Self.add(headers + [("Content-Type", type)], to: made)
            } else {
                Unmanaged<StreamBox>.fromOpaque(box).release()
            }
        }
        guard let made else { return .NO }
        return gpsloc_http_queue(connection, UInt32(status), made)
    }

    private static func add(_ headers: [(String, String)], to response: OpaquePointer) {
        for (name, value) in headers { gpsloc_http_add_header(response, name, value) }
    }

    /// Every value of one kind (headers, query arguments, cookies); the first of a repeated name.
    private static func values(_ connection: OpaquePointer, kind: MHD_ValueKind, lowercased: Bool) -> [String: String] {
        final class Collected {
            var values: [String: String] = [:]
            let lowercased: Bool
            init(lowercased: Bool) { self.lowercased = lowercased }
        }
        let collected = Collected(lowercased: lowercased)
        withExtendedLifetime(collected) {
            gpsloc_http_values(
                connection, kind,
                { context, _, key, value in
                    guard let context, let key else { return .YES }
                    let collected = Unmanaged<Collected>.fromOpaque(context).takeUnretainedValue()
                    var name = String(cString: key)
                    if collected.lowercased { name = name.lowercased() }
                    if collected.values[name] == nil {
                        collected.values[name] = value.map { String(cString: $0) } ?? ""
                    }
                    return .YES
                }, Unmanaged.passUnretained(collected).toOpaque())
        }
        return collected.values
    }
}

/// Holds a stream for libmicrohttpd's callbacks (released when the response is done).
private final class StreamBox {
    let stream: any HTTPStream
    init(_ stream: any HTTPStream) { self.stream = stream }
}
