import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// `gpsloc auth` and `gpsloc agent` where gpslocd is in force: requests to it over its socket,
/// answered for the caller's own uid (root: any, with --uid). The decisions live in gpslocd's
/// state folder, which no app can write.
enum BrokerCommands {
    /// One request on a fresh connection; the REPLY, or a runtime failure (exit 1) said on stderr.
    static func ask(_ path: String, _ className: String, _ build: (inout BrokerLine) -> Void) -> BrokerMessage? {
        let link = BrokerLink(path: path, app: "gpsloc", onMessage: { _ in }, onState: { _ in })
        defer { link.close() }
        do {
            _ = try link.startAndWait(timeout: 5)
            let reply = try link.request(build, className: className, timeout: 10)
            guard reply.bool("ok") == true else {
                standardError(
                    "gpsloc: gpslocd refused: \(terminalSafe(reply.string("message") ?? "no reason given"))\n")
                return nil
            }
            return reply
        } catch {
            standardError("gpsloc: \(error.description)\n")
            return nil
        }
    }

    static func auth(_ verb: String, app: String?, arguments: Arguments, path: String) throws(UsageError) -> Int32 {
        let uid = try arguments.number("uid", minimum: 0, maximum: 4_294_967_294).map { Int($0) }
        switch verb {
        case "status":
            guard let reply = ask(path, "LIST", { $0.add("uid", uid) }) else { return 1 }
            let rows = reply.objects("rows").filter { app == nil || $0.string("app") == app }
            if rows.isEmpty { print("no app has a decision yet (gpslocd at \(path))") }
            for row in rows {
                var line = "\(row.string("app") ?? "?"): \(row.string("status") ?? "?")"
                if let status = row.string("status").flatMap(BrokerProtocol.status(named:)), status.isAuthorized {
                    line += ", \(row.string("accuracy") ?? "?") accuracy"
                }
                let by = row.string("by") == "administrator" ? "the administrator's" : "the user's"
                line += " (uid \(row.int("uid") ?? -1), \(by), kept by gpslocd)"
                print(terminalSafe(line))
            }
            return 0
        case "who":
            guard let reply = ask(path, "WHO", { _ in }) else { return 1 }
            let rows = reply.objects("rows")
            if rows.isEmpty { print("no program is connected to gpslocd") }
            for row in rows {
                let last =
                    row.double("lastDelivery").map { iso8601Milliseconds(Date(timeIntervalSince1970: $0)) } ?? "never"
                let state =
                    row.bool("receiving") == true
                    ? "receiving (\(row.string("accuracy") ?? "?"))"
                    : row.bool("watching") == true ? "waiting: \(row.string("status") ?? "?")" : "connected"
                print(
                    terminalSafe(
                        "\(row.string("app") ?? "?") [\(row.string("identity") ?? "?")"
                            + "\(row.string("via") == "geoclue" ? ", via GeoClue" : "")] uid \(row.int("uid") ?? -1) "
                            + "pid \(row.int("pid") ?? -1): \(state), last location \(last)"))
            }
            return 0
        case "grant", "revoke", "reset":
            guard let app else { throw UsageError("\(verb) needs an app identifier") }
            var status = "denied"
            var accuracy = "full"
            if verb == "grant" {
                if arguments.has("always") && arguments.has("when-in-use") {
                    throw UsageError("choose --always or --when-in-use")
                }
                if arguments.has("full") && arguments.has("reduced") { throw UsageError("choose --full or --reduced") }
                status = arguments.has("always") ? "authorizedAlways" : "authorizedWhenInUse"
                accuracy = arguments.has("reduced") ? "reduced" : "full"
            }
            let className = verb == "reset" ? "RESET" : "GRANT"
            guard
                ask(
                    path, className,
                    {
                        $0.add("app", app)
                        $0.add("uid", uid)
                        if className == "GRANT" {
                            $0.add("status", status)
                            $0.add("accuracy", accuracy)
                        }
                    }) != nil
            else { return 1 }
            let said =
                verb == "reset" ? "notDetermined" : verb == "revoke" ? "denied" : "\(status), \(accuracy) accuracy"
            print("\(app): \(said) (gpslocd at \(path)\(uid.map { ", uid \($0)" } ?? ""))")
            return 0
        default:
            throw UsageError("unknown auth command \(verb): use status, who, grant, revoke or reset")
        }
    }

    static let agentHelp = """
        usage: gpsloc agent

        Answers gpslocd's location-permission prompts for your programs, here on this terminal:
        while it runs, a program's requestWhenInUseAuthorization() (or requestAlwaysAuthorization())
        is asked here — never on the program's own terminal. Without an agent a request is refused
        with the `gpsloc auth grant` command to run. Needs gpslocd (GPSLOCATION_BROKER, or
        /run/gpslocd/socket); stop it with Ctrl-C.
        """

    static func agent(_ argv: [String]) throws(UsageError) -> Int32 {
        let arguments = try Arguments(argv, valued: [], flags: [])
        if arguments.has("help") {
            print(HelpText.wrapped(agentHelp))
            return 0
        }
        guard let path = BrokerProtocol.socketPath() else {
            standardError(
                "gpsloc: no gpslocd is in force (no /run/gpslocd/socket, GPSLOCATION_BROKER unset): without it "
                    + "programs ask on their own terminal — start gpslocd, or set GPSLOCATION_BROKER=PATH\n")
            return 1
        }
        guard isatty(STDIN_FILENO) != 0 else {
            standardError("gpsloc: the agent asks a person: run it in a terminal\n")
            return 1
        }
        let finished = DispatchSemaphore(value: 0)
        let prompts = DispatchQueue(label: "gpsloc.agent")
        let holder = Locked<BrokerLink?>(nil)
        let link = BrokerLink(
            path: path, app: "gpsloc-agent",
            onMessage: { message in
                guard message.messageClass == "PROMPT", let id = message.int("prompt") else {
                    if message.messageClass == "ERROR" {
                        standardError("gpsloc: \(terminalSafe(message.string("message") ?? ""))\n")
                        finished.signal()
                    }
                    return
                }
                prompts.async {
                    let app = message.string("app") ?? "?"
                    let always = message.bool("always") ?? false
                    let prompt = LocationAuthorizer.terminalPrompt(usageDescription: message.string("usage"))
                    print(
                        "gpslocd: \(terminalSafe(app)) (pid \(message.int("pid") ?? -1), \(terminalSafe(message.string("identity") ?? "label"))) asks:"
                    )
                    let answer = prompt(app, always)
                    var line = BrokerLine("ANSWER")
                    line.add("prompt", id)
                    line.add("status", answer?.status.name ?? "denied")
                    line.add("accuracy", answer?.accuracy.name ?? "full")
                    line.add("once", answer?.isTemporary ?? false)
                    holder.withLock { $0 }?.send(line.line)
                }
            },
            onState: { state in
                if case .lost(let failure) = state { standardError("gpsloc: \(failure.description)\n") }
            })
        holder.withLock { $0 = link }
        do {
            _ = try link.startAndWait(timeout: 5)
            let reply = try link.request({ _ in }, className: "AGENT", timeout: 10)
            guard reply.bool("ok") == true else {
                standardError("gpsloc: gpslocd refused: \(terminalSafe(reply.string("message") ?? ""))\n")
                link.close()
                return 1
            }
            print("gpsloc agent: \(reply.string("message") ?? "ready") (Ctrl-C to stop)")
        } catch {
            standardError("gpsloc: \(error.description)\n")
            link.close()
            return 1
        }
        let signals = SignalTrap { finished.signal() }
        finished.wait()
        signals.cancel()
        link.close()
        return 0
    }
}
