import Foundation
import GPSLocation

enum WatchCommand {
    static let help = """
        usage: gpsloc watch [--host H] [--port P] [--device PATH] [--timeout S] [--once] [--gpx FILE] [options]

        Live locations from gpsd, as an app receives them: a readable line per location on a
        terminal, NDJSON with --json or when stdout is not a terminal. Never substitutes recorded
        data for a missing receiver: when gpsd or a fix is missing it says so and what to do.

          --host H                   gpsd host (default 127.0.0.1)
          --port P                   gpsd port (default 2947)
          --device PATH              watch only this receiver (gpsd WATCH_DEVICE); without it, with several
                                     receivers the one with the best fix is followed
          --timeout S                report when gpsd sends no position report for S seconds (default 5)
          --in-use                   count as in use without a terminal (for When-In-Use grants)
          --once                     one location meeting --desired-accuracy (requestLocation), then exit;
                                     after --timeout (default 10 s) the best one seen, or an error
        \(PipelineOptions.help)
        """

    static func run(_ argv: [String]) throws(UsageError) -> Int32 {
        let arguments = try Arguments(
            argv, valued: PipelineOptions.valued.union(["host", "port", "device", "timeout"]),
            flags: PipelineOptions.flags.union(["in-use", "once"]))
        if arguments.has("help") {
            print(help)
            return 0
        }
        guard arguments.positionals.isEmpty else {
            throw UsageError("watch takes no file: did you mean `gpsloc replay FILE`?")
        }
        let options = try PipelineOptions(arguments)
        let port = try arguments.integer("port", in: 1...65535) ?? GPSDEndpoint.defaultPort
        let timeout = try arguments.number("timeout", minimum: 0.1) ?? 5
        let endpoint = GPSDEndpoint(
            host: arguments["host"] ?? GPSDEndpoint.defaultHost, port: port, device: arguments["device"])

        let sink = try options.makeSink(live: true, trackName: "gpsd at \(endpoint)", table: !arguments.has("once"))

        // The real decision store and policy for --app: nothing is delivered without a grant,
        // and a change made outside (gpsloc auth revoke, an edited policy) applies at once.
        let store = DecisionStore()
        let policy = LocationPolicy.load()
        if let problem = policy.problem { sink.diagnostic(code: "authorizationPolicy", message: problem) }
        let inUse = isatty(STDIN_FILENO) != 0 || arguments.has("in-use")
        let authorizer = LocationAuthorizer.persistent(
            appID: options.appID, usageDescription: "gpsloc shows the locations an app would receive", store: store,
            isInUse: inUse)
        if let problem = store.problem { sink.diagnostic(code: "authorizationStore", message: problem) }
        if authorizer.status == .notDetermined, let answer = AuthCommand.prompt(app: options.appID) {
            if answer.store {
                do {
                    try store.set(answer.decision, for: options.appID)
                } catch {
                    sink.diagnostic(code: "authorizationStore", message: error.description)
                }
            }
            authorizer.set(answer.decision)
        }
        sink.authorization(status: authorizer.status, accuracy: authorizer.accuracy, reason: nil)
        switch authorizer.status {
        case .notDetermined:
            sink.error(
                CLError(
                    .locationUnknown,
                    message: "location authorization for \(options.appID) is not determined, so no location is shown — "
                        + "grant it with `gpsloc auth grant \(options.appID) --when-in-use` (or run gpsloc watch on a terminal to be asked)"
                ))
            sink.finish()
            return 1
        case .denied, .restricted:
            let why =
                policy.decision(for: options.appID) != nil
                ? " by the administrator's policy (\(LocationPolicy.defaultPath))" : ""
            sink.error(
                CLError(
                    .denied,
                    message: "location access for \(options.appID) is \(authorizer.status)\(why) — "
                        + (why.isEmpty
                            ? "`gpsloc auth grant \(options.appID) --when-in-use` allows it" : "ask the administrator"))
            )
            sink.finish()
            return 1
        case .authorizedWhenInUse where !inUse:
            sink.error(
                CLError(
                    .locationUnknown,
                    message:
                        "\(options.appID) may use the location only while in use, and without a terminal it is not — "
                        + "grant Always (`gpsloc auth grant \(options.appID) --always`) or pass --in-use"))
            sink.finish()
            return 1
        default:
            break
        }
        if arguments.has("once") {
            return OnceCommand.run(
                endpoint: endpoint, options: options, authorizer: authorizer, sink: sink,
                timeout: arguments["timeout"] == nil ? 10 : timeout)
        }
        let session = Session(sink: sink, options: options, gate: authorizer)

        let source = GPSDSource(
            endpoint: endpoint, noDataTimeout: .milliseconds(Int64(timeout * 1000)), reconnect: ReconnectPolicy())
        let everConnected = ExitStatus()
        let finished = DispatchSemaphore(value: 0)
        let exitStatus = ExitStatus()
        authorizer.addObserver {
            let status = authorizer.status
            sink.authorization(status: status, accuracy: authorizer.accuracy, reason: "changed outside gpsloc")
            if status == .denied || status == .restricted || status == .notDetermined {
                sink.error(
                    CLError(
                        status == .notDetermined ? .locationUnknown : .denied,
                        message:
                            "location access for \(options.appID) was \(status == .notDetermined ? "reset" : "revoked") while watching — no more locations"
                    ))
                exitStatus.value = 1
                finished.signal()
            }
        }
        source.start { event in
            switch event {
            case .connected:
                if everConnected.value > 0 {
                    sink.diagnostic(code: "reconnected", message: "connected to gpsd at \(endpoint) again")
                }
                everConnected.value += 1
            case .report(.fix(let fix)):
                session.handle(fix, now: Date())
            case .report(.device(let device)):
                session.device(device)
            case .report(.devices(let devices)):
                for device in devices { session.device(device) }
                if devices.isEmpty {
                    let error = GPSDError.noDevice(at: endpoint)
                    session.reportedElsewhere()
                    sink.error(CLError(.locationUnknown, message: error.description, underlyingError: error))
                }
            case .report(.sky(let sky)):
                sink.sky(sky)
            case .report(.other):
                break
            case .noData(let error):
                session.reportedElsewhere()
                sink.error(CLError(.locationUnknown, message: error.description, underlyingError: error))
            case .reconnecting(let error, let attempt, let delay):
                // Not reachable at start: fail at once. Lost later: say so, and keep trying.
                guard everConnected.value > 0 else {
                    sink.error(CLError(.locationUnknown, message: error.description, underlyingError: error))
                    exitStatus.value = 1
                    finished.signal()
                    return
                }
                session.reportedElsewhere()
                if attempt == 1 {
                    sink.error(CLError(.locationUnknown, message: error.description, underlyingError: error))
                }
                sink.diagnostic(
                    code: "reconnecting",
                    message: String(
                        format: "reconnecting to gpsd at %@ (attempt %d, in %.1f s)", endpoint.description, attempt,
                        delay))
            case .failed(let error):
                sink.error(CLError(.locationUnknown, message: error.description, underlyingError: error))
                exitStatus.value = 1
                finished.signal()
            }
        }
        let signals = SignalTrap { finished.signal() }
        finished.wait()
        source.stop()
        signals.cancel()
        sink.finish()
        return exitStatus.value
    }
}

/// An exit status set from another queue.
final class ExitStatus: @unchecked Sendable {
    // @unchecked Sendable: written before the semaphore is signalled, read after it is waited on.
    var value: Int32 = 0
}

/// Runs `handler` once on SIGINT or SIGTERM (instead of dying mid-line), so output is flushed
/// and the terminal left clean.
final class SignalTrap {
    private var sources: [any DispatchSourceSignal] = []

    init(_ handler: @escaping @Sendable () -> Void) {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: handler)
            source.resume()
            sources.append(source)
        }
    }

    func cancel() { for source in sources { source.cancel() } }
}
