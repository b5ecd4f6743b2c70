import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import GPSDProcesses
import Glibc
import LocationCore
import LocationWords

enum ReplayCommand {
    static let help = """
        usage: gpsloc replay FILE|- [--via nmea|gpsd] [--speed X | --fast] [--authorization S] [--accuracy A] [options]

        Plays an NMEA recording through the same pipeline as live data. The output says it is a
        replay and of which file. A replay shows no live position, so it runs against a simulated
        authorization gate, authorizedAlways with full accuracy unless told otherwise.

          --via nmea|gpsd            nmea: GPSLocation's own parser, no daemon (default);
                                     gpsd: a real gpsd through gpsfake (needs gpsd and gpsd-clients)
          --speed X                  replay at X times real time
          --fast                     as fast as possible (the default when stdout is not a terminal)
          --once                     the recording's first location, then exit 0 (as -n 1)
          --authorization S          notDetermined, restricted, denied, whenInUse or always (default always)
          --accuracy A               full (default) or reduced
        \(PipelineOptions.help)
        """

    static let statuses: [String: CLAuthorizationStatus] = [
        "notDetermined": .notDetermined, "restricted": .restricted, "denied": .denied,
        "whenInUse": .authorizedWhenInUse, "always": .authorizedAlways,
    ]

    static func run(_ argv: [String]) throws(UsageError) -> Int32 {
        let arguments = try Arguments(
            argv, valued: PipelineOptions.valued.union(["via", "speed", "authorization", "accuracy"]),
            flags: PipelineOptions.flags.union(["fast", "once"]))
        if arguments.has("help") {
            print(HelpText.wrapped(help))
            return 0
        }
        guard arguments.positionals.count == 1, let path = arguments.positionals.first else {
            throw UsageError("replay needs exactly one recording: a file, or - for standard input")
        }
        var options = try PipelineOptions(arguments)
        // `--once` as `watch --once` takes it (scripts/run.sh passes it on to a replay when no
        // receiver reports): the recording's first location, exit 0.
        if arguments.has("once") {
            if options.count != nil { throw UsageError("--once and --count cannot be combined") }
            options.count = 1
        }
        let via = arguments["via"] ?? "nmea"
        guard via == "nmea" || via == "gpsd" else { throw UsageError("--via must be nmea or gpsd, not \(via)") }
        if arguments.has("fast") && arguments["speed"] != nil {
            throw UsageError("--speed and --fast cannot be combined")
        }
        let speed = try arguments.number("speed", minimum: 0.001, maximum: 1_000_000)
        let statusName = arguments["authorization"] ?? "always"
        guard let status = statuses[statusName] else {
            throw UsageError(
                "--authorization must be one of \(statuses.keys.sorted().joined(separator: ", ")), not \(statusName)")
        }
        let accuracyName = arguments["accuracy"] ?? "full"
        guard accuracyName == "full" || accuracyName == "reduced" else {
            throw UsageError("--accuracy must be full or reduced, not \(accuracyName)")
        }
        let accuracy: CLAccuracyAuthorization = accuracyName == "full" ? .fullAccuracy : .reducedAccuracy

        let json = options.json || isatty(STDOUT_FILENO) == 0
        let sink = try options.makeSink(
            live: speed != nil, trackName: "replay of \(path == "-" ? "standard input" : path)", input: path)
        let label = path == "-" ? "standard input" : path
        sink.diagnostic(
            code: "replay",
            message:
                "replaying the recording \(label) via \(via == "nmea" ? "GPSLocation's NMEA parser" : "gpsd (gpsfake)") — recorded data, not a live receiver"
        )
        if via == "gpsd" && speed != nil {
            sink.diagnostic(
                code: "pacing", message: "--speed does not apply to --via gpsd: gpsfake paces the recording itself")
        }
        sink.authorization(status: status, accuracy: accuracy, reason: "simulated for replay")
        // The simulated gate: the engine's own, set to the state asked for (in use: a replay
        // shows what the app would receive while in use).
        let authorization = AuthorizationState(appID: options.appID, status: status, accuracy: accuracy, isInUse: true)

        let run: Run
        if via == "gpsd" {
            run = replayThroughGPSD(path: path, sink: sink, options: options, authorization: authorization)
        } else {
            run = replayThroughParser(
                path: path, sink: sink, options: options, authorization: authorization,
                speed: speed ?? (arguments.has("fast") || json ? nil : 1))
        }
        // A replay that yields no location at all is a failure (exit 1), said in words.
        var exitStatus = run.status
        // Cut short by SIGINT or SIGTERM: what came is all there is, and that is no failure.
        let interrupted = SignalTrap.received != nil
        if !interrupted && run.status == 0 && run.fixesSeen == 0 && !status.refusesAll {
            sink.error(
                CLError(
                    .locationUnknown,
                    message: "the recording \(label) contains no position report at all — is it NMEA 0183?",
                    reason: .sourceEnded))
            exitStatus = 1
        } else if !interrupted && run.status == 0 && authorization.allowsDelivery && run.delivered == 0 {
            sink.error(
                CLError(
                    .locationUnknown,
                    message:
                        "no location of the recording \(label) was delivered (the errors and diagnostics above say why)",
                    reason: .sourceEnded))
            exitStatus = 1
        }
        if sink.outputFailed { exitStatus = 1 }
        sink.finish()
        return exitStatus
    }

    /// How a replay went: its exit status and what passed through the engine.
    struct Run {
        var status: Int32
        var fixesSeen = 0
        var delivered = 0
    }

    /// Plays `source` through the engine until it ends (or a signal); exit 1 when it failed.
    static func play(
        _ source: any LocationSource, sink: UpdateSink, options: PipelineOptions, authorization: AuthorizationState
    ) -> Run {
        let finished = DispatchSemaphore(value: 0)
        let outcome = ExitStatus()
        // The user's kept secret: a replay's reduced locations fall in the same cells as every
        // earlier run's (its rate limit runs on the recording's clock, so nothing else is kept).
        let session = EngineSession(
            sink: sink, options: options,
            gate: .fixed(authorization, fuzzer: LocationFuzzer(store: .user, appID: authorization.appID, live: false)),
            source: source
        ) { error in
            if error != nil { outcome.value = 1 }
            finished.signal()
        }
        let signals = SignalTrap { finished.signal() }
        session.start(options)
        finished.wait()
        signals.cancel()
        session.stop()
        return Run(status: outcome.value, fixesSeen: session.fixesSeen, delivered: session.delivered)
    }

    static func replayThroughGPSD(
        path: String, sink: UpdateSink, options: PipelineOptions, authorization: AuthorizationState
    ) -> Run {
        guard path != "-" else {
            sink.error(
                CLError(
                    .locationUnknown, message: "--via gpsd needs a file: gpsfake cannot read standard input",
                    reason: .sourceFailed))
            return Run(status: 2)
        }
        let server: GPSFakeServer
        do {
            server = try GPSFakeServer.startedBlocking(log: URL(fileURLWithPath: path))
        } catch {
            sink.error(
                CLError(.locationUnknown, message: error.description, reason: .sourceFailed, underlyingError: error))
            return Run(status: 1)
        }
        defer { server.stop() }
        // Connecting before gpsfake has attached its receiver would report "no receiver open".
        // If none appears, the source reports that itself.
        server.waitUntilDeviceAttachedBlocking()
        // gpsfake ends its gpsd when the recording is over: the lost connection is the normal end.
        let source = GPSDLocationSource(
            endpoint: server.endpoint, noDataTimeout: nil, reconnect: nil, isLive: false, sky: sink.showsSky)
        let run = play(source, sink: sink, options: options, authorization: authorization)
        // gpsfake's own complaint, when it failed: the one clue to a replay that delivered nothing.
        if run.delivered == 0, let failure = server.failureAfterExit() {
            sink.diagnostic(code: "gpsfake", message: failure)
        }
        return run
    }

    static func replayThroughParser(
        path: String, sink: UpdateSink, options: PipelineOptions, authorization: AuthorizationState, speed: Double?
    ) -> Run {
        if path != "-" && !FileManager.default.isReadableFile(atPath: path) {
            sink.error(
                CLError(
                    .locationUnknown, message: "cannot read the recording \(path) — check the path and its permissions",
                    reason: .sourceFailed))
            return Run(status: 1)
        }
        let source = NMEAReplaySource(path: path, pacing: speed.map { .realTime(speed: $0) } ?? .asFastAsPossible)
        let bar = ProgressBar.forStandardError()
        if let bar { source.onProgress { read, total in bar.update(read: read, total: total) } }
        let run = play(source, sink: sink, options: options, authorization: authorization)
        bar?.clear()
        return run
    }
}

/// A one-line progress bar on stderr, only when stderr is a terminal; redrawn at most 10 times a second.
final class ProgressBar: Sendable {
    /// When it was last drawn, and whether it is on the screen.
    private let drawing = Locked((last: 0.0, drawn: false))

    static func forStandardError() -> ProgressBar? { isatty(STDERR_FILENO) != 0 ? ProgressBar() : nil }

    func update(read: Int, total: Int?) {
        guard let total, total > 256 * 1024 else { return }
        let now = MonotonicReplayClock().now()
        let due = drawing.withLock { drawing in
            guard now - drawing.last >= 0.1 || read >= total else { return false }
            drawing.last = now
            drawing.drawn = true
            return true
        }
        guard due else { return }
        let fraction = min(1, Double(read) / Double(total))
        let width = 30
        let filled = Int(fraction * Double(width))
        let line =
            "\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled) + "] "
            + "\(padLeft(fixedDecimal(fraction * 100, decimals: 0), 3))% \(fixedDecimal(Double(read) / 1e6, decimals: 1))/\(fixedDecimal(Double(total) / 1e6, decimals: 1)) MB"
        standardError(line)
    }

    func clear() {
        if drawing.withLock({ $0.drawn }) { standardError("\r\u{1B}[K") }
    }
}
