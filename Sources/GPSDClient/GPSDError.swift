import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// Where a gpsd daemon listens, and which device to watch.
public struct GPSDEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Host name or address; default `127.0.0.1`.
    public var host: String
    /// TCP port; default 2947 (gpsd's `DEFAULT_GPSD_PORT`).
    public var port: Int
    /// Watch only this device (gpsd `WATCH_DEVICE`), or every device when nil.
    public var device: String?

    public static let defaultHost = "127.0.0.1"
    public static let defaultPort = 2947

    public init(host: String = GPSDEndpoint.defaultHost, port: Int = GPSDEndpoint.defaultPort, device: String? = nil) {
        self.host = host
        self.port = port
        self.device = device
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// `GPSLOCATION_GPSD` (gpsd's clients' `HOST[:PORT[:DEVICE]]`, see `parse`), else
    /// 127.0.0.1:2947: where the default source connects, so a program can be pointed at another
    /// gpsd without a code change. A value that cannot be read is ignored (the default is used;
    /// `gpsloc` refuses it with a usage error instead).
    public static func fromEnvironment(_ environment: [String: String] = ProcessInfo.processInfo.environment)
        -> GPSDEndpoint
    {
        guard let text = environment["GPSLOCATION_GPSD"], !text.isEmpty else { return GPSDEndpoint() }
        return parse(text) ?? GPSDEndpoint()
    }

    /// gpsd's clients' server syntax (`cgps 127.0.0.1:2948:/dev/ttyUSB0`): `HOST`, `HOST:PORT`,
    /// `HOST:PORT:DEVICE`, with any part empty for its default (`:PORT`, `::DEVICE`), and an IPv6
    /// address in brackets (`[::1]:2948`). DEVICE is a path (it starts with `/`). nil when the
    /// text is none of these (a port outside 1–65535, a device that is not a path).
    public static func parse(_ text: String) -> GPSDEndpoint? {
        var host = ""
        var rest = Substring(text)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = String(text[text.index(after: text.startIndex)..<close])
            rest = text[text.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
            rest = rest.dropFirst()
        } else {
            let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = String(parts[0])
            rest = parts.count > 1 ? parts[1] : ""
        }
        let parts = rest.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        var port = defaultPort
        if let portText = parts.first, !portText.isEmpty {
            guard let value = Int(portText), (1...65535).contains(value) else { return nil }
            port = value
        }
        var device: String?
        if parts.count > 1, !parts[1].isEmpty {
            guard parts[1].hasPrefix("/") else { return nil }
            device = String(parts[1])
        }
        // A host name or address (letters, digits, dots, dashes; any address in brackets): a path
        // (`gpsloc watch drive.nmea`) is not a gpsd.
        let allowed = { (scalar: Unicode.Scalar) -> Bool in
            switch scalar.properties.generalCategory {
            case .uppercaseLetter, .lowercaseLetter, .titlecaseLetter, .modifierLetter, .otherLetter, .nonspacingMark,
                .spacingMark, .enclosingMark, .decimalNumber, .letterNumber, .otherNumber:
                true
            default: ".-_:%".unicodeScalars.contains(scalar)
            }
        }
        guard host.unicodeScalars.allSatisfy(allowed), text.hasPrefix("[") || !host.contains(":") else {
            return nil
        }
        return GPSDEndpoint(host: host.isEmpty ? defaultHost : host, port: port, device: device)
    }
}

/// A failure talking to gpsd. It keeps libgps's own code and text, and says what to do.
public struct GPSDError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, as a stable identifier. New codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        fileprivate init(_ name: String) { self.name = name }
        /// `gps_open` failed: nothing listens there, or the host is unknown.
        public static let unreachable = Code("unreachable")
        /// The `?WATCH` request could not be sent.
        public static let watchFailed = Code("watchFailed")
        /// gpsd closed the connection, or reading from it failed.
        public static let disconnected = Code("disconnected")
        /// gpsd is connected but sent no position report within the timeout.
        public static let noData = Code("noData")
        /// gpsd answered WATCH with an empty device list: it reads no receiver at all.
        public static let noDevice = Code("noDevice")
        /// The peer sent a line libgps cannot take (longer than gpsd ever sends, or not JSON)
        /// while the connection is still open: not gpsd, or a broken one.
        public static let protocolError = Code("protocolError")
        /// The connection was accepted but nothing at all came within the timeout (no VERSION
        /// banner): a half-open connection or something that is not gpsd.
        public static let unresponsive = Code("unresponsive")
        public var description: String { name }
    }

    public let code: Code
    public let endpoint: GPSDEndpoint
    /// libgps's code: negative `NL_*` values from `gps_open`, positive errno values otherwise.
    public let libgpsCode: Int32?
    /// `gps_errstr(libgpsCode)` or the system's `strerror` text.
    public let libgpsMessage: String?
    /// For `.noData`: how long gpsd stayed silent, seconds.
    public let silence: Double?

    init(
        code: Code, endpoint: GPSDEndpoint, libgpsCode: Int32? = nil, libgpsMessage: String? = nil,
        silence: Double? = nil
    ) {
        self.code = code
        self.endpoint = endpoint
        self.libgpsCode = libgpsCode
        self.libgpsMessage = libgpsMessage
        self.silence = silence
    }

    /// gpsd at `endpoint` reads no receiver (its DEVICES reply was empty).
    public static func noDevice(at endpoint: GPSDEndpoint) -> GPSDError {
        GPSDError(code: .noDevice, endpoint: endpoint)
    }

    /// One sentence: what happened, and the command that fixes it.
    public var description: String {
        let cause = libgpsMessage.map { " (libgps: \($0), code \(libgpsCode ?? 0))" } ?? ""
        switch code {
        case .unreachable:
            return "gpsd is not reachable at \(endpoint)\(cause) — is gpsd running? "
                + "Check with `systemctl status gpsd.socket gpsd`, start it with `sudo systemctl start gpsd.socket`, "
                + "or run one by hand: `gpsd -N -G -S \(endpoint.port) /dev/ttyACM0`."
        case .watchFailed:
            return "gpsd at \(endpoint) accepted the connection but the WATCH request failed\(cause) — "
                + "restart gpsd (`sudo systemctl restart gpsd`)."
        case .disconnected:
            return "gpsd at \(endpoint) closed the connection\(cause) — it stopped or restarted; "
                + "check `systemctl status gpsd` and `journalctl -u gpsd`."
        case .noData:
            let seconds = silence.map { fixedDecimal($0, decimals: 1) } ?? "?"
            let device = endpoint.device.map { " for \($0)" } ?? ""
            return "gpsd at \(endpoint) sent no position report\(device) for \(seconds) s — "
                + "is a receiver plugged in and known to gpsd? Check `gpspipe -w -n 5`, `ls -l /dev/gps* /dev/ttyACM* /dev/ttyUSB*`; "
                + "with USB hotplug set USBAUTO=\"true\" in /etc/default/gpsd."
        case .protocolError:
            return "the server at \(endpoint) sent a line libgps cannot read (longer than gpsd ever sends, or not "
                + "gpsd's JSON)\(cause) — is it gpsd? Check the port (`ss -ltnp | grep \(endpoint.port)`)."
        case .unresponsive:
            let seconds = silence.map { fixedDecimal($0, decimals: 1) } ?? "?"
            return "the server at \(endpoint) accepted the connection but sent nothing at all for \(seconds) s (gpsd "
                + "greets every client at once) — a half-open connection or not gpsd; check `systemctl status gpsd` "
                + "and the port (`ss -ltnp | grep \(endpoint.port)`)."
        case .noDevice:
            return
                "gpsd at \(endpoint) has no receiver open — plug one in (for USB hotplug set USBAUTO=\"true\" in /etc/default/gpsd) "
                + "or add it by hand: `sudo gpsdctl add /dev/ttyACM0`."
        default:
            return "gpsd error \(code) at \(endpoint)\(cause)"
        }
    }
}

// As values on gpslocd's wire (a PROBLEM line's fields, LocationCore's `BrokerProtocol`).
extension GPSDError {
    /// The error a PROBLEM line describes: its code by name (`code.name`), where, and libgps's
    /// account.
    public init(
        codeNamed name: String, endpoint: GPSDEndpoint, libgpsCode: Int32?, libgpsMessage: String?, silence: Double?
    ) {
        self.init(
            code: Code(name), endpoint: endpoint, libgpsCode: libgpsCode, libgpsMessage: libgpsMessage,
            silence: silence)
    }
}
