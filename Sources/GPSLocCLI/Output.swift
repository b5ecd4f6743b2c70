import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// Where a command's updates go: NDJSON lines, or a human view on a terminal.
///
/// Sendable: while a source runs, its reader thread, the engine's timer thread and the
/// authorization watcher may each write to a sink, so every sink serializes its own writes.
protocol UpdateSink: AnyObject, Sendable {
    func location(_ location: LocationValue)
    func error(_ error: CLError)
    func diagnostic(code: String, message: String)
    func device(_ device: DeviceEvent)
    func authorization(status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization, reason: String?)
    func sky(_ sky: SkyView)
    /// A receiver's heading (only receivers that report one: HDT, THS, HDG, gpsd's ATT).
    func heading(_ heading: HeadingValue)
    /// Whether `sky` shows anything (the terminal table): otherwise gpsd's SKY reports are
    /// not even decoded.
    var showsSky: Bool { get }
    /// A monitored region's state became known or changed (`--region`).
    func region(_ event: RegionEvent)
    /// A visit began or ended (`--visits`).
    func visit(_ visit: VisitRecord)
    /// Starts showing (the terminal table draws nothing before: a consent question asked on the
    /// terminal stays readable until it is answered).
    func show()
    func finish()
    /// Something the user asked for could not be written (the `--gpx` track): the command ends
    /// with exit status 1 though locations flowed.
    var outputFailed: Bool { get }
}

extension UpdateSink {
    var showsSky: Bool { false }
    func show() {}
    var outputFailed: Bool { false }
}

/// Text from outside (gpsd's device paths and driver names, identifiers from files, what another
/// program sent) made safe for a terminal: the library's one rule, `TerminalText.escaped`.
func terminalSafe(_ text: String) -> String { TerminalText.escaped(text) }

/// One line (or more) on stderr. A closed stderr loses it and nothing else: gpsloc goes on.
func standardError(_ text: String) { DescriptorWrite.write(text, to: STDERR_FILENO) }

/// Bytes on stdout; when stdout cannot take them, gpsloc ends (`stdoutFailed`).
func standardOutput(_ bytes: [UInt8]) {
    if let error = DescriptorWrite.write(bytes, to: STDOUT_FILENO) {
        stdoutFailed(error)
    }
}

/// stdout failed: a reader that went away (EPIPE, e.g. `| head`) ends gpsloc quietly with 141,
/// the status a shell shows for a process ended by SIGPIPE (gpspipe is silent there too: the
/// reader left on purpose); any other failure (a closed descriptor, a full disk) with 74
/// (EX_IOERR) and one line on stderr saying why. Never 0: a supervisor (`Restart=on-failure`)
/// must see that the output went nowhere.
func stdoutFailed(_ error: Int32) -> Never {
    if error != EPIPE {
        standardError("gpsloc: cannot write to stdout: \(String(cString: strerror(error))) — exit status 74\n")
    }
    exit(error == EPIPE ? 141 : 74)
}

/// Writes to a file descriptor in large chunks; `flushEachLine` for live output. A value, kept in
/// its sink's lock.
struct OutputStream: Sendable {
    private let descriptor: Int32
    private let flushEachLine: Bool
    private var pending: [UInt8] = []

    init(descriptor: Int32 = STDOUT_FILENO, flushEachLine: Bool) {
        self.descriptor = descriptor
        self.flushEachLine = flushEachLine
        pending.reserveCapacity(1 << 16)
    }

    mutating func write(_ bytes: [UInt8]) {
        pending.append(contentsOf: bytes)
        if flushEachLine || pending.count >= 1 << 16 { flush() }
    }

    mutating func write(_ text: String) { write(Array(text.utf8)) }

    mutating func flush() {
        var offset = 0
        pending.withUnsafeBytes { raw in
            while offset < raw.count {
                let written = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if written <= 0 {
                    if written < 0 && errno == EINTR { continue }
                    let error = written < 0 ? errno : EIO
                    // stdout gone: gpsloc ends, never with 0. Another descriptor (stderr): the
                    // text is lost and nothing else.
                    if descriptor == STDOUT_FILENO { stdoutFailed(error) }
                    offset = raw.count
                    break
                }
                offset += written
            }
        }
        pending.removeAll(keepingCapacity: true)
    }
}

/// NDJSON on stdout (one object per line), and each error also as a sentence on stderr.
/// Thread-safe: the source's thread, the timer thread and the authorization watcher write to it.
final class NDJSONSink: UpdateSink, Sendable {
    private struct Output {
        var writer = NDJSONWriter()
        var stream: OutputStream
        var errors = OutputStream(descriptor: STDERR_FILENO, flushEachLine: true)
    }
    private let output: Locked<Output>

    init(live: Bool) { output = Locked(Output(stream: OutputStream(flushEachLine: live))) }

    /// Writes one line under the lock.
    private func emit(_ line: (inout NDJSONWriter) -> Void) {
        output.withLock { output in
            line(&output.writer)
            output.stream.write(output.writer.buffer)
            output.writer.removeAll()
        }
    }

    func location(_ location: LocationValue) { emit { $0.location(location) } }

    func error(_ error: CLError) {
        emit { $0.error(error) }
        output.withLock { $0.errors.write("gpsloc: \(error.description)\n") }
    }

    func diagnostic(code: String, message: String) { emit { $0.diagnostic(code: code, message: message) } }
    func device(_ device: DeviceEvent) { emit { $0.device(device) } }

    func authorization(status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization, reason: String?) {
        emit { $0.authorization(status: status, accuracy: accuracy, reason: reason) }
    }

    func sky(_ sky: SkyView) {}
    func heading(_ heading: HeadingValue) { emit { $0.heading(heading) } }

    func region(_ event: RegionEvent) { emit { $0.region(event) } }
    func visit(_ visit: VisitRecord) { emit { $0.visit(visit) } }

    func finish() { output.withLock { $0.stream.flush() } }
}

/// One readable line per event, for a person at a terminal. Each line is one write.
final class TextSink: UpdateSink, Sendable {
    private let units: Units
    init(units: Units = .metric) { self.units = units }
    private struct Output {
        var stream = OutputStream(flushEachLine: true)
        /// The UTC date of the last line, printed again only when it changes.
        var lastDate = ""
    }
    private let output = Locked(Output())
    private var stream: LockedWriter { LockedWriter(output: output) }

    private struct LockedWriter {
        let output: Locked<Output>
        func write(_ text: String) { output.withLock { $0.stream.write(text) } }
        func flush() { output.withLock { $0.stream.flush() } }
    }

    /// Within 80 columns: `08:03:29.0  51.4444648 -2.5569961  ±2.3 m [nav]  alt 42.3 m  11.0 m/s 88° 3d`,
    /// under a `2026-06-15 (UTC)` line whenever the date changes.
    func location(_ location: LocationValue) {
        let stamp = iso8601Milliseconds(location.timestamp)  // 2026-06-15T08:03:29.000Z
        let date = String(stamp.prefix(10))
        let time = String(stamp.dropFirst(11).prefix(10))
        let header = output.withLock { output -> String? in
            defer { output.lastDate = date }
            return date == output.lastDate ? nil : "\(date) (UTC)\n"
        }
        let horizontal =
            location.horizontalAccuracy < CLLocationDistanceMax
            ? "±" + units.length(location.horizontalAccuracy) : "± ?"
        let tier = location.gnss.map { Self.shortTier($0.accuracyClass) } ?? "?"
        let altitude = location.verticalAccuracy > 0 ? "alt " + units.length(location.altitude) : "alt —"
        let speed = location.speed >= 0 ? units.speed(location.speed, brief: true) : "—"
        let course = location.course >= 0 ? "\(fixedDecimal(location.course, decimals: 0))°" : "—°"
        let mode = location.gnss?.fixMode.description ?? ""
        let reduced = location.gnss?.reduced == true ? "  REDUCED" : ""
        let coordinates =
            "\(fixedDecimal(location.coordinate.latitude, decimals: 7)) \(fixedDecimal(location.coordinate.longitude, decimals: 7))"
        stream.write(
            (header ?? "")
                + "\(time)  \(coordinates)  \(horizontal) [\(tier)]  \(altitude)  \(speed) \(course) \(mode)\(reduced)\n"
        )
    }

    /// The accuracy tier in a few letters (the full names are in NDJSON and the watch table).
    static func shortTier(_ tier: AccuracyClass) -> String {
        switch tier {
        case .bestForNavigation: "nav"
        case .best: "best"
        case .nearestTenMeters: "10 m"
        case .hundredMeters: "100 m"
        case .kilometer: "1 km"
        case .threeKilometers: "3 km"
        case .coarse: "coarse"
        }
    }

    func error(_ error: CLError) { stream.write("error (\(error.code)): \(terminalSafe(error.description))\n") }
    func diagnostic(code: String, message: String) { stream.write("note: \(terminalSafe(message))\n") }
    func device(_ device: DeviceEvent) {
        stream.write(
            terminalSafe(
                "device \(device.path) \(device.activated ? "active" : "inactive")\(device.driver.map { " (\($0))" } ?? "")"
            )
                + "\n")
    }
    func authorization(status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization, reason: String?) {
        stream.write("authorization: \(status.name), \(accuracy.name) accuracy\(reason.map { " — \($0)" } ?? "")\n")
    }
    func sky(_ sky: SkyView) {}
    func heading(_ heading: HeadingValue) {
        stream.write(
            "heading \(TableSink.describe(heading)) at \(iso8601Milliseconds(heading.timestamp).dropFirst(11).prefix(10))\n"
        )
    }
    func region(_ event: RegionEvent) {
        let limited = event.limitation.map { " (\($0.rawValue))" } ?? ""
        stream.write(
            "region \(terminalSafe(event.identifier)): \(event.kind.rawValue), \(event.state.rawValue)\(limited) at "
                + "\(iso8601Milliseconds(event.timestamp))\n")
    }
    func visit(_ visit: VisitRecord) {
        let departure = visit.departure.map { "left \(iso8601Milliseconds($0))" } ?? "still there"
        stream.write(
            "visit: arrived \(iso8601Milliseconds(visit.arrival)), \(departure), "
                + "\(fixedDecimal(visit.latitude, decimals: 7)) \(fixedDecimal(visit.longitude, decimals: 7)) ±\(fixedDecimal(visit.horizontalAccuracy, decimals: 0)) m\n"
        )
    }
    func finish() { stream.flush() }
}

/// Shows nothing on stdout (`--gpx -`, whose stdout is the track): errors and notes go to stderr.
final class QuietSink: UpdateSink, Sendable {
    func location(_ location: LocationValue) {}
    func error(_ error: CLError) { standardError("gpsloc: \(terminalSafe(error.message))\n") }
    func diagnostic(code: String, message: String) { standardError("gpsloc: \(terminalSafe(message))\n") }
    func device(_ device: DeviceEvent) {}
    func authorization(status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization, reason: String?) {}
    func sky(_ sky: SkyView) {}
    func heading(_ heading: HeadingValue) {}
    var showsSky: Bool { false }
    func region(_ event: RegionEvent) {}
    func visit(_ visit: VisitRecord) {}
    func show() {}
    func finish() {}
    var outputFailed: Bool { false }
}

/// Also records every delivered location in a GPX 1.1 track (`--gpx FILE`).
final class GPXRecordingSink: UpdateSink, Sendable {
    private let inner: UpdateSink
    private struct Track {
        let writer: GPXWriter
        var failed = false
    }
    private let track: Locked<Track>

    init(inner: UpdateSink, writer: GPXWriter) {
        self.inner = inner
        track = Locked(Track(writer: writer))
    }

    func location(_ location: LocationValue) {
        inner.location(location)
        let error = track.withLock { track -> GPXWriter.WriteError? in
            guard !track.failed else { return nil }
            do throws(GPXWriter.WriteError) {
                try track.writer.append(location)
                return nil
            } catch {
                track.failed = true
                return error
            }
        }
        if let error {
            inner.diagnostic(
                code: "gpx",
                message: error.description + " — the track stops here, a valid GPX of every point before it")
        }
    }

    var outputFailed: Bool { track.withLock { $0.failed } || inner.outputFailed }

    /// A loss of fix (the staleness error, the receiver or gpsd gone): the track's next point
    /// starts a new segment.
    func error(_ error: CLError) {
        let lost: Set<CLError.Reason> = [.stale, .receiverDeactivated, .gpsdLost, .gpsdSilent, .gpsdUnreachable]
        if let reason = error.reason, lost.contains(reason) { track.withLock { $0.writer.breakSegment() } }
        inner.error(error)
    }
    func diagnostic(code: String, message: String) {
        if code == "noFix" { track.withLock { $0.writer.breakSegment() } }
        inner.diagnostic(code: code, message: message)
    }
    func device(_ device: DeviceEvent) { inner.device(device) }
    func authorization(status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization, reason: String?) {
        inner.authorization(status: status, accuracy: accuracy, reason: reason)
    }
    func sky(_ sky: SkyView) { inner.sky(sky) }
    func heading(_ heading: HeadingValue) { inner.heading(heading) }
    var showsSky: Bool { inner.showsSky }
    func region(_ event: RegionEvent) { inner.region(event) }
    func visit(_ visit: VisitRecord) { inner.visit(visit) }
    func show() { inner.show() }
    func finish() {
        track.withLock { $0.writer.finish() }
        inner.finish()
    }
}

extension PipelineOptions {
    /// The sink for these options: NDJSON or text, recording GPX when asked.
    /// `input`: the recording being replayed, which a track never replaces.
    /// `-o FILE`: stdout becomes FILE (created 0600 or truncated if it is a regular file; never a
    /// link, never the recording being replayed), so every writer of stdout writes there.
    func redirectOutput(input: String?) throws(UsageError) {
        guard let output else { return }
        var existing = stat()
        var recording = stat()
        if lstat(output, &existing) == 0, let input, input != "-", stat(input, &recording) == 0,
            existing.st_dev == recording.st_dev, existing.st_ino == recording.st_ino
        {
            throw UsageError("-o \(output) is the recording being replayed")
        }
        let descriptor = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let why = errno == ELOOP ? "it is a symbolic link, never followed" : String(cString: strerror(errno))
            standardError("gpsloc: cannot write \(output): \(why)\n")
            exit(1)
        }
        dup2(descriptor, STDOUT_FILENO)
        close(descriptor)
    }

    func makeSink(live: Bool, trackName: String, table: Bool = false, input: String? = nil) throws(UsageError)
        -> UpdateSink
    {
        try redirectOutput(input: input)
        let json = self.json || isatty(STDOUT_FILENO) == 0
        if gpx == "-" {
            // gpxlogger's habit: the track is what goes to stdout; notes go to stderr.
            if output == nil && isatty(STDOUT_FILENO) != 0 {
                throw UsageError("--gpx - writes XML to stdout: redirect it (> track.gpx) or use -o FILE")
            }
            return GPXRecordingSink(inner: QuietSink(), writer: GPXWriter(standardOutputNamed: trackName))
        }
        guard let gpx else {
            if json { return NDJSONSink(live: live) }
            return table ? TableSink(title: trackName, units: units) as UpdateSink : TextSink(units: units)
        }
        var track = stat()
        if lstat(gpx, &track) == 0 {
            var recording = stat()
            // The recording by its device and inode: a path, or standard input (`replay - < FILE`).
            let recordingFound =
                input == "-" ? fstat(STDIN_FILENO, &recording) == 0 : input.map { stat($0, &recording) == 0 } ?? false
            let why: String? =
                if recordingFound, recording.st_dev == track.st_dev, recording.st_ino == track.st_ino {
                    "it is the recording being replayed"
                } else if (track.st_mode & S_IFMT) == S_IFLNK {
                    "it is a symbolic link, which a track never follows"
                } else if (track.st_mode & S_IFMT) != S_IFREG {
                    "it is not a regular file"
                } else if !force {
                    "it exists — gpsloc never overwrites a file with a track unless --force; choose a new name"
                } else {
                    nil
                }
            if let why {
                standardError("gpsloc: cannot write the track \(gpx): \(why)\n")
                exit(1)
            }
            unlink(gpx)
        }
        let base: UpdateSink =
            if json {
                NDJSONSink(live: live)
            } else if table {
                TableSink(title: trackName, units: units)
            } else {
                TextSink(units: units)
            }
        do {
            return GPXRecordingSink(inner: base, writer: try GPXWriter(path: gpx, name: trackName))
        } catch {
            // Not a usage mistake: a runtime failure, one sentence and exit 1, before anything runs.
            standardError("gpsloc: \(error.description)\n")
            exit(1)
        }
    }
}
