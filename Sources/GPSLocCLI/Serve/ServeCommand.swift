import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import GPSDProcesses
import Glibc
import LocationCore
import LocationWords

/// `gpsloc serve`: a page and an API for the box's receiver, for a phone's or laptop's browser
/// (docs/serve.md). One more face over the same engine and gate as `watch`: the app id is
/// gpsloc's (`-a` as elsewhere), nothing is served without its authorization, and a reduced
/// grant serves reduced positions only.
enum ServeCommand {
    static let help = """
        usage: gpsloc serve [--listen ADDR:PORT] [HOST[:PORT[:DEVICE]] | --replay FILE [--speed X] [--via nmea|gpsd]]
                            [--batch SECONDS] [--token TOKEN] [--allow-host NAME] [--tiles URL] [options]

        A web page for the box's receiver — position, a map with the track, the sky, the latest
        locations, and a start/stop control every open page sees — and its API: GET /api/location,
        GET /api/events (Server-Sent Events), POST /api/start and /api/stop, GET /track.gpx.

          --listen ADDR:PORT         where to listen (default 127.0.0.1:8080; [::1]:8080 for IPv6, port 0
                                     for any free one); beyond loopback every request needs the token
          --replay FILE              serve an NMEA recording instead of gpsd (labelled as a replay)
          --speed X                  replay at X times real time (default 1)
          --via nmea|gpsd            the replay through GPSLocation's parser (default) or a real gpsd
          --batch SECONDS            send locations to pages in batches, every SECONDS (default 5; 0: each at once)
          --token TOKEN              the token pages and scripts must show (default: a new random one;
                                     printed in the URL when listening beyond loopback)
          --allow-host NAME          also answer requests for this host name (repeatable), e.g. boat.local
          --tiles URL                map tiles, a URL with {z}, {x} and {y} (docs/serve.md); default
                                     none: the track is drawn without a map — tiles would tell the
                                     tile server where the receiver is
          --in-use                   count as in use always (for When-In-Use grants); otherwise gpsloc
                                     serve is in use while a page reads its event stream
          --authorization S, --accuracy A
                                     a replay's simulated gate, as `gpsloc replay` takes them
          -a, --app ID, --distance-filter, --min-interval, --desired-accuracy, --max-age, --stale-after
                                     as for `gpsloc watch`
        """

    struct Listen: Equatable {
        var host: String
        var port: Int
    }

    /// `ADDR:PORT` or `[V6]:PORT`; `localhost` is 127.0.0.1.
    static func listen(_ text: String) throws(UsageError) -> Listen {
        let usage = "--listen must be ADDR:PORT (e.g. 127.0.0.1:8080, 0.0.0.0:8080 or [::1]:8080), not \(text)"
        var host: String
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else {
                throw UsageError(usage)
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":"), !text[..<colon].contains(":") else { throw UsageError(usage) }
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
        }
        if host == "localhost" { host = "127.0.0.1" }
        guard let port = Int(portText), (0...65535).contains(port), !host.isEmpty,
            ServeAccess.isAddressLiteral(host)
        else { throw UsageError(usage) }
        return Listen(host: host, port: port)
    }

    static func run(_ argv: [String]) throws(UsageError) -> Int32 {
        let pipeline: Set<String> = [
            "app", "distance-filter", "min-interval", "desired-accuracy", "max-age", "stale-after",
        ]
        let arguments = try Arguments(
            argv,
            valued: pipeline.union([
                "listen", "replay", "speed", "via", "batch", "token", "allow-host", "tiles", "host", "port", "device",
                "timeout", "authorization", "accuracy",
            ]), flags: ["in-use"])
        if arguments.has("help") {
            print(HelpText.wrapped(help))
            return 0
        }
        let options = try PipelineOptions(arguments)
        let listen = try Self.listen(arguments["listen"] ?? "127.0.0.1:8080")
        let batch = try arguments.number("batch", minimum: 0, maximum: 3600) ?? 5
        let tokenRequired = !ServeAccess.isLoopback(listen.host)
        if let token = arguments["token"] {
            guard token.count >= 16,
                token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._~".contains($0)) })
            else {
                throw UsageError("--token must be at least 16 letters, digits, '-', '.', '_' or '~'")
            }
        }
        let token = arguments["token"] ?? ServeAccess.makeToken()
        let names = Set((arguments.repeated["allow-host"] ?? []).map { $0.lowercased() })
        for name in names where name.isEmpty || !name.allSatisfy({ $0.isLetter || $0.isNumber || ".-".contains($0) }) {
            throw UsageError("--allow-host must be a host name (letters, digits, '.', '-'), not \(name)")
        }
        if let tiles = arguments["tiles"],
            !(tiles.hasPrefix("https://") || tiles.hasPrefix("http://")) || ServeServer.origin(of: tiles) == nil
        {
            throw UsageError("--tiles must be an http(s) URL with {z}, {x} and {y}, not \(tiles)")
        }
        let replay = arguments["replay"]
        if replay != nil && (!arguments.positionals.isEmpty || arguments["host"] != nil || arguments["port"] != nil) {
            throw UsageError("serve takes a gpsd or --replay FILE, not both")
        }
        if replay == nil {
            for name in ["speed", "via", "authorization", "accuracy"] where arguments[name] != nil {
                throw UsageError("--\(name) applies to --replay only")
            }
        }
        let hub = ServeHub(
            settings: ServeHub.Settings(
                batch: batch, replay: replay))
        let sink = ServeSink(hub: hub)
        let feed: ServeFeed
        if let replay {
            feed = try ServeFeed.replay(path: replay, arguments: arguments, options: options, sink: sink)
        } else {
            feed = try ServeFeed.live(arguments: arguments, options: options, sink: sink)
        }
        let tracker = ServeTracker(hub: hub, feed: feed, options: options)
        // In use, for a When-In-Use grant, while a page (or a script) reads the event stream — as
        // an app is while its window is in front. From a terminal, or with --in-use, always.
        // Behind gpslocd, gpslocd judges.
        if let authorizer = feed.authorizer, !authorizer.isBrokered, !authorizer.isInUse {
            hub.streamsChanged.withLock { $0 = { streams in authorizer.isInUse = streams > 0 } }
        }
        feed.authorizer?.addObserver { [weak tracker] in
            guard let tracker, let authorizer = feed.authorizer else { return }
            sink.authorization(
                status: authorizer.status, accuracy: authorizer.accuracy, reason: "changed outside gpsloc")
            tracker.authorizationChanged(authorizer.state)
        }
        let server = ServeServer(
            hub: hub,
            access: ServeAccess(
                host: listen.host, port: listen.port, allowedNames: names, token: token, tokenRequired: tokenRequired),
            tiles: arguments["tiles"]
        ) { [weak tracker] on in tracker?.set(on, reason: "from a page") }
        let port: Int
        do {
            port = try server.start()
        } catch {
            standardError("gpsloc serve: \(error.description)\n")
            return 1
        }
        let url =
            "http://\(HTTPServer.display(host: listen.host, port: port))/" + (tokenRequired ? "?token=\(token)" : "")
        standardOutput(Array("gpsloc serve: \(url)\(replay.map { " (replay of \($0))" } ?? "")\n".utf8))
        let finished = DispatchSemaphore(value: 0)
        let signals = SignalTrap { finished.signal() }
        tracker.set(true, reason: nil)
        finished.wait()
        signals.cancel()
        tracker.set(false, reason: "gpsloc serve is stopping")
        server.stop()
        return 0
    }
}
