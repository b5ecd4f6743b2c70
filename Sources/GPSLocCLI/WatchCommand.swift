import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

enum WatchCommand {
    static let help = """
        usage: gpsloc watch [HOST[:PORT[:DEVICE]]] [--timeout S] [--once] [--gpx FILE] [options]

        Live locations from gpsd, as an app receives them: a live table on a terminal, NDJSON with
        --json or when stdout is not a terminal. Never substitutes recorded data for a missing
        receiver: when gpsd or a fix is missing it says so and what to do. gpsd: HOST[:PORT[:DEVICE]] as gpsd's clients take it (`cgps 10.0.0.7:2947`), else --host/--port/--device, else $GPSLOCATION_GPSD, else 127.0.0.1:2947.

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
            print(HelpText.wrapped(help))
            return 0
        }
        let options = try PipelineOptions(arguments)
        let timeout = try arguments.number("timeout", minimum: 0.1, maximum: 86_400) ?? 5
        let endpoint = try arguments.gpsdEndpoint("watch")

        let sink = try options.makeSink(live: true, trackName: "gpsd at \(endpoint)", table: !arguments.has("once"))

        let (authorizer, broker) = try appAuthorizer(
            "watch", arguments, options, sink: sink, usageDescription: "gpsloc shows the locations an app would receive"
        )
        // The questions are answered: the table may take the screen now.
        sink.show()
        sink.authorization(status: authorizer.status, accuracy: authorizer.accuracy, reason: nil)
        if arguments.has("once") {
            let source: any LocationSource =
                broker.map { BrokerLocationSource(socketPath: $0, appID: options.appID) }
                ?? GPSDLocationSource(endpoint: endpoint, noDataTimeout: .seconds(Int64(max(1, timeout))), sky: false)
            return OnceCommand.run(
                source: source, options: options, authorizer: authorizer, sink: sink,
                timeout: arguments["timeout"] == nil ? 10 : timeout)
        }
        // The line that says what changed, before the engine (which follows the authorizer
        // itself, its observer added after this one) acts on it: a revocation is said, then ends.
        authorizer.addObserver {
            sink.authorization(
                status: authorizer.status, accuracy: authorizer.accuracy, reason: "changed outside gpsloc")
        }
        let finished = DispatchSemaphore(value: 0)
        let exitStatus = ExitStatus()
        // --count: the run's end is a success once N locations were shown.
        let running = Locked<EngineSession?>(nil)
        // The command ends (exit 1) when no location can come: gpsd unreachable at start, or the
        // app not (or no longer) allowed. A lost gpsd is reconnected to.
        let session = EngineSession(
            sink: sink, options: options, gate: .following(authorizer),
            source: broker.map { BrokerLocationSource(socketPath: $0, appID: options.appID, sky: sink.showsSky) }
                ?? GPSDLocationSource(
                    endpoint: endpoint, noDataTimeout: .milliseconds(Int64(timeout * 1000)),
                    reconnect: ReconnectPolicy(),
                    sky: sink.showsSky),
            endingReasons: [.gpsdUnreachable, .brokerUnreachable, .notDetermined, .notInUse, .gpsdRefused]
        ) { _ in
            if running.withLock({ $0?.countReached }) != true { exitStatus.value = 1 }
            finished.signal()
        }
        running.withLock { $0 = session }
        let signals = SignalTrap { finished.signal() }
        session.start(options)
        finished.wait()
        session.stop()
        signals.cancel()
        sink.finish()
        return sink.outputFailed ? 1 : exitStatus.value
    }
}

extension WatchCommand {
    /// The app's authorizer for a live command (`watch`, `serve`): gpslocd's when it is in force
    /// (it holds the decision, judges in use and asks the user's agent; the command then takes no
    /// gpsd address), else the decision store's, asked on this terminal. Returns gpslocd's socket
    /// too (nil: direct mode).
    static func appAuthorizer(
        _ command: String, _ arguments: Arguments, _ options: PipelineOptions, sink: UpdateSink,
        usageDescription: String
    ) throws(UsageError) -> (LocationAuthorizer, broker: String?) {
        let inUse = isatty(STDIN_FILENO) != 0 || arguments.has("in-use")
        let broker = BrokerProtocol.socketPath()
        if let broker, !arguments.positionals.isEmpty || arguments["host"] != nil || arguments["port"] != nil {
            throw UsageError(
                "gpslocd is in force (\(broker)): it alone reads gpsd, so \(command) takes no gpsd address — drop it"
                    + (LocationPolicy.effective().brokerRequired
                        ? " (the location policy requires gpslocd: there is no direct mode)"
                        : ", or set GPSLOCATION_BROKER=none to read a gpsd directly"))
        }
        guard let broker else { return (directAuthorizer(options, sink: sink, inUse: inUse), nil) }
        let authorizer = LocationAuthorizer.brokered(
            appID: options.appID, usageDescription: usageDescription, socketPath: broker)
        if authorizer.status == .notDetermined, case .noPrompt(let message) = authorizer.request(always: false) {
            sink.diagnostic(code: "authorizationRequest", message: message.words)
        }
        return (authorizer, broker)
    }

    /// Without gpslocd: the real decision store and policy for --app — nothing is delivered
    /// without a grant, and a change made outside (gpsloc auth revoke, an edited policy) applies
    /// at once. Asked on this terminal when not determined.
    static func directAuthorizer(_ options: PipelineOptions, sink: UpdateSink, inUse: Bool) -> LocationAuthorizer {
        let store = DecisionStore()
        let policy = LocationPolicy.effective()
        if let problem = policy.problem { sink.diagnostic(code: "authorizationPolicy", message: problem.description) }
        let authorizer = LocationAuthorizer.persistent(
            appID: options.appID, usageDescription: "gpsloc shows the locations an app would receive", store: store,
            isInUse: inUse)
        if let problem = store.problem { sink.diagnostic(code: "authorizationStore", message: problem.description) }
        if authorizer.status == .notDetermined,
            let answer = LocationAuthorizer.terminalPrompt(usageDescription: authorizer.usageDescription)(
                options.appID, false)
        {
            if !answer.isTemporary {
                do {
                    try store.set(answer, for: options.appID)
                } catch {
                    sink.diagnostic(code: "authorizationStore", message: error.description)
                }
            }
            authorizer.set(answer)
        }
        return authorizer
    }
}

/// An exit status set from another queue.
final class ExitStatus: Sendable {
    private let status = Locked<Int32>(0)
    var value: Int32 {
        get { status.withLock { $0 } }
        set { status.withLock { $0 = newValue } }
    }
}

/// Runs `handler` once on SIGINT or SIGTERM (instead of dying mid-line), so output is flushed
/// and the terminal left clean. A clean stop gets `gracePeriod` (0.1 s): if it has not ended
/// the process by then — stdout stalled (a full pipe nobody reads), a source blocked in a write
/// — the process exits anyway (status 128 + the signal), so a signal always ends it in time.
///
/// The signals are caught from the start of a long-running command (`armEarly`, before its
/// first line of output): one that comes before a trap is set, or after it is cancelled, ends
/// the process at once with 128 + the signal — never the default death mid-line that a signal
/// sent right after the first line met while the command was still setting up.
final class SignalTrap {
    private let token: Int
    static let gracePeriod = 0.1

    private struct Armed {
        var sources: [DispatchSource] = []
        var handlers: [Int: @Sendable () -> Void] = [:]
        var next = 1
        var received: Int32?
    }
    private static let armed = Locked(Armed())

    /// Catches SIGINT and SIGTERM from now on (once a process).
    static func armEarly() {
        armed.withLock { armed in
            guard armed.sources.isEmpty else { return }
            armed.sources = SignalSources.install([SIGINT, SIGTERM]) { number in SignalTrap.caught(number) }
        }
    }

    /// The signal that stopped the command, if one did (a replay it cut short is not a failure).
    static var received: Int32? { armed.withLock { $0.received } }

    private static func caught(_ number: Int32) {
        let handler = armed.withLock { armed in
            armed.received = armed.received ?? number
            return armed.handlers.values.first
        }
        guard let handler else { _exit(128 + number) }
        handler()
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.gracePeriod) {
            // Leave a terminal's cursor visible (the table hides it); never block on it.
            if isatty(STDOUT_FILENO) != 0 {
                let flags = fcntl(STDOUT_FILENO, F_GETFL)
                _ = fcntl(STDOUT_FILENO, F_SETFL, flags | O_NONBLOCK)
                _ = "\u{1B}[?25h\n".withCString { write(STDOUT_FILENO, $0, 7) }
            }
            // Said, not silent: what holds a stop up is output nobody reads or a disk that does
            // not answer, and the second costs the last location's save.
            _ = fcntl(STDERR_FILENO, F_SETFL, fcntl(STDERR_FILENO, F_GETFL) | O_NONBLOCK)
            DescriptorWrite.write(Self.stuckNote, to: STDERR_FILENO)
            _exit(128 + number)
        }
    }

    /// What gpsloc says when a stop has not ended `gracePeriod` after the signal.
    static let stuckNote =
        "gpsloc: still stopping 0.1 s after the signal — its output is not being read, or the disk does not "
        + "answer (then the last location was not saved: `gpsloc last` may show an older one); exiting without waiting\n"

    init(_ handler: @escaping @Sendable () -> Void) {
        Self.armEarly()
        token = Self.armed.withLock { armed in
            defer { armed.next += 1 }
            armed.handlers[armed.next] = handler
            return armed.next
        }
    }

    func cancel() { _ = Self.armed.withLock { $0.handlers.removeValue(forKey: token) } }
}
