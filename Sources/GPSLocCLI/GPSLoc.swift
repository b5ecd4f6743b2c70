import Foundation
import GPSLocation

/// The `gpsloc` command line: dispatch, usage errors (exit 2), runtime failures (exit 1).
public enum GPSLoc {
    static let help = """
        usage: gpsloc COMMAND [options]     (gpsloc COMMAND --help for each)

          watch      live locations from gpsd: a table on a terminal, NDJSON with --json
          replay     an NMEA recording through the same pipeline (--via nmea|gpsd)
          auth       which apps may have the location: status, grant, revoke, reset, who
          agent      answer gpslocd's permission prompts on this terminal
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
            case "watch": return try WatchCommand.run(rest)
            case "replay": return try ReplayCommand.run(rest)
            case "auth": return try AuthCommand.run(rest)
            case "agent": return try BrokerCommands.agent(rest)
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
            standardError("gpsloc: \(error.message)\n\n\(help)\n")
            return 2
        }
    }
}
