import Foundation
import GNSSCore
import GPSDProcesses
import GPSLocation

#if canImport(Glibc)
    import Glibc
#endif

/// How soon, and how whole, a live location arrives after the receiver's last sentence of its
/// epoch (#49): a simulated receiver on a pseudo-terminal (`PseudoTerminalReceiver`), a real gpsd
/// reading it, a `CLLocationManager` on that gpsd, and gpsd's own client, `gpspipe -w`, beside it.
///
/// The receiver is stepped: each cycle is written (in one burst, or a sentence at a time at a
/// serial line's pace), and after a warm-up (gpsd and the engine learn the cycle's end from its
/// first epochs) the next cycle is written only once the manager has delivered this one. An
/// engine that waited for the next epoch (or a timer) to complete an epoch would never deliver
/// it: the probe records that epoch in `waitedForNext` after `timeout` and goes on. The delays
/// are counted from the moment the cycle's last sentence went into the terminal, on the
/// monotonic clock: the manager's first delivery of the epoch, and gpspipe's line with gpsd's
/// last TPV (or GST) of the epoch (read once the next cycle's first TPV shows gpsd has finished
/// it). A delay is negative when the epoch was complete before its cycle ended (an RMC-first
/// receiver's GSV carries no fix: gpsd and the engine are done at its GSA).
public enum EpochLatencyProbe {
    /// The order a receiver sends its cycle in.
    public enum Order: String, CaseIterable, Sendable {
        /// SiRF's order (the common USB pucks): GGA, GSA, GSV, RMC — course and speed come last,
        /// and gpsd reports each epoch twice (at its GGA and at its RMC).
        case ggaFirst = "gga-first"
        /// u-blox's and most others': RMC, GGA, GSA, GSV.
        case rmcFirst = "rmc-first"
        /// The fix first and the receiver's error estimate after it: RMC, GGA, GSA, GST.
        case gstAfterFix = "gst-after-fix"

        var sentences: [String] {
            switch self {
            case .ggaFirst: ["GGA", "GSA", "GSV", "RMC"]
            case .rmcFirst: ["RMC", "GGA", "GSA", "GSV"]
            case .gstAfterFix: ["RMC", "GGA", "GSA", "GST"]
            }
        }
    }

    /// What the receiver says of one epoch: the values a complete location carries.
    public struct Epoch: Sendable {
        /// The epoch's time (the receiver's).
        public let time: Date
        /// The receiver's course over ground (RMC), degrees.
        public let course: Double
        /// The receiver's speed over ground (RMC), m/s, as gpsd converts knots.
        public let speed: Double
        /// √(latitude error² + longitude error²) of the epoch's GST (metres), when it has one.
        public let horizontalAccuracy: Double?
    }

    /// What one run saw.
    public struct Outcome: Sendable {
        /// The epochs the receiver sent, in order.
        public let epochs: [Epoch]
        /// The locations the manager delivered for each epoch (matched by time).
        public var delivered: [[CLLocation]]
        /// Locations whose time is no epoch's.
        public var strays: [CLLocation] = []
        /// Seconds from each epoch's last sentence to the manager's first location of it.
        public var ourDelays: [Double?]
        /// Seconds from each epoch's last sentence to gpspipe's line of gpsd's last TPV or GST of it.
        public var gpsdDelays: [Double?]
        /// Epochs after the warm-up that were not delivered before the next was written.
        public var waitedForNext: [Int] = []
        /// Errors the delegate was told of.
        public var errors: [String] = []
        /// The manager's diagnostics (codes), in order: a synthetic receiver of 2026-06-15 is
        /// told to be far behind the system clock (`systemClockOffset`).
        public var diagnostics: [String] = []
        /// The first epoch the delays and `waitedForNext` cover.
        public let warmup: Int

        /// What is wrong with each epoch's delivery, in words (empty: every epoch once, with the
        /// receiver's course and speed, and its GST accuracy where it sent one).
        public var incomplete: [String] {
            epochs.indices.compactMap { index in
                let epoch = epochs[index]
                guard delivered[index].count == 1, let location = delivered[index].first else {
                    return "epoch \(index): delivered \(delivered[index].count) times"
                }
                var wrong: [String] = []
                if abs(location.course - epoch.course) > 0.001 { wrong.append("course \(location.course)") }
                if abs(location.speed - epoch.speed) > 0.001 { wrong.append("speed \(location.speed)") }
                if let accuracy = epoch.horizontalAccuracy, abs(location.horizontalAccuracy - accuracy) > 0.001 {
                    wrong.append("horizontal accuracy \(location.horizontalAccuracy), its GST's \(accuracy)")
                }
                return wrong.isEmpty ? nil : "epoch \(index): " + wrong.joined(separator: ", ")
            }
        }
    }

    /// The receiver's epochs: one a second from 2026-06-15 12:00:00 UTC, moving north-east with
    /// a turning course and a rising speed, so every epoch's course and speed are its own.
    public static func epochs(_ order: Order, count: Int) -> [Epoch] {
        (0..<count).map { index in
            let knots = 12.0 + 0.1 * Double(index)
            return Epoch(
                time: Date(timeIntervalSince1970: 1_781_524_800 + Double(index)),
                course: 30 + 2 * Double(index), speed: knots * 1852 / 3600,
                horizontalAccuracy: order == .gstAfterFix
                    ? ((1.2 + 0.01 * Double(index)) * (1.2 + 0.01 * Double(index)) + 0.81).squareRoot() : nil)
        }
    }

    /// The recording of `epochs(order, count:)`, one cycle per epoch, in `order`.
    public static func recording(_ order: Order, count: Int) -> String {
        var text = ""
        for index in 0..<count {
            let time = String(format: "12%02d%02d.00", index / 60, index % 60)
            let minutes = 27.24 + 0.003 * Double(index)
            let latitude = String(format: "51%07.4f,N", minutes)
            let longitude = String(format: "002%07.4f,W", 35.8 - 0.003 * Double(index))
            for type in order.sentences {
                let body =
                    switch type {
                    case "GGA": "GPGGA,\(time),\(latitude),\(longitude),1,08,0.9,\(40 + index % 10).0,M,48.0,M,,"
                    case "GSA": "GPGSA,A,3,05,12,25,29,31,,,,,,,,1.6,0.9,1.3"
                    case "GSV": "GPGSV,1,1,04,05,40,050,41,12,35,120,40,25,60,200,44,29,20,300,38"
                    case "GST":
                        "GPGST,\(time),2.0,1.5,1.0,35.0,\(String(format: "%.2f", 1.2 + 0.01 * Double(index))),0.90,2.00"
                    default:
                        "GPRMC,\(time),A,\(latitude),\(longitude),\(String(format: "%.1f", 12.0 + 0.1 * Double(index))),"
                            + "\(String(format: "%.1f", 30 + 2 * Double(index))),150626,,,A"
                    }
                text += "$\(body)*" + String(format: "%02X", body.utf8.reduce(UInt8(0), ^)) + "\r\n"
            }
        }
        return text
    }

    /// Plays `cycles` epochs of `order` through a real gpsd, `baud` nil: each cycle in one burst;
    /// else a sentence at a time at that line speed. Cycles begin no sooner than `interval`
    /// seconds apart (0: as soon as the last one was delivered). The first `warmup` epochs are
    /// not timed: gpsd and the engine learn the receiver's cycle from them.
    public static func run(
        order: Order, baud: Int?, cycles: Int, interval: Double = 0, warmup: Int = 4,
        timeout: Duration = .seconds(20)
    ) async throws -> Outcome {
        let epochs = epochs(order, count: cycles + 1)
        let receiver = try PseudoTerminalReceiver(recording: recording(order, count: cycles + 1), interval: 1)
        let server = try GPSDServer(devices: [receiver.path])
        defer {
            server.stop()
            receiver.stop()
        }
        try server.waitUntilListening()
        // Each line of gpspipe's and each callback re-checks what the probe waits for.
        let changes = ChangeWaiters()
        let pipe = try GPSPipeLines(port: server.endpoint.port, changes: changes)
        defer { pipe.stop() }
        let delegate = TimingDelegate(changes: changes)
        let manager = CLLocationManager(
            source: GPSDLocationSource(endpoint: server.endpoint),
            authorizer: LocationAuthorizer(
                appID: "epoch-latency", initial: AuthorizationDecision(status: .authorizedAlways), isInUse: true),
            delegateQueue: DispatchQueue(label: "epoch-latency.delegate"))
        manager.maximumLocationAge = 1e9  // the receiver's epochs are of 2026-06-15
        manager.maximumBatch = .max
        manager.pausesLocationUpdatesAutomatically = false
        manager.delegate = delegate
        manager.diagnosticsHandler = { diagnostic in delegate.note(diagnostic) }
        manager.startUpdatingLocation()
        defer { manager.stopUpdatingLocation() }
        // Both clients watching before the first sentence: gpspipe has printed gpsd's WATCH
        // reply, the manager has heard gpsd's device list.
        guard await changes.wait(hangLimit: timeout.seconds, { pipe.watching && delegate.heardReceiver }) else {
            throw ProbeError(
                "gpsd's clients did not connect in \(timeout): gpspipe \(pipe.watching), manager \(delegate.heardReceiver)"
            )
        }

        var lastSentence: [ContinuousClock.Instant] = []
        var outcome = Outcome(
            epochs: Array(epochs.prefix(cycles)), delivered: Array(repeating: [], count: cycles),
            ourDelays: Array(repeating: nil, count: cycles), gpsdDelays: Array(repeating: nil, count: cycles),
            warmup: warmup)
        let began = ContinuousClock.now
        for index in 0..<cycles {
            let start = began + .seconds(interval * Double(index))
            if start > .now { try await Task.sleep(until: start) }
            lastSentence.append(try await receiver.writeCycle(index, baud: baud))
            guard index >= warmup else { continue }
            let time = epochs[index].time
            if !(await changes.wait(hangLimit: timeout.seconds, { delegate.hasLocation(at: time) })) {
                outcome.waitedForNext.append(index)
            }
        }
        // One more cycle: once gpspipe prints its first TPV, gpsd has said all it will of the others.
        _ = try await receiver.writeCycle(cycles, baud: baud)
        let after = GPSPipeLines.key(epochs[cycles].time)
        let last = epochs[cycles - 1].time
        _ = await changes.wait(hangLimit: timeout.seconds) {
            pipe.lastTPV[after] != nil && delegate.hasLocation(at: last)
        }

        let arrivals = delegate.arrivals
        let gpsd = pipe.lastTPV
        for (location, arrived) in arrivals {
            guard let index = epochs.firstIndex(where: { abs($0.time.timeIntervalSince(location.timestamp)) < 0.001 })
            else {
                outcome.strays.append(location)
                continue
            }
            guard index < cycles else { continue }  // the closing cycle's
            if outcome.delivered[index].isEmpty {
                outcome.ourDelays[index] = (arrived - lastSentence[index]).seconds
            }
            outcome.delivered[index].append(location)
        }
        for index in 0..<cycles {
            outcome.gpsdDelays[index] = gpsd[GPSPipeLines.key(epochs[index].time)].map {
                ($0 - lastSentence[index]).seconds
            }
        }
        outcome.errors = delegate.errors
        outcome.diagnostics = delegate.diagnostics
        return outcome
    }

    /// Percentile `p` (0…100) of `values`, nearest rank; nil when empty.
    public static func percentile(_ values: [Double], _ p: Double) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        let rank = Int((p / 100 * Double(sorted.count)).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}

/// Why the probe could not run.
public struct ProbeError: Error, CustomStringConvertible {
    /// What went wrong, and what to check.
    public let description: String
    init(_ description: String) { self.description = description }
}

extension Duration {
    fileprivate var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// Each location with the moment it arrived (the monotonic clock).
private final class TimingDelegate: CLLocationManagerDelegate, Sendable {
    private struct State {
        var arrivals: [(CLLocation, ContinuousClock.Instant)] = []
        var errors: [String] = []
        var heardReceiver = false
        var diagnostics: [String] = []
    }
    private let state = Locked(State())
    private let changes: ChangeWaiters

    init(changes: ChangeWaiters) { self.changes = changes }

    var arrivals: [(CLLocation, ContinuousClock.Instant)] { state.withLock { $0.arrivals } }
    var errors: [String] { state.withLock { $0.errors } }
    var heardReceiver: Bool { state.withLock { $0.heardReceiver } }
    var diagnostics: [String] { state.withLock { $0.diagnostics } }
    func note(_ diagnostic: LocationDiagnostic) { state.withLock { $0.diagnostics.append(diagnostic.code) } }
    func hasLocation(at time: Date) -> Bool {
        state.withLock { $0.arrivals.contains { abs($0.0.timestamp.timeIntervalSince(time)) < 0.001 } }
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        let now = ContinuousClock.now
        state.withLock { state in state.arrivals += locations.map { ($0, now) } }
        changes.changed()
    }
    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        state.withLock { $0.errors.append("\(error)") }
    }
    func locationManager(_ manager: CLLocationManager, didChangeReceiver receiver: DeviceEvent) {
        state.withLock { $0.heardReceiver = true }
        changes.changed()
    }
}

/// `gpspipe -w` on a gpsd, its lines read as they come (through a FIFO), the arrival of each
/// TPV and GST kept by its time: the last one wins — gpsd's complete word on the epoch (its last
/// TPV, or the GST after it that a receiver sends after its fix).
private final class GPSPipeLines: Sendable {
    private struct State {
        var watching = false
        var lastTPV: [String: ContinuousClock.Instant] = [:]
    }
    private let state = Locked(State())
    private let child: ChildProcess
    private let directory: URL

    static func key(_ time: Date) -> String {
        // gpsd's "time":"2026-06-15T12:00:05.000Z", to the second (the probe's epochs are whole).
        String(Int(time.timeIntervalSince1970.rounded()))
    }

    init(port: Int, changes: ChangeWaiters) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("gpspipe-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let fifo = directory.appendingPathComponent("out").path
        guard mkfifo(fifo, 0o600) == 0 else { throw ProbeError("mkfifo \(fifo): \(String(cString: strerror(errno)))") }
        let state = state
        let reader = Thread {
            let descriptor = open(fifo, O_RDONLY)
            guard descriptor >= 0 else { return }
            defer { close(descriptor) }
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count <= 0 { return }
                let now = ContinuousClock.now
                pending += buffer[0..<count]
                while let end = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[..<end], as: UTF8.self)
                    pending.removeSubrange(...end)
                    Self.take(line, at: now, into: state)
                }
                changes.changed()
            }
        }
        reader.start()
        child = try ChildProcess(
            executable: "/usr/bin/gpspipe", arguments: ["-w", "127.0.0.1:\(port)"],
            environment: ProcessInfo.processInfo.environment, stdoutPath: fifo)
    }

    private static func take(_ line: String, at now: ContinuousClock.Instant, into state: Locked<State>) {
        if line.hasPrefix("{\"class\":\"WATCH\"") { state.withLock { $0.watching = true } }
        guard line.hasPrefix("{\"class\":\"TPV\"") || line.hasPrefix("{\"class\":\"GST\""),
            let range = line.range(of: "\"time\":\"")
        else { return }
        let text = line[range.upperBound...].prefix { $0 != "\"" }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let time = formatter.date(from: String(text)) else { return }
        state.withLock { $0.lastTPV[key(time)] = now }
    }

    var watching: Bool { state.withLock { $0.watching } }
    var lastTPV: [String: ContinuousClock.Instant] { state.withLock { $0.lastTPV } }

    func stop() {
        child.terminate()
        // A reader still waiting in open() (gpspipe never started) is let go.
        let fifo = directory.appendingPathComponent("out").path
        let writer = open(fifo, O_WRONLY | O_NONBLOCK)
        if writer >= 0 { close(writer) }
        try? FileManager.default.removeItem(at: directory)
    }
}
