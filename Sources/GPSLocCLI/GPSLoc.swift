import Foundation
import GPSLocation

/// The `gpsloc` command line: dispatch, usage errors (exit 2), runtime failures (exit 1).
public enum GPSLoc {
    static let help = """
        usage: gpsloc COMMAND [options]     (gpsloc COMMAND --help for each)

          watch      live locations from gpsd: a table on a terminal, NDJSON with --json
          replay     an NMEA recording through the same pipeline (--via nmea|gpsd)
          auth       which apps may have the location: status, grant, revoke, reset
          sky        the satellites gpsd sees: PRN, constellation, elevation, azimuth, SNR, used
          last       the last location an app received, and how old it is
          monitor    the geofences a named CLMonitor of an app keeps: list, add, remove
          doctor     what is wrong with this machine's GPS setup, and the commands that fix it
          version    versions of gpsloc and the libgps it was built with
          completion bash completion (`source <(gpsloc completion bash)`); manpage: gpsloc(1) in roff
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
            case "doctor": return try DoctorCommand.run(rest)
            case "sky": return try SkyCommand.run(rest)
            case "last": return try LastCommand.run(rest)
            case "monitor": return try MonitorCommand.run(rest)
            case "completion": return try ManualCommand.run(rest, page: false)
            case "manpage": return try ManualCommand.run(rest, page: true)
            case "version", "--version":
                print("gpsloc \(GPSLocationInfo.version), libgps API \(GPSLocationInfo.libgpsAPIVersion)")
                return 0
            case "help", "--help", "-h":
                print(help)
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
