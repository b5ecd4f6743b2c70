import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// `gpsloc manpage` (roff for gpsloc(1)) and `gpsloc completion bash`, both built from the
/// same help texts `--help` prints, so the installed page and completion cannot drift from
/// the binary (`scripts/install.sh` writes them from the binary it installs).
enum ManualCommand {
    /// Every command and its help text, in the order the overview lists them.
    static let commands: [(name: String, help: String)] = [
        ("watch", WatchCommand.help), ("replay", ReplayCommand.help), ("auth", AuthCommand.help),
        ("sky", SkyCommand.help), ("last", LastCommand.help), ("monitor", MonitorCommand.help),
        ("serve", ServeCommand.help), ("doctor", DoctorCommand.help),
        ("version", "usage: gpsloc version\n\nThe versions of gpsloc and of the libgps API it was built with."),
        ("completion", completionHelp), ("manpage", manpageHelp),
    ]

    /// The man page's DESCRIPTION: prose, not the usage list (which SYNOPSIS and COMMANDS give).
    static let description = """
        .B gpsloc
        shows what a program using the GPSLocation library receives from a GNSS receiver through
        gpsd: the same locations, checked, classified by accuracy, distance-filtered and passed
        through the authorization gate an app's locations pass.
        .B watch
        follows the receiver live, as a table on a terminal or as NDJSON for scripts;
        .B replay
        plays an NMEA recording through the same pipeline, with GPSLocation's own parser or a real
        gpsd, for tests and CI without hardware;
        .B sky
        lists the satellites gpsd sees;
        .B doctor
        checks the machine's setup, one line a check with the command that fixes it.
        .PP
        Locations reach a program only with its user's consent:
        .B auth
        grants, revokes and lists it, and
        .B last
        shows the last location a program received. Where gpslocd, the system location service,
        runs, these go through it and
        .B agent
        answers its prompts on your terminal.
        .PP
        gpsd is named as its own clients name it, HOST[:PORT[:DEVICE]], and gpsloc keeps their
        habits: -n to stop after a count, -o to write to a file, --gpx - for a track on stdout,
        -u for units.

        """

    static let completionHelp = """
        usage: gpsloc completion bash|zsh|fish

        Prints a completion script for the shell: commands, their options, app ids from the
        decision store (bash), device paths and files.
          bash   source <(gpsloc completion bash), or /usr/share/bash-completion/completions/gpsloc
          zsh    gpsloc completion zsh > "${fpath[1]}/_gpsloc" (then compinit)
          fish   gpsloc completion fish > ~/.config/fish/completions/gpsloc.fish
        scripts/install.sh installs all three.
        """

    static let manpageHelp = """
        usage: gpsloc manpage

        Prints the gpsloc(1) manual page (roff): `gpsloc manpage | man -l -`.
        """

    /// The NDJSON contract, as the README states it.
    static let ndjson = """
        One object per line, each with "type". Timestamps are UTC ISO 8601 with milliseconds;
        unknown numbers are null (never -1 or NaN).
        location: timestamp, latitude, longitude (9 decimals), altitude, ellipsoidalAltitude,
          horizontalAccuracy, verticalAccuracy, speed, speedAccuracy, course, courseAccuracy,
          fixMode ("2d"/"3d"), accuracyClass, reduced, simulated.
        authorization: status, accuracy (and reason for a simulated gate).
        error: code (a CLError code name, e.g. locationUnknown, denied), message.
        device: path, driver (or null), activated.
        diagnostic: code, message (replay, noFix, stale, future, timeWentBack, timeJumped,
          timeResynchronized, reconnecting, reconnected, skippedInput, noChecksums, gpx, ...).
        region: identifier, event ("determined", "enter", "exit"), state ("inside", "outside",
          "unknown"), timestamp (of the location that decided it), limitation when the region
          cannot be evaluated ("accuracyLimited", "notAuthorized").
        heading (receivers that report one: HDT, THS, HDG, gpsd ATT): timestamp, trueHeading,
          magneticHeading (null when unknown), headingAccuracy (0: not reported).
        visit: arrival, departure (null while the visit goes on), latitude, longitude,
          horizontalAccuracy (the place's radius).
        sky (gpsloc sky --json): time, satellitesVisible, satellitesUsed, hdop, vdop, pdop,
          satellites (prn, constellation, svid, elevation, azimuth, signalToNoise, used).
        condition (gpsloc monitor list --json): app, monitor, identifier, latitude, longitude,
          radius, state.
        """

    static func run(_ argv: [String], page: Bool) throws(UsageError) -> Int32 {
        let arguments = try Arguments(argv, valued: [], flags: [])
        if arguments.has("help") {
            print(HelpText.wrapped(page ? manpageHelp : completionHelp))
            return 0
        }
        if page {
            guard arguments.positionals.isEmpty else { throw UsageError("manpage takes no arguments") }
            print(manpage(), terminator: "")
            return 0
        }
        switch arguments.positionals {
        case ["bash"]: print(bashCompletion(), terminator: "")
        case ["zsh"]: print(zshCompletion(), terminator: "")
        case ["fish"]: print(fishCompletion(), terminator: "")
        default: throw UsageError("completion needs a shell: bash, zsh or fish")
        }
        return 0
    }

    // MARK: The manual page

    static func manpage() -> String {
        var page = """
            .TH GPSLOC 1 "" "gpsloc \(escape(GPSLocationInfo.version))" "User Commands"
            .SH NAME
            gpsloc \\- locations from gpsd as a CoreLocation app receives them, replay, authorization, doctor
            .SH SYNOPSIS

            """
        for (_, help) in commands {
            for line in usageLines(help) { page += ".B \(escape(line))\n.br\n" }
        }
        page += ".SH DESCRIPTION\n" + description
        page += ".SH COMMANDS\n"
        for (name, help) in commands {
            page += ".SS \(escape(name))\n" + block(help)
        }
        page += ".SH OPTIONS OF WATCH AND REPLAY\n" + block(PipelineOptions.help)
        page += ".SH NDJSON OUTPUT\n" + block(ndjson)
        page += """
            .SH EXIT STATUS
            0 on success (also when -n/--count locations were shown); 1 on a runtime failure (gpsd
            unreachable at start, a device gpsd does not read, not authorized, an unreadable file),
            with one sentence on stderr (or an NDJSON error line); 2 on a usage mistake, with the
            command's usage; 141, silently, when the reader of stdout went away; 74 when stdout
            cannot be written.
            .SH FILES
            .TP
            .I $XDG_CONFIG_HOME/gpslocation/authorizations.json
            The user's authorization decisions (gpsloc auth); ~/.config when XDG_CONFIG_HOME is unset.
            .TP
            .I /etc/gpslocation/policy.json
            The administrator's policy: services off, restricted apps, pre-granted apps (root-owned, not writable by others).
            .TP
            .I $XDG_CACHE_HOME/gpslocation/last/APP.json
            The last location each app received (gpsloc last).
            .TP
            .I $XDG_STATE_HOME/gpslocation/monitors/APP/
            Kept geofences: monitor-NAME.json for CLMonitor("NAME") (gpsloc monitor), regions.json for legacy region monitoring.
            .TP
            .I /usr/lib/udev/rules.d/61-gpslocation-gnss.rules
            The udev rule for USB receivers (or under /etc/udev/rules.d; see gpsloc doctor).
            .SH ENVIRONMENT
            .TP
            .B GPSLOCATION_GPSD
            Where gpsloc and the library find gpsd: HOST[:PORT[:DEVICE]], as gpsd's clients take it (default 127.0.0.1:2947). A positional HOST[:PORT[:DEVICE]] and --host, --port, --device override it.
            .TP
            .B GPSLOCATION_POLICY
            A further policy file that can only add restrictions to /etc/gpslocation/policy.json.
            .TP
            .B GPSLOCATION_USAGE_DESCRIPTION
            Why an app wants the location, shown when it asks on a terminal.
            .TP
            .B XDG_CONFIG_HOME, XDG_CACHE_HOME, XDG_STATE_HOME
            Where the files above live.
            .SH EXAMPLES
            .nf
            gpsloc watch                        # a live table of what an app gets
            gpsloc watch 10.0.0.7:2947          # another gpsd: HOST[:PORT[:DEVICE]]
            gpsloc watch --json | jq .latitude  # NDJSON
            gpsloc replay drive.nmea --via gpsd # a recording through a real gpsd
            gpsloc watch --region depot=51.4545,\\-2.5879,150 --visits
            gpsloc auth grant fleetd \\-\\-always  # let a daemon receive locations
            gpsloc watch \\-\\-json | mosquitto_pub \\-l \\-t fleet/$(hostname)/location
            gpsloc doctor
            .fi
            .SH SEE ALSO
            .BR gpsd (8),
            .BR gpspipe (1),
            .BR gpsfake (1)

            """
        return page
    }

    /// The `usage:` lines of a help text (the first line and its indented continuations).
    static func usageLines(_ help: String) -> [String] {
        var lines: [String] = []
        for line in help.split(separator: "\n", omittingEmptySubsequences: false) {
            let text = line.trimmingWhitespace()
            if text.hasPrefix("usage: ") {
                lines.append(String(text.dropFirst(7)))
            } else if !lines.isEmpty && text.hasPrefix("gpsloc ") {
                lines.append(text)
            } else if !lines.isEmpty {
                break
            }
        }
        return lines
    }

    /// Help text as a no-fill block, so its columns stay as --help prints them.
    private static func block(_ text: String) -> String {
        ".nf\n"
            + HelpText.wrapped(text, width: 73).split(separator: "\n", omittingEmptySubsequences: false).map {
                escape(String($0))
            }.joined(
                separator: "\n") + "\n.fi\n"
    }

    /// roff escaping: backslashes, hyphens of options, and lines starting with . or '.
    private static func escape(_ line: String) -> String {
        var text = line.replacing("\\", with: "\\e").replacing("-", with: "\\-")
        if text.hasPrefix(".") || text.hasPrefix("'") { text = "\\&" + text }
        return text
    }

    // MARK: bash completion

    /// The `--options` a help text mentions.
    static func options(_ help: String) -> [String] {
        var found: [String] = []
        var seen = Set<String>()
        let scalars = Array(help.unicodeScalars)
        var index = 0
        while index + 2 < scalars.count {
            // `--name` not inside a word or a longer run of dashes.
            if scalars[index] == "-" && scalars[index + 1] == "-"
                && (index == 0 || (!isWord(scalars[index - 1]) && scalars[index - 1] != "-"))
            {
                var end = index + 2
                while end < scalars.count && (isWord(scalars[end]) || scalars[end] == "-") { end += 1 }
                let option = String(String.UnicodeScalarView(scalars[index..<end]))
                if option.count > 2, seen.insert(option).inserted { found.append(option) }
                index = end
            } else {
                index += 1
            }
        }
        return found
    }

    private static func isWord(_ scalar: Unicode.Scalar) -> Bool {
        (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)) && scalar.isASCII
    }

    static func bashCompletion() -> String {
        var cases = ""
        for (name, help) in commands {
            var options = options(help)
            if name == "watch" || name == "replay" {
                for option in Self.options(PipelineOptions.help) where !options.contains(option) {
                    options.append(option)
                }
            }
            options.append("--help")
            cases += "    \(name)) options=\"\(options.joined(separator: " "))\" ;;\n"
        }
        let names = commands.map(\.name).joined(separator: " ")
        return """
            # bash completion for gpsloc — generated by `gpsloc completion bash` from its --help texts.
            _gpsloc() {
              local current previous command options
              current="${COMP_WORDS[COMP_CWORD]}"
              previous="${COMP_WORDS[COMP_CWORD-1]}"
              command="${COMP_WORDS[1]}"
              if [ "$COMP_CWORD" -eq 1 ]; then
                COMPREPLY=($(compgen -W "\(names) --help" -- "$current"))
                return
              fi
              case "$previous" in
                --app)
                  COMPREPLY=($(compgen -W "$(gpsloc auth status 2>/dev/null | sed -n 's/^\\([A-Za-z0-9._-]*\\): .*/\\1/p')" -- "$current"))
                  return ;;
                --device)
                  COMPREPLY=($(compgen -W "$(ls /dev/ttyUSB* /dev/ttyACM* /dev/gpslocation-gnss* /dev/serial/by-id/* 2>/dev/null)" -- "$current"))
                  return ;;
                --gpx|--config)
                  COMPREPLY=($(compgen -f -- "$current"))
                  return ;;
                --via) COMPREPLY=($(compgen -W "nmea gpsd" -- "$current")); return ;;
                --authorization) COMPREPLY=($(compgen -W "notDetermined restricted denied whenInUse always" -- "$current")); return ;;
                --accuracy) COMPREPLY=($(compgen -W "full reduced" -- "$current")); return ;;
                --desired-accuracy) COMPREPLY=($(compgen -W "bestForNavigation best nearestTenMeters hundredMeters kilometer threeKilometers" -- "$current")); return ;;
              esac
              case "$command" in
            \(cases)    *) options="" ;;
              esac
              if [[ "$current" == -* ]]; then
                COMPREPLY=($(compgen -W "$options" -- "$current"))
              elif [ "$command" = auth ] && [ "$COMP_CWORD" -eq 2 ]; then
                COMPREPLY=($(compgen -W "status grant revoke reset" -- "$current"))
              elif [ "$command" = auth ] && [ "$COMP_CWORD" -eq 3 ]; then
                COMPREPLY=($(compgen -W "$(gpsloc auth status 2>/dev/null | sed -n 's/^\\([A-Za-z0-9._-]*\\): .*/\\1/p')" -- "$current"))
              elif [ "$command" = monitor ] && [ "$COMP_CWORD" -eq 2 ]; then
                COMPREPLY=($(compgen -W "list add remove" -- "$current"))
              elif [ "$command" = completion ]; then
                COMPREPLY=($(compgen -W "bash" -- "$current"))
              elif [ "$command" = replay ]; then
                COMPREPLY=($(compgen -f -- "$current"))
              fi
            }
            complete -F _gpsloc gpsloc

            """
    }
}
