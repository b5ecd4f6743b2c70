import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// The `gpsloc` command line: dispatch, usage errors (exit 2), runtime failures (exit 1).
public enum GPSLoc {
    static let help = """
        usage: gpsloc COMMAND [options]     (gpsloc COMMAND --help for each)

          watch      live locations from gpsd: a table on a terminal, NDJSON with --json
          replay     an NMEA recording through the same pipeline (--via nmea|gpsd)
          auth       which apps may have the location: status, grant, revoke, reset, who
          agent      answer gpslocd's permission prompts on this terminal
          serve      a web page and API for the receiver: map, track, sky, start/stop from a phone
          sky        the satellites gpsd sees: PRN, constellation, elevation, azimuth, SNR, used
          last       the last location an app received, and how old it is
          monitor    the geofences a named CLMonitor of an app keeps: list, add, remove
          doctor     what is wrong with this machine's GPS setup, and the commands that fix it
          version    versions of gpsloc and the libgps it was built with
          completion bash, zsh or fish completion (`source <(gpsloc completion bash)`)
          manpage    gpsloc(1) in roff (`gpsloc manpage | man -l -`)

        gpsloc -V (--version) prints the version; COMMAND -h (--help) each command's help.
        Commands that talk to gpsd take it as gpsd's clients do: `gpsloc watch HOST[:PORT[:DEVICE]]`,
        or GPSLOCATION_GPSD, else 127.0.0.1:2947. Exit status: 0 success, 1 a runtime failure (one
        sentence saying what to do), 2 a usage mistake, 141 a reader of stdout that went away, 74
        stdout closed.
        """

    static let versionHelp = """
        usage: gpsloc version     (or gpsloc -V, gpsloc --version)

        Prints gpsloc's version (the release in CHANGELOG.md) and the libgps API it was built with.
        """

    public static func main(_ arguments: [String]) -> Int32 {
        signal(SIGPIPE, SIG_IGN)
        guard let command = arguments.first else {
            standardError((help + "\n"))
            return 2
        }
        let rest = Array(arguments.dropFirst())
        do throws(UsageError) {
            switch command {
            case "watch":
                SignalTrap.armEarly()
                return try WatchCommand.run(rest)
            case "replay":
                SignalTrap.armEarly()
                return try ReplayCommand.run(rest)
            case "auth": return try AuthCommand.run(rest)
            case "agent":
                SignalTrap.armEarly()
                return try BrokerCommands.agent(rest)
            case "serve":
                SignalTrap.armEarly()
                return try ServeCommand.run(rest)
            case "doctor": return try DoctorCommand.run(rest)
            case "sky": return try SkyCommand.run(rest)
            case "last": return try LastCommand.run(rest)
            case "monitor": return try MonitorCommand.run(rest)
            case "completion": return try ManualCommand.run(rest, page: false)
            case "manpage": return try ManualCommand.run(rest, page: true)
            case "version", "--version", "-V":
                let arguments = try Arguments(rest, valued: [], flags: [])
                if arguments.has("help") {
                    print(HelpText.wrapped(versionHelp))
                    return 0
                }
                guard arguments.positionals.isEmpty else { throw UsageError("version takes no arguments") }
                print("gpsloc \(GPSLocationInfo.version), libgps API \(GPSLocationInfo.libgpsAPIVersion)")
                return 0
            case "help", "--help", "-h":
                print(HelpText.wrapped(help))
                return 0
            default:
                throw UsageError("unknown command \(command)")
            }
        } catch {
            // The command's own usage, as gpsd's tools print theirs; the top-level list only
            // when the command itself is unknown.
            if let usage = usage(of: command) {
                standardError(
                    "gpsloc: \(error.message)\n\n\(usage)\n\n`gpsloc \(command) --help` explains every option.\n")
            } else {
                standardError("gpsloc: \(error.message)\n\n\(help)\n")
            }
            return 2
        }
    }

    /// The usage lines (up to the first blank line) of `command`'s help, or nil for no command.
    static func usage(of command: String) -> String? {
        let text: String? =
            switch command {
            case "watch": WatchCommand.help
            case "replay": ReplayCommand.help
            case "auth": AuthCommand.help
            case "agent": BrokerCommands.agentHelp
            case "doctor": DoctorCommand.help
            case "sky": SkyCommand.help
            case "last": LastCommand.help
            case "monitor": MonitorCommand.help
            case "completion": ManualCommand.completionHelp
            case "manpage": ManualCommand.manpageHelp
            case "version", "--version", "-V": versionHelp
            default: nil
            }
        guard let text else { return nil }
        return text.components(separatedBy: "\n\n").first
    }
}
