import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc

/// gpslocd's wire protocol, version 1 (docs/broker.md is its specification): one JSON object per
/// line over a Unix stream socket, each with a `class`, in both directions. The library (the
/// client side) and gpslocd (the server side) both speak it through this type, so neither can
/// drift from the other.
public enum BrokerProtocol {
    /// How a face says, on gpslocd's wire, the facts that travel as words: everything but gpsd's
    /// error, gpsd's refusal and the reconnection notices, which travel as values. gpslocd passes
    /// LocationWords' (`message`); the default writes the facts as values (`String(describing:)`).
    public struct Words: Sendable {
        /// A failure's words.
        public var failure: @Sendable (CLError) -> String
        /// A note's words.
        public var note: @Sendable (LocationDiagnostic) -> String
        /// Words from these two.
        public init(
            failure: @escaping @Sendable (CLError) -> String, note: @escaping @Sendable (LocationDiagnostic) -> String
        ) {
            self.failure = failure
            self.note = note
        }
        /// The facts as values, for a caller with no words (tests, tools).
        public static let values = Words(
            failure: { String(describing: $0.facts) }, note: { String(describing: $0.facts) })
    }

    /// The protocol version a HELLO and a WELCOME carry.
    public static let version = 2
    /// Where gpslocd listens unless told otherwise (`gpslocd.socket`).
    public static let defaultSocketPath = "/run/gpslocd/socket"
    /// The longest line either side accepts; a longer one is a protocol error.
    public static let maximumLineLength = 64 << 10

    /// The broker in force: `GPSLOCATION_BROKER` when set (a path, or `none`/`off` for direct
    /// mode even where gpslocd runs), else the default socket when it exists, else nil (direct
    /// mode: the library reads gpsd itself, for development and replay). Where the location
    /// policy says `brokerRequired`, there is no direct mode: the default socket is in force
    /// whether or not it exists (`none` included), so without gpslocd nothing is delivered and
    /// the error says to start it.
    public static func socketPath(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        policy: @autoclosure () -> LocationPolicy = LocationPolicy.effective()
    ) -> String? {
        if let named = environment["GPSLOCATION_BROKER"], !named.isEmpty, named != "none", named != "off" {
            return named
        }
        if policy().brokerRequired { return defaultSocketPath }
        if let named = environment["GPSLOCATION_BROKER"], !named.isEmpty { return nil }
        var status = stat()
        guard stat(defaultSocketPath, &status) == 0, status.st_mode & S_IFMT == S_IFSOCK else { return nil }
        return defaultSocketPath
    }

    /// Calls `body` with the `sockaddr_un` of `path` and its length (connect, bind); nil when
    /// the path is too long for one. The one place both sides build the address.
    public static func withSocketAddress<Result>(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Result
    ) -> Result? {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    /// The statuses' names on the wire (the decision store's own names).
    static func statusName(_ status: CLAuthorizationStatus) -> String { status.name }
    /// The status a wire name stands for (Apple's case name, or gpsloc's short form); nil if none.
    public static func status(named name: String) -> CLAuthorizationStatus? {
        switch name {
        case "notDetermined": .notDetermined
        case "restricted": .restricted
        case "denied": .denied
        case "authorizedAlways", "always": .authorizedAlways
        case "authorizedWhenInUse", "whenInUse": .authorizedWhenInUse
        default: nil
        }
    }
    /// The accuracy a wire name stands for (`full`, `reduced`); nil if none.
    public static func accuracy(named name: String) -> CLAccuracyAuthorization? {
        switch name {
        case "full": .fullAccuracy
        case "reduced": .reducedAccuracy
        default: nil
        }
    }
}

// MARK: - Source events on the wire

extension BrokerProtocol {
    /// A source event as the line gpslocd sends (nil: an event that is not sent).
    public static func line(for event: LocationSourceEvent, words: Words = .values) -> String {
        switch event {
        case .fix(let fix): return fixLine(fix)
        case .errorEstimate(let estimate):
            var line = BrokerLine("ESTIMATE")
            line.add("time", estimate.time?.timeIntervalSince1970)
            line.add("lat", estimate.latitude)
            line.add("lon", estimate.longitude)
            line.add("alt", estimate.altitude)
            return line.line
        case .sky(let sky):
            var line = BrokerLine("SKY")
            line.add("time", sky.time?.timeIntervalSince1970)
            let dilution = sky.dilution
            line.add("xdop", dilution.x)
            line.add("ydop", dilution.y)
            line.add("pdop", dilution.position)
            line.add("hdop", dilution.horizontal)
            line.add("vdop", dilution.vertical)
            line.add("tdop", dilution.time)
            line.add("gdop", dilution.geometric)
            let satellites = sky.satellites.map { satellite in
                var object = BrokerLine("SATELLITE")
                object.add("prn", satellite.prn)
                object.add("gnss", satellite.constellation.rawValue)
                object.add("svid", satellite.satelliteID)
                object.add("ss", satellite.signalToNoise)
                object.add("el", satellite.elevation)
                object.add("az", satellite.azimuth)
                object.add("used", satellite.used)
                return object.object
            }
            line.addRaw("satellites", "[" + satellites.joined(separator: ",") + "]")
            return line.line
        case .heading(let heading):
            var line = BrokerLine("HEADING")
            line.add("true", heading.trueHeading)
            line.add("magnetic", heading.magneticHeading)
            line.add("magvar", heading.magneticVariation)
            line.add("device", heading.device)
            return line.line
        case .device(let device):
            var line = BrokerLine("DEVICE")
            line.add("path", device.path)
            line.add("driver", device.driver)
            line.add("activated", device.activated)
            line.add("bps", device.baudRate)
            line.add("cycle", device.cycle)
            return line.line
        case .notice(let diagnostic):
            var line = BrokerLine("NOTICE")
            line.add("code", diagnostic.code)
            switch diagnostic.facts {
            case .reconnected(let endpoint):
                line.add("endpoint", endpoint)
            case .reconnecting(let endpoint, let attempt, let delay):
                line.add("endpoint", endpoint)
                line.add("attempt", attempt)
                line.add("delay", delay)
            default:
                line.add("message", words.note(diagnostic))
            }
            return line.line
        case .problem(let error, let terminal):
            return problemLine(error, terminal: terminal, words: words)
        }
    }

    static func fixLine(_ fix: Fix, reduced: Bool = false) -> String {
        var line = BrokerLine("FIX")
        line.add("mode", fix.mode.rawValue)
        line.add("quality", fix.quality.rawValue)
        line.add("time", fix.time?.timeIntervalSince1970)
        line.add("lat", fix.latitude)
        line.add("lon", fix.longitude)
        line.add("altHAE", fix.altitudeHAE)
        line.add("altMSL", fix.altitudeMSL)
        line.add("geoidSep", fix.geoidSeparation)
        line.add("speed", fix.speed)
        line.add("track", fix.course)
        line.add("climb", fix.climb)
        line.add("magvar", fix.magneticVariation)
        line.add("device", fix.device)
        line.add("ept", fix.errors.time)
        line.add("epx", fix.errors.longitude)
        line.add("epy", fix.errors.latitude)
        line.add("eph", fix.errors.horizontal)
        line.add("epv", fix.errors.vertical)
        line.add("eps", fix.errors.speed)
        line.add("epd", fix.errors.course)
        line.add("epc", fix.errors.climb)
        if reduced { line.add("reduced", true) }
        return line.line
    }

    /// A reduced program's line for one of gpsd's fixes: the grid point the fuzzer last let out,
    /// at the fix's time, with nothing else of the fix (no altitude, speed, course, receiver or
    /// estimate); `eph` is the 95 % figure, twice the point's accuracy.
    public static func reducedLine(_ point: ReducedPoint, time: Date?) -> String {
        var line = BrokerLine("FIX")
        line.add("mode", FixMode.twoDimensional.rawValue)
        line.add("quality", FixQuality.unknown.rawValue)
        line.add("time", time?.timeIntervalSince1970)
        line.add("lat", point.latitude)
        line.add("lon", point.longitude)
        line.add("eph", point.accuracy * 2)
        line.add("reduced", true)
        return line.line
    }

    /// A PROBLEM line for `error`; `terminal`: the program's updates end with it. What gpslocd
    /// relays from gpsd travels as values (gpsd's error, its refusal), the rest in `words`.
    public static func problemLine(_ error: CLError, terminal: Bool, words: Words = .values) -> String {
        var line = BrokerLine("PROBLEM")
        line.add("code", error.code.rawValue)
        line.add("reason", error.reason?.name)
        switch error.facts {
        case .gpsd(let gpsd):
            line.add("gpsd", gpsd.code.name)
            line.add("host", gpsd.endpoint.host)
            line.add("port", gpsd.endpoint.port)
            line.add("device", gpsd.endpoint.device)
            line.add("libgps", gpsd.libgpsCode.map(Int.init))
            line.add("libgpsMessage", gpsd.libgpsMessage)
            line.add("silence", gpsd.silence)
        case .gpsdRefused(let endpoint, let said):
            line.add("endpoint", endpoint)
            line.add("said", said)
        default:
            line.add("message", words.failure(error))
        }
        line.add("terminal", terminal)
        return line.line
    }

    static func error(from message: BrokerMessage) -> CLError {
        let facts: CLError.Facts
        if let name = message.string("gpsd"), let host = message.string("host"), let port = message.int("port") {
            let endpoint = GPSDEndpoint(host: host, port: port, device: message.string("device"))
            facts = .gpsd(
                GPSDError(
                    codeNamed: name, endpoint: endpoint, libgpsCode: message.int("libgps").map(Int32.init),
                    libgpsMessage: message.string("libgpsMessage"), silence: message.double("silence")))
        } else if let endpoint = message.string("endpoint"), let said = message.string("said") {
            facts = .gpsdRefused(endpoint: endpoint, said: said)
        } else {
            // A line with nothing to say still says so (0.12 fell back to words of its own).
            facts = message.string("message").map { $0.isEmpty ? .brokerSaidNothing : .text($0) } ?? .brokerSaidNothing
        }
        return CLError(
            CLError.Code(rawValue: message.int("code") ?? 0) ?? .locationUnknown, facts,
            reason: message.string("reason").map(CLError.Reason.init))
    }

    /// The note a NOTICE line carries: gpsd's reconnections as values, the rest as words.
    static func note(from message: BrokerMessage) -> LocationDiagnostic {
        let code = message.string("code") ?? "broker"
        if let endpoint = message.string("endpoint") {
            if let attempt = message.int("attempt"), let delay = message.double("delay") {
                return LocationDiagnostic(code: code, .reconnecting(endpoint: endpoint, attempt: attempt, delay: delay))
            }
            return LocationDiagnostic(code: code, .reconnected(endpoint: endpoint))
        }
        return LocationDiagnostic(code: code, .text(message.string("message") ?? ""))
    }

    /// The location a kept FIX object (a WELCOME's `last`) stands for, as the engine would have
    /// made it: with the receiver's estimate of its time (`lastEstimate`) applied by the engine's
    /// rule; a `reduced` one is the grid point with reduced accuracy's fields.
    static func lastLocation(from message: BrokerMessage, estimate: BrokerMessage? = nil) -> LocationValue? {
        guard case .fix(var fix) = event(from: message), let latitude = fix.latitude, let longitude = fix.longitude,
            fix.time != nil
        else { return nil }
        if let estimate, case .errorEstimate(let known) = event(from: estimate) {
            fix = LocationEngine.applying(known, to: fix)
        }
        if message.bool("reduced") == true {
            return LocationFuzzer.reducedLocation(
                ReducedPoint(
                    latitude: latitude, longitude: longitude, accuracy: (fix.errors.horizontal ?? 6400) / 2,
                    timestamp: fix.time!),
                source: .receiver)
        }
        return AccuracyStage().location(from: fix, source: .receiver)
    }

    /// The source event a line from gpslocd carries, or nil when it carries none.
    static func event(from message: BrokerMessage) -> LocationSourceEvent? {
        func time(_ key: String = "time") -> Date? { message.double(key).map { Date(timeIntervalSince1970: $0) } }
        switch message.messageClass {
        case "FIX":
            let errors = FixErrors(
                time: message.double("ept"), longitude: message.double("epx"), latitude: message.double("epy"),
                horizontal: message.double("eph"), vertical: message.double("epv"), speed: message.double("eps"),
                course: message.double("epd"), climb: message.double("epc"))
            return .fix(
                Fix(
                    mode: FixMode(rawValue: message.int("mode") ?? 0) ?? .notSeen,
                    quality: FixQuality(rawValue: message.int("quality") ?? 0) ?? .unknown, time: time(),
                    latitude: message.double("lat"), longitude: message.double("lon"),
                    altitudeHAE: message.double("altHAE"), altitudeMSL: message.double("altMSL"),
                    geoidSeparation: message.double("geoidSep"), errors: errors, speed: message.double("speed"),
                    course: message.double("track"), climb: message.double("climb"),
                    magneticVariation: message.double("magvar"), device: message.string("device")))
        case "ESTIMATE":
            return .errorEstimate(
                ReceiverErrorEstimate(
                    time: time(), latitude: message.double("lat"), longitude: message.double("lon"),
                    altitude: message.double("alt")))
        case "SKY":
            let satellites = message.objects("satellites").compactMap { object -> Satellite? in
                guard let prn = object.int("prn") else { return nil }
                return Satellite(
                    prn: prn, constellation: Constellation(rawValue: object.int("gnss") ?? 0) ?? .gps,
                    satelliteID: object.int("svid") ?? prn, signalToNoise: object.double("ss"),
                    elevation: object.double("el"), azimuth: object.double("az"), used: object.bool("used") ?? false)
            }
            return .sky(
                SkyView(
                    time: time(), satellites: satellites,
                    dilution: DilutionOfPrecision(
                        x: message.double("xdop"), y: message.double("ydop"), position: message.double("pdop"),
                        horizontal: message.double("hdop"), vertical: message.double("vdop"),
                        time: message.double("tdop"), geometric: message.double("gdop"))))
        case "HEADING":
            return .heading(
                HeadingReading(
                    trueHeading: message.double("true"), magneticHeading: message.double("magnetic"),
                    magneticVariation: message.double("magvar"), device: message.string("device")))
        case "DEVICE":
            guard let path = message.string("path") else { return nil }
            return .device(
                DeviceEvent(
                    path: path, driver: message.string("driver"), activated: message.bool("activated") ?? false,
                    baudRate: message.int("bps"), cycle: message.double("cycle")))
        case "NOTICE":
            return .notice(note(from: message))
        case "PROBLEM":
            return .problem(error(from: message), terminal: message.bool("terminal") ?? false)
        default:
            return nil
        }
    }
}

extension BrokerProtocol {
    /// Writes all of `line` to a socket without SIGPIPE (a gone peer is an error, not a signal).
    public static func sendAll(_ fd: Int32, _ line: String) -> Bool {
        var bytes = Array(line.utf8)
        return bytes.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < raw.count {
                let sent = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if sent < 0 && errno == EINTR { continue }
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }
}

/// Splits a byte stream into lines (without the newline); a line over the maximum is an error.
public struct BrokerLineReader: Sendable {
    private var buffer: [UInt8]
    private var chunk: [UInt8] = []
    var start = 0
    private(set) var failure: Failure?

    /// Why reading ended, when it was not the end of the stream.
    public enum Failure: Sendable, Hashable {
        /// A line longer than `limit` bytes.
        case tooLong(limit: Int)
        /// `read` failed (`cause`: the system's `strerror`).
        case readFailed(cause: String)
    }

    /// A reader starting with bytes already read.
    public init(pending: [UInt8] = []) { buffer = pending }

    var remainder: [UInt8] { Array(buffer[start...]) }

    /// The next whole line, if one is buffered.
    public mutating func next() -> ArraySlice<UInt8>? {
        guard let newline = buffer[start...].firstIndex(of: 10) else {
            if start > 0 {
                buffer.removeFirst(start)
                start = 0
            }
            return nil
        }
        let line = buffer[start..<newline]
        start = newline + 1
        return line
    }

    /// Reads more from `fd` (blocking); false at the end of the stream, an error, or an overlong line.
    mutating func fill(from fd: Int32) -> Bool {
        if buffer.count - start > BrokerProtocol.maximumLineLength {
            failure = .tooLong(limit: BrokerProtocol.maximumLineLength)
            return false
        }
        // One chunk for the reader's life: made and zeroed at every read it was a 16 KiB
        // allocation and memset a line (28 k instructions a receiver cycle behind gpslocd).
        if chunk.isEmpty { chunk = [UInt8](repeating: 0, count: 16 << 10) }
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
                return true
            }
            if count < 0 && errno == EINTR { continue }
            failure = count == 0 ? nil : .readFailed(cause: String(cString: strerror(errno)))
            return false
        }
    }

    /// Appends bytes already read (a non-blocking server's reads).
    public mutating func append(_ bytes: UnsafeRawBufferPointer) { buffer.append(contentsOf: bytes) }
    /// Bytes buffered and not yet returned as lines.
    public var pendingCount: Int { buffer.count - start }
}
