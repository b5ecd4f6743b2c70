import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import GPSDProcesses
import Glibc
import LocationCore
import LocationWords

/// What the engine says, into the hub (and the operator's terminal for problems).
final class ServeSink: UpdateSink {
    let hub: ServeHub

    init(hub: ServeHub) { self.hub = hub }

    var showsSky: Bool { true }

    func location(_ location: LocationValue) { hub.add(location) }

    func error(_ error: CLError) {
        var writer = NDJSONWriter()
        writer.error(error)
        hub.status(writer.buffer, problem: error)
        standardError("gpsloc serve: \(terminalSafe(error.description))\n")
    }

    func diagnostic(code: String, message: String) {
        var writer = NDJSONWriter()
        writer.diagnostic(code: code, message: message)
        hub.status(writer.buffer)
        standardError("gpsloc serve: \(terminalSafe(message))\n")
    }

    func device(_ device: DeviceEvent) {
        var writer = NDJSONWriter()
        writer.device(device)
        hub.status(writer.buffer)
    }

    func authorization(status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization, reason: String?) {
        hub.authorization(status: status, accuracy: accuracy, reason: reason)
    }

    func sky(_ sky: SkyView) { hub.sky(sky) }
    func heading(_ heading: HeadingValue) {}
    func region(_ event: RegionEvent) {}
    func visit(_ visit: VisitRecord) {}
    func finish() {}
}

/// Where a serve's locations come from: gpsd (through gpslocd when it is in force) with the
/// app's real authorization, or a recording with a simulated gate (as `gpsloc replay`).
struct ServeFeed: Sendable {
    let sink: ServeSink
    /// The live app's authorization (nil for a replay: its gate is simulated and fixed).
    let authorizer: LocationAuthorizer?
    /// The gate of each run: the live app's authorizer, followed, or the replay's fixed one.
    let gate: @Sendable () -> EngineSession.Gate
    /// A new source for each start; `cleanup` ends what it started (gpsfake).
    let makeSource: @Sendable () -> Result<(any LocationSource, cleanup: @Sendable () -> Void), CLError>
    let isReplay: Bool

    static func live(arguments: Arguments, options: PipelineOptions, sink: ServeSink) throws(UsageError) -> ServeFeed {
        let timeout = try arguments.number("timeout", minimum: 0.1, maximum: 86_400) ?? 5
        let endpoint = try arguments.gpsdEndpoint("serve")
        let (authorizer, broker) = try WatchCommand.appAuthorizer(
            "serve", arguments, options, sink: sink,
            usageDescription: "gpsloc serve shows the receiver's location on a web page")
        sink.authorization(status: authorizer.status, accuracy: authorizer.accuracy, reason: nil)
        return ServeFeed(
            sink: sink, authorizer: authorizer, gate: { .following(authorizer) },
            makeSource: {
                let source: any LocationSource =
                    broker.map { BrokerLocationSource(socketPath: $0, appID: options.appID, sky: true) }
                    ?? GPSDLocationSource(
                        endpoint: endpoint, noDataTimeout: .milliseconds(Int64(timeout * 1000)),
                        reconnect: ReconnectPolicy(), sky: true)
                return .success((source, cleanup: {}))
            }, isReplay: false)
    }

    static func replay(path: String, arguments: Arguments, options: PipelineOptions, sink: ServeSink) throws(UsageError)
        -> ServeFeed
    {
        let via = arguments["via"] ?? "nmea"
        guard via == "nmea" || via == "gpsd" else { throw UsageError("--via must be nmea or gpsd, not \(via)") }
        let speed = try arguments.number("speed", minimum: 0.001, maximum: 1_000_000) ?? 1
        let statusName = arguments["authorization"] ?? "always"
        guard let status = ReplayCommand.statuses[statusName] else {
            throw UsageError(
                "--authorization must be one of \(ReplayCommand.statuses.keys.sorted().joined(separator: ", ")), not \(statusName)"
            )
        }
        let accuracyName = arguments["accuracy"] ?? "full"
        guard accuracyName == "full" || accuracyName == "reduced" else {
            throw UsageError("--accuracy must be full or reduced, not \(accuracyName)")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw UsageError("cannot read the recording \(path) — check the path and its permissions")
        }
        let accuracy: CLAccuracyAuthorization = accuracyName == "full" ? .fullAccuracy : .reducedAccuracy
        let authorization = AuthorizationState(appID: options.appID, status: status, accuracy: accuracy, isInUse: true)
        sink.diagnostic(
            code: "replay",
            message:
                "replaying the recording \(path) via \(via == "nmea" ? "GPSLocation's NMEA parser" : "gpsd (gpsfake)") — recorded data, not a live receiver"
        )
        sink.authorization(status: status, accuracy: accuracy, reason: "simulated for replay")
        return ServeFeed(
            sink: sink, authorizer: nil,
            gate: { .fixed(authorization, fuzzer: LocationFuzzer(store: .user, appID: options.appID, live: false)) },
            makeSource: {
                guard via == "gpsd" else {
                    return .success((NMEAReplaySource(path: path, pacing: .realTime(speed: speed)), cleanup: {}))
                }
                do throws(GPSFakeError) {
                    let server = try GPSFakeServer.startedBlocking(
                        log: URL(fileURLWithPath: path), cycle: Self.gpsfakeCycle(path: path, speed: speed))
                    server.waitUntilDeviceAttachedBlocking()
                    let source = GPSDLocationSource(
                        endpoint: server.endpoint, noDataTimeout: nil, reconnect: nil, isLive: false, sky: true)
                    return .success((source, cleanup: { server.stop() }))
                } catch {
                    return .failure(
                        CLError(
                            .locationUnknown, message: error.description, reason: .sourceFailed, underlyingError: error)
                    )
                }
            }, isReplay: true)
    }
}

extension ServeFeed {
    /// gpsfake's delay between sentences (`-c`) that plays `path` at `speed` times real time:
    /// the recording's seconds (distinct whole seconds of its RMC and GGA times) over its
    /// sentences. Nil when it has no times (gpsfake's own pace then).
    static func gpsfakeCycle(path: String, speed: Double) -> Double? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        var sentences = 0
        var seconds = Set<Substring>()
        for line in data.split(separator: UInt8(ascii: "\n")) where line.first == UInt8(ascii: "$") {
            sentences += 1
            let text = String(decoding: line, as: UTF8.self)
            let fields = text.split(separator: ",", maxSplits: 2, omittingEmptySubsequences: false)
            guard fields.count > 1, fields[0].hasSuffix("RMC") || fields[0].hasSuffix("GGA"), fields[1].count >= 6
            else { continue }
            seconds.insert(fields[1].prefix(6))
        }
        guard sentences > 0, !seconds.isEmpty else { return nil }
        return Double(seconds.count) / Double(sentences) / speed
    }
}

/// Starts and stops the engine for the page's control: one `EngineSession` at a time (the
/// driver `watch` uses); a stopped session's source is closed (gpsd may power the receiver
/// down). A replay starts again from the recording's beginning.
final class ServeTracker: Sendable {
    private struct State {
        var session: EngineSession?
        var cleanup: (@Sendable () -> Void)?
        var wanted = false
        var generation = 0
    }
    private let state = Locked(State())
    private let hub: ServeHub
    private let feed: ServeFeed
    private let options: PipelineOptions

    init(hub: ServeHub, feed: ServeFeed, options: PipelineOptions) {
        self.hub = hub
        self.feed = feed
        self.options = options
    }

    func set(_ on: Bool, reason: String?) {
        if on { start() } else { stop(reason: reason ?? "stopped") }
    }

    private func start() {
        let generation = state.withLock { state -> Int? in
            state.wanted = true
            guard state.session == nil else { return nil }
            state.generation += 1
            return state.generation
        }
        guard let generation else { return }
        let made = feed.makeSource()
        guard case .success(let (source, cleanup)) = made else {
            if case .failure(let error) = made { feed.sink.error(error) }
            state.withLock { $0.wanted = false }
            hub.tracking(false, reason: "the recording could not be played")
            return
        }
        let session = EngineSession(
            sink: feed.sink, options: options, gate: feed.gate(), source: source,
            endingReasons: [.notDetermined, .notInUse]
        ) { [weak self] error in self?.ended(generation: generation, error) }
        let current = state.withLock { state -> Bool in
            guard state.generation == generation, state.wanted else { return false }
            state.session = session
            state.cleanup = cleanup
            return true
        }
        guard current else {
            cleanup()
            return
        }
        hub.tracking(true, reason: nil)
        session.start(options)
    }

    private func stop(reason: String) {
        let (session, cleanup) = state.withLock { state -> (EngineSession?, (@Sendable () -> Void)?) in
            state.wanted = false
            state.generation += 1
            defer {
                state.session = nil
                state.cleanup = nil
            }
            return (state.session, state.cleanup)
        }
        session?.stop()
        cleanup?()
        hub.tracking(false, reason: reason)
    }

    /// The run ended by itself: the recording is over, or the gate refused.
    private func ended(generation: Int, _ error: CLError?) {
        let (session, cleanup) = state.withLock { state -> (EngineSession?, (@Sendable () -> Void)?) in
            guard state.generation == generation else { return (nil, nil) }
            defer {
                state.session = nil
                state.cleanup = nil
            }
            return (state.session, state.cleanup)
        }
        guard session != nil || cleanup != nil else { return }
        // Not on the runner's own queue, which is delivering this end.
        DispatchQueue.global().async {
            session?.stop()
            cleanup?()
        }
        hub.tracking(
            false, reason: error?.description ?? (feed.isReplay ? "the recording has ended" : "updates ended"))
        // The gate ended the run, but the authorization changed meanwhile (a page opened just as
        // the run ended for want of one): start again if it allows now and tracking is wanted.
        if let error, error.reason == .notInUse || error.reason == .notDetermined,
            feed.authorizer?.state.allowsDelivery == true
        {
            DispatchQueue.global().async { [weak self] in self?.resume() }
        }
    }

    /// Starts again after a run the gate ended, if tracking is still wanted.
    private func resume() {
        guard state.withLock({ $0.wanted && $0.session == nil }) else { return }
        start()
    }

    /// The live app's authorization changed: the running engine follows its authorizer by
    /// itself; a run the gate ended starts again once it allows, if tracking is wanted.
    func authorizationChanged(_ authorization: AuthorizationState) {
        let restart = state.withLock { state in
            state.session == nil && state.wanted && authorization.status.isAuthorized
        }
        if restart { start() }
    }
}
