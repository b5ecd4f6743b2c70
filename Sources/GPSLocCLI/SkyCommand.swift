import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// `gpsloc sky`: the satellites gpsd sees right now.
enum SkyCommand {
    static let help = """
        usage: gpsloc sky [HOST[:PORT[:DEVICE]]] [--timeout S] [--json]

        Waits for gpsd's next satellite report (at most --timeout seconds, default 5) and prints
        each satellite: PRN, constellation, elevation, azimuth, signal-to-noise, used in the fix.
        gpsd: HOST[:PORT[:DEVICE]] as gpsd's clients take it (`cgps 10.0.0.7:2947`), else --host/--port/--device, else $GPSLOCATION_GPSD, else 127.0.0.1:2947.
        """

    static func run(_ argv: [String]) throws(UsageError) -> Int32 {
        let arguments = try Arguments(argv, valued: ["host", "port", "device", "timeout"], flags: ["json"])
        if arguments.has("help") {
            print(HelpText.wrapped(help))
            return 0
        }
        let timeout = try arguments.number("timeout", minimum: 0.1, maximum: 86_400) ?? 5
        let endpoint = try arguments.gpsdEndpoint("sky")
        let json = arguments.has("json") || isatty(STDOUT_FILENO) == 0
        let source = GPSDConnection(endpoint: endpoint, noDataTimeout: nil)
        let done = DispatchSemaphore(value: 0)
        let result = SkyResult()
        source.start { event in
            switch event {
            case .sky(let raw) where !raw.satellites.isEmpty:
                let sky = PhysicalRanges.check(raw)
                // gpsd reports the sky once per constellation as its GSV sets arrive; take the
                // fullest report of one receiver cycle (about a second).
                if result.set(sky: sky) {
                    DispatchQueue.global().asyncAfter(deadline: .now() + 1.2) { done.signal() }
                }
            case .failed(let error):
                result.set(error: error.description)
                done.signal()
            default:
                break
            }
        }
        let answered = done.wait(timeout: .now() + timeout + 1.2) == .success
        source.stop()
        let (sky, error) = result.value
        var writer = NDJSONWriter()
        if let sky {
            if json {
                writer.sky(sky)
                standardOutput(writer.buffer)
            } else {
                print(table(sky))
            }
            return 0
        }
        let message =
            error
            ?? (answered
                ? "gpsd reported no satellites"
                : "gpsd at \(endpoint) sent no satellite report within \(timeout) s — is a receiver attached? `gpsloc doctor` checks")
        if json {
            writer.error(code: "locationUnknown", message: message)
            standardOutput(writer.buffer)
        }
        standardError("gpsloc: \(message)\n")
        return 1
    }

    static func table(_ sky: SkyView) -> String {
        var lines = ["  PRN  GNSS       Elev   Azim   SNR  Used"]
        for satellite in sky.satellites {
            let number = { (value: Double?, width: Int) in
                value.map { padLeft(fixedDecimal($0, decimals: 0), width) } ?? String(repeating: " ", count: width - 1)
                    + "-"
            }
            lines.append(
                // Padded in Swift: Foundation on Linux ignores a width on %@ (the columns slid).
                "\(padLeft(String(satellite.prn), 5))  "
                    + satellite.constellation.description.paddedRight(to: 9)
                    + "  \(number(satellite.elevation, 4))   \(number(satellite.azimuth, 4))  \(number(satellite.signalToNoise, 4))  \(satellite.used ? " yes" : "  no")"
            )
        }
        let dop = { (value: Double?) in value.map { "\(fixedDecimal($0, decimals: 2))" } ?? "-" }
        lines.append(
            "\(sky.satellitesUsed) used of \(sky.satellitesVisible) seen; HDOP \(dop(sky.dilution.horizontal)), VDOP \(dop(sky.dilution.vertical)), PDOP \(dop(sky.dilution.position))"
        )
        return lines.joined(separator: "\n")
    }

    final class SkyResult: Sendable {
        private let state = Locked<(sky: SkyView?, error: String?)>((nil, nil))
        /// Keeps the report with the most satellites; returns true for the first one.
        func set(sky: SkyView) -> Bool {
            state.withLock { state in
                defer { if sky.satellites.count > (state.sky?.satellites.count ?? -1) { state.sky = sky } }
                return state.sky == nil
            }
        }
        func set(error: String) { state.withLock { $0.error = error } }
        var value: (SkyView?, String?) { state.withLock { ($0.sky, $0.error) } }
    }
}
