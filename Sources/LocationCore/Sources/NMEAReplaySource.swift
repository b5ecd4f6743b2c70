import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import NMEA0183
import Synchronization

/// How fast a replay runs.
public enum ReplayPacing: Sendable, Equatable {
    /// No waiting: virtual time, fully deterministic.
    case asFastAsPossible
    /// Real time scaled: 1 is as recorded, 10 is ten times faster.
    case realTime(speed: Double)
}

/// Waits for a replay. Injected so tests run a one-hour recording in milliseconds.
public protocol ReplayClock: Sendable {
    /// Seconds since an arbitrary fixed point.
    func now() -> Double
    /// Waits `seconds` (pacing a replay).
    func sleep(seconds: Double)
}

/// The machine's monotonic clock.
public struct MonotonicReplayClock: ReplayClock {
    /// The system's monotonic clock.
    public init() {}
    /// `CLOCK_MONOTONIC`, in seconds.
    public func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
    /// Sleeps `seconds`, resuming after signals.
    public func sleep(seconds: Double) {
        guard seconds > 0 else { return }
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - Double(Int(seconds))) * 1e9))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}

/// An NMEA recording (a file, or standard input with path "-") replayed through GPSLocation's
/// own parser, as a `LocationSource`: no daemon. Fixes come in order on the source's own
/// thread (as fast as possible: one thread parses and another delivers, so a replay takes the
/// longer of the two, not their sum); "now" is the recording's clock (the latest fix time), so staleness and timeouts
/// behave as they did live. When the recording ends the source reports a terminal
/// `.problem(locationUnknown)` saying so.
///
/// ```swift
/// let authorizer = LocationAuthorizer(
///     appID: "ci", initial: AuthorizationDecision(status: .authorizedAlways), isInUse: true)
/// for try await update in CLLocationUpdate.liveUpdates(
///     source: NMEAReplaySource(path: "Tests/drive.nmea"), authorizer: authorizer)
/// {
///     if let location = update.location { print(location.timestamp, location.coordinate) }
/// }  // ends with the recording
/// ```
public final class NMEAReplaySource: LocationSource, Sendable {
    /// The recording ("-": standard input).
    public let path: String
    /// How fast it is replayed.
    public let pacing: ReplayPacing
    let clock: any ReplayClock
    private struct State {
        var running = false
        var thread: WorkerThread?
        /// The thread that calls the handler in a fast replay (`Handoff`): a `stop` from its
        /// callback must not wait for the run it is part of.
        var deliverer: WorkerThread?
        /// Bumped by each `start`: a reading thread goes on only while its number is current, so
        /// a restart (a `stop` and `start` from the reading thread's own callback) never leaves
        /// two threads reading.
        var run = 0
        /// Signalled when the current run's thread has ended.
        var finished = DispatchSemaphore(value: 0)
        var progress: (@Sendable (Int, Int?) -> Void)?
        var statistics = NMEAStatistics()
    }
    /// The reading thread owns the decoder; everything shared is here.
    private let state = Locked(State())
    /// The number of the run that may read (0: none), stored under `state`'s lock and read by the
    /// reading thread at each fix without it.
    private let currentRun = Atomic<Int>(0)
    /// A `stop()` has been asked for (or nothing was started): the running replay delivers
    /// nothing more. For tests that need to act while a stop is under way.
    var stopRequested: Bool { currentRun.load(ordering: .acquiring) == 0 }
    /// What the recording held (known once it has been read to its end).
    public var statistics: NMEAStatistics { state.withLock { $0.statistics } }

    /// A replay of `path` at `pacing` (default: as fast as the consumer takes it).
    public init(path: String, pacing: ReplayPacing = .asFastAsPossible, clock: any ReplayClock = MonotonicReplayClock())
    {
        self.path = path
        self.pacing = pacing
        self.clock = clock
    }

    /// Whether the recording holds a heading (`HeadingScan`: a valid `HDT`, `THS` or `HDG`
    /// sentence with a value, by the replay's own parser); nil for standard input, which cannot
    /// be read twice.
    public var reportsHeading: Bool? { path == "-" ? nil : HeadingScan.file(path) }

    /// Called now and then with (bytes read, total bytes when known).
    public func onProgress(_ handler: @escaping @Sendable (Int, Int?) -> Void) {
        state.withLock { $0.progress = handler }
    }

    /// Starts reading on a thread of its own.
    public func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) {
        let started = state.withLock { state -> (number: Int, finished: DispatchSemaphore)? in
            if state.running { return nil }
            state.running = true
            if state.run > 0 { state.finished = DispatchSemaphore(value: 0) }
            state.run += 1
            currentRun.store(state.run, ordering: .releasing)
            return (state.run, state.finished)
        }
        guard let started else { return }
        // Made and recorded under the lock; the thread passes the lock before it reads, so a stop
        // from its own handler always finds it recorded.
        state.withLock { state in
            let thread = WorkerThread(name: "gpslocation.replay") { [self] in
                self.state.withLock { _ in }
                run(handler, number: started.number)
                started.finished.signal()
            }
            if state.run == started.number { state.thread = thread }
        }
    }

    /// Stops reading; returns once the reading thread has handed over its last fix.
    public func stop() {
        let (wasRunning, thread, finished) = state.withLock { state in
            defer {
                state.running = false
                currentRun.store(0, ordering: .releasing)
            }
            return (state.running && state.thread != nil, state.thread, state.finished)
        }
        let deliverer = state.withLock { $0.deliverer }
        if wasRunning && thread?.isCurrent != true && deliverer?.isCurrent != true {
            finished.wait()
            finished.signal()
        }
    }

    public var isLive: Bool { false }

    /// Blocks until the recording has been read to the end (or `stop()`).
    public func waitUntilFinished() {
        let finished = state.withLock { $0.finished }
        finished.wait()
        finished.signal()
    }

    private func run(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void, number: Int) {
        let isRunning: () -> Bool = { self.currentRun.load(ordering: .acquiring) == number }
        let descriptor = path == "-" ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let cause = String(cString: strerror(errno))
            handler(
                .problem(
                    CLError(.locationUnknown, .recordingUnreadable(path: path, cause: cause), reason: .sourceFailed),
                    terminal: true))
            return
        }
        defer { if descriptor != STDIN_FILENO { close(descriptor) } }
        var total: Int?
        var info = stat()
        if fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG { total = Int(info.st_size) }
        let report = state.withLock { $0.progress }

        var decoder = NMEADecoder()
        // 128 KiB a read, and the chunks' storage reused (`Handoff`): the benchmark hour's fast
        // replay peaks at 16.8 MB resident where 1 MiB reads into a fresh array per chunk took
        // 19.0 MB, with 805 page faults instead of 2,064; its wall time did not change measurably.
        var buffer = [UInt8](repeating: 0, count: 1 << 17)
        var readSoFar = 0
        var firstRecordingTime: Date?
        var firstClock = 0.0
        let speed: Double? = if case .realTime(let speed) = pacing { speed } else { nil }

        let deliver: (Fix) -> Void = { [self] fix in
            if let time = fix.time {
                if let speed {
                    if let first = firstRecordingTime {
                        let due = firstClock + time.timeIntervalSince(first) / speed
                        // In slices of at most 20 ms, so `stop()` ends a paced replay at once
                        // instead of after the rest of the recording's time.
                        while isRunning() {
                            let wait = due - clock.now()
                            if wait <= 0 { break }
                            clock.sleep(seconds: min(wait, 0.02))
                        }
                    } else {
                        firstRecordingTime = time
                        firstClock = clock.now()
                    }
                }
            }
            if isRunning() { handler(.fix(fix)) }
        }
        let deliverHeading: (HeadingReading) -> Void = { heading in
            if isRunning() { handler(.heading(heading)) }
        }
        // The satellite picture, as gpsd reports a SKY: when a cycle's GSVs complete it.
        let deliverSky: (SkyView) -> Void = { sky in
            if isRunning() { handler(.sky(sky)) }
        }
        // As fast as possible, parsing and the handler (the engine, the app) run on two threads,
        // a chunk's events handed over in order (`Handoff`): the replay takes the longer of the
        // two instead of their sum. Paced, the handler runs here, each fix at its time.
        let handoff = speed == nil ? Handoff(handler: handler, isRunning: isRunning) : nil
        if let handoff {
            state.withLock { state in
                let deliverer = WorkerThread(name: "gpslocation.replay.deliver") { [self] in
                    self.state.withLock { _ in }
                    handoff.deliver()
                }
                if state.run == number { state.deliverer = deliverer }
            }
        }
        defer { handoff?.finish() }
        var batch: [LocationSourceEvent] = []
        while isRunning() {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                let cause = String(cString: strerror(errno))
                handoff?.finish()
                handler(
                    .problem(
                        CLError(
                            .locationUnknown, .recordingReadFailed(path: path, cause: cause), reason: .sourceFailed),
                        terminal: true))
                return
            }
            if count == 0 { break }
            readSoFar += count
            buffer.withUnsafeBufferPointer { chunk in
                let bytes = UnsafeBufferPointer(rebasing: chunk[0..<count])
                if let handoff {
                    decoder.feed(
                        bytes, heading: { batch.append(.heading($0)) }, sky: { batch.append(.sky($0)) },
                        { batch.append(.fix($0)) })
                    handoff.put(&batch)
                } else {
                    decoder.feed(bytes, heading: deliverHeading, sky: deliverSky, deliver)
                }
            }
            report?(readSoFar, total)
        }
        if let handoff {
            decoder.finish { batch.append(.fix($0)) }
            handoff.put(&batch)
            // Everything below comes after the last fix.
            handoff.finish()
        } else {
            decoder.finish(deliver)
        }
        let statistics = decoder.statistics
        state.withLock { $0.statistics = statistics }
        guard isRunning() else { return }
        for note in Self.inputNotes(decoder.statistics) { handler(.notice(note)) }
        handler(
            .problem(
                CLError(.locationUnknown, .recordingEnded(path: path), reason: .sourceEnded),
                terminal: true))
    }

    /// What the recording held besides usable sentences, said once at its end: lines that had
    /// to be skipped (`skippedInput`), and sentences accepted without a checksum (`noChecksums`).
    static func inputNotes(_ statistics: NMEAStatistics) -> [LocationDiagnostic] {
        var notes: [LocationDiagnostic] = []
        let skipped =
            statistics.badChecksum + statistics.missingChecksum + statistics.tooLong + statistics.noise
            + statistics.malformed
        if skipped > 0 {
            notes.append(
                LocationDiagnostic(
                    code: "skippedInput",
                    .skippedInput(
                        badChecksum: statistics.badChecksum, cutOff: statistics.missingChecksum,
                        tooLong: statistics.tooLong, noise: statistics.noise, malformed: statistics.malformed)))
        }
        if statistics.withoutChecksum > 0 {
            notes.append(
                LocationDiagnostic(
                    code: "noChecksums",
                    .noChecksums(
                        accepted: statistics.withoutChecksum,
                        satelliteListsSkipped: statistics.satellitesWithoutChecksum)))
        }
        return notes
    }
}

/// A fast replay's hand-over from the parsing thread to the delivering one: chunks of events in
/// order, at most two waiting (a recording of any length holds a bounded amount in memory), and
/// the handler called only while the run is current (a stopped run's events are dropped, never
/// delivered late).
private final class Handoff: @unchecked Sendable {
    // @unchecked Sendable: `waiting`, `closed` and `done` are guarded by `condition`.
    private let condition = ConditionLock()
    private var waiting: [[LocationSourceEvent]] = []
    /// Delivered chunks, emptied with their storage kept, for the parsing thread to fill again:
    /// a fresh array per chunk was a fresh mapping of a megabyte's events, faulted in page by
    /// page (8 % of a fast replay's profile samples were page faults).
    private var spare: [[LocationSourceEvent]] = []
    private var closed = false
    private var done = false
    private let handler: @Sendable (LocationSourceEvent) -> Void
    let isRunning: () -> Bool

    init(handler: @escaping @Sendable (LocationSourceEvent) -> Void, isRunning: @escaping () -> Bool) {
        self.handler = handler
        self.isRunning = isRunning
    }

    /// Queues a chunk (the parsing thread), waiting while two are queued, and leaves `events`
    /// an empty array to fill next (a delivered chunk's storage when there is one).
    func put(_ events: inout [LocationSourceEvent]) {
        guard !events.isEmpty else { return }
        condition.lock()
        while waiting.count >= 2 { condition.wait() }
        waiting.append(events)
        events = spare.popLast() ?? []
        condition.broadcast()
        condition.unlock()
    }

    /// No more chunks: returns once every queued one has been delivered (or dropped). Once is
    /// enough; later calls return at once.
    func finish() {
        condition.lock()
        closed = true
        condition.broadcast()
        while !done { condition.wait() }
        condition.unlock()
    }

    /// The delivering thread's loop.
    func deliver() {
        while true {
            condition.lock()
            while waiting.isEmpty && !closed { condition.wait() }
            if waiting.isEmpty {
                done = true
                condition.broadcast()
                condition.unlock()
                return
            }
            var events = waiting.removeFirst()
            condition.broadcast()
            condition.unlock()
            for event in events where isRunning() { handler(event) }
            events.removeAll(keepingCapacity: true)
            condition.lock()
            if spare.count < 2 { spare.append(events) }
            condition.unlock()
        }
    }
}

/// Finds a heading in a recording without replaying it, by the replay's own parser: a heading
/// the replay would deliver (a valid `HDT`, `THS` or `HDG` sentence with a value) is what counts.
enum HeadingScan {
    /// The most of a recording read (a heading-reporting receiver sends one every cycle, so a
    /// recording that has none in its first 16 MB has none worth waiting for).
    static let limit = 16 << 20

    /// Whether the recording at `path` holds a heading; nil when it cannot be read.
    static func file(_ path: String) -> Bool? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var decoder = NMEADecoder()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var found = false
        var total = 0
        while !found, total < limit {
            let count = read(descriptor, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            total += count
            buffer.withUnsafeBufferPointer { bytes in
                decoder.feed(
                    UnsafeBufferPointer(rebasing: bytes[..<count]),
                    heading: { if $0.trueHeading != nil || $0.magneticHeading != nil { found = true } }, { _ in })
            }
        }
        return found
    }
}
