internal import CPseudoTerminal
import Foundation
import GNSSCore
import GPSLocation

#if canImport(Glibc)
    import Glibc
#endif

/// A simulated serial GNSS receiver: a pseudo-terminal whose other end a real gpsd opens as
/// if it were `/dev/ttyACM0`, fed NMEA one receiver cycle at a time at the recording's rate.
///
/// Unlike gpsfake (which drops its device for good when gpsd deactivates it), it keeps talking
/// when gpsd lets go of the device (`gpsdctl remove`, a restart): writes never block; what
/// nobody reads waits in the terminal's buffer (about 4 KB) and the rest is lost, and when gpsd
/// opens the device again it reads on from there. Used by the integration tests and
/// the soak benchmark.
public final class PseudoTerminalReceiver: Sendable {

    /// The device path gpsd should open (`/dev/pts/N`).
    public let path: String
    private let master: Int32
    private let cycles: [[UInt8]]
    private let interval: Double
    private let queue = DispatchQueue(label: "gpslocation.pty-receiver")
    private struct Playing {
        var timer: DispatchSource?
        var index = 0
        var written = 0
        var dropped = 0
    }
    private let playing = Locked(Playing())

    /// Splits `recording` into receiver cycles (a new cycle starts at each repeat of the first
    /// sentence type seen, e.g. `RMC`) and prepares to play one cycle every `interval` seconds.
    /// Comment lines (`#`) are skipped; line ends become CR LF.
    public init(recording: String, interval: Double) throws {
        var cycles: [[UInt8]] = []
        var current: [UInt8] = []
        var starter: Substring?
        for line in recording.split(whereSeparator: \.isNewline) where line.hasPrefix("$") || line.hasPrefix("!") {
            let type = line.dropFirst(3).prefix(3)
            if starter == nil { starter = type }
            if type == starter && !current.isEmpty {
                cycles.append(current)
                current = []
            }
            current += Array(line.utf8) + [13, 10]
        }
        if !current.isEmpty { cycles.append(current) }
        guard !cycles.isEmpty else { throw PseudoTerminalError.emptyRecording }
        self.cycles = cycles
        self.interval = interval

        var name = [CChar](repeating: 0, count: 128)
        let master = cpty_open(O_RDWR | O_NOCTTY, &name, name.count)
        guard master >= 0 else { throw PseudoTerminalError.system("posix_openpt", -master) }
        path = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let slave = open(path, O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw PseudoTerminalError.system("open \(path)", errno) }
        // Raw bytes, no echo, no CR/LF translation: a serial line.
        var settings = termios()
        tcgetattr(slave, &settings)
        cfmakeraw(&settings)
        tcsetattr(slave, TCSANOW, &settings)
        close(slave)
        // gpsd started as root drops its privileges after start-up; to open the device again
        // (`gpsdctl add`, hotplug) as the unprivileged user, the device must be readable by it,
        // as udev makes a real receiver (`udev/61-gpslocation-gnss.rules`).
        guard chmod(path, 0o666) == 0 else { throw PseudoTerminalError.system("chmod \(path)", errno) }
        _ = fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK)
        self.master = master
    }

    deinit {
        playing.withLock { $0.timer?.cancel() }
        close(master)
    }

    /// Number of receiver cycles in the recording.
    public var cycleCount: Int { cycles.count }

    /// Starts playing, looping over the recording (`loop`) or stopping at its end.
    public func start(loop: Bool = true) {
        let timer = DispatchSource.sendable(DispatchSource.makeTimerSource(queue: queue))
        timer.schedule(deadline: .now(), repeating: interval, leeway: .milliseconds(1))
        timer.setEventHandler { [weak self] in self?.tick(loop: loop) }
        playing.withLock { $0.timer = timer }
        timer.resume()
    }

    /// Stops writing and closes the terminal.
    public func stop() {
        let timer = playing.withLock { playing -> (any DispatchSourceTimer)? in
            defer { playing.timer = nil }
            return playing.timer
        }
        timer?.cancel()
        queue.sync {}
    }

    /// Writes cycle `index` now, instead of on the timer (`start` is not called): in one write
    /// (`baud` nil: a receiver that sends its epoch in one burst, as USB receivers do) or one
    /// sentence at a time, each followed by the time its bytes take on a serial line at `baud`
    /// (10 bits a byte), as a 9600-baud receiver trickles its cycle. Returns when the cycle's
    /// last sentence went into the terminal (the monotonic clock): the moment from which a
    /// client's delay is counted.
    public func writeCycle(_ index: Int, baud: Int? = nil) async throws -> ContinuousClock.Instant {
        let cycle = cycles[index % cycles.count]
        var pieces: [ArraySlice<UInt8>] = []
        if baud == nil {
            pieces = [cycle[...]]
        } else {
            var start = cycle.startIndex
            for end in cycle.indices where cycle[end] == 10 {
                pieces.append(cycle[start...end])
                start = end + 1
            }
        }
        var last = ContinuousClock.now
        for (number, piece) in pieces.enumerated() {
            if number > 0, let baud {
                try await Task.sleep(for: .seconds(Double(pieces[number - 1].count * 10) / Double(baud)))
            }
            let result = piece.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
            last = ContinuousClock.now
            guard result == piece.count else {
                throw PseudoTerminalError.system("write \(path)", result < 0 ? errno : EAGAIN)
            }
            var sink = [UInt8](repeating: 0, count: 4096)
            while read(master, &sink, sink.count) > 0 {}
        }
        playing.withLock { $0.written += 1 }
        return last
    }

    /// Cycles written whole, and cycles (partly) lost because nobody was reading.
    public var counts: (written: Int, dropped: Int) { playing.withLock { ($0.written, $0.dropped) } }

    private func tick(loop: Bool) {
        let next = playing.withLock { playing -> Int? in
            guard loop || playing.index < cycles.count else { return nil }
            defer { playing.index += 1 }
            return playing.index % cycles.count
        }
        guard let next else {
            // On the queue already: cancel without waiting for ourselves.
            playing.withLock { playing -> (any DispatchSourceTimer)? in
                defer { playing.timer = nil }
                return playing.timer
            }?.cancel()
            return
        }
        // Whatever gpsd has not read of the earlier cycles is overwritten by the line
        // discipline's buffer limit, not waited for: a receiver does not wait either.
        let bytes = cycles[next]
        let result = bytes.withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
        playing.withLock {
            if result == bytes.count { $0.written += 1 } else { $0.dropped += 1 }
        }
        // Discard anything gpsd wrote to the "receiver" (probes, configuration).
        var sink = [UInt8](repeating: 0, count: 4096)
        while read(master, &sink, sink.count) > 0 {}
    }
}

/// Why a pseudo-terminal receiver could not be made.
public enum PseudoTerminalError: Error, CustomStringConvertible {
    /// The recording holds no NMEA sentence.
    case emptyRecording
    /// A system call failed: its name and `errno`.
    case system(String, Int32)

    /// What failed.
    public var description: String {
        switch self {
        case .emptyRecording: "the recording has no NMEA sentences"
        case .system(let call, let code): "\(call) failed: \(String(cString: strerror(code)))"
        }
    }
}
