import Dispatch
import FoundationEssentials
import GNSSCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Reads a gpsd daemon through libgps on a thread of its own.
///
/// The thread blocks in `recv` on the gpsd socket; each wake-up takes what the socket holds and
/// reports every complete line in the buffer (`LibGPSHandle.receive`/`nextReport`: libgps's
/// framing and its `gps_unpack` decoder, the two halves of `gps_read`). The silence timeout is
/// the socket's receive timeout, and `stop()` shuts the socket down to end a blocked `recv`. One
/// wake-up per burst of gpsd lines and no timer of its own: a dispatch read source cost two
/// thread wake-ups per line (libdispatch's event thread, then a worker), a timer call per fix,
/// and a `select` after every line.
/// Events reach the handler on that thread, in order, never two at once. After `stop()`
/// returns the handler is never called again; `stop()` may be called from inside the handler.
public final class GPSDConnection: Sendable {
    public let endpoint: GPSDEndpoint
    /// How long gpsd may stay silent (no TPV) before a `.noData` event; nil disables it.
    public let noDataTimeout: Duration?
    /// Reconnection after a lost or failed connection; nil: stop and report `.failed`.
    public let reconnect: ReconnectPolicy?
    /// Whether SKY reports are decoded and delivered (`.sky`); without them each SKY line is
    /// `.other("SKY")`, and the largest line gpsd sends (several KB for a multi-GNSS receiver)
    /// is never parsed. It may be switched while the connection runs (a relay decodes the sky
    /// only while someone asks for it): the next line read follows it.
    public var decodesSky: Bool {
        get { sky.value.load(ordering: .relaxed) }
        set { sky.value.store(newValue, ordering: .relaxed) }
    }
    /// `decodesSky`, shared with every reader this connection starts.
    private let sky: SkySwitch
    private let label: String
    // `Locked` (an NSLock), not `Mutex`: Thread Sanitizer cannot see `Mutex`'s lock on Linux.
    private let control = Locked(Control())

    private struct Control {
        /// The running reader, if any.
        var reader: GPSDReader?
        /// The last reader stopped, until its thread is known to have ended (`waitUntilStopped`).
        var stopped: GPSDReader?
        /// Called once when the source stops (ends an `events()` stream).
        var onStop: (@Sendable () -> Void)?
    }

    public init(
        endpoint: GPSDEndpoint = GPSDEndpoint(), noDataTimeout: Duration? = .seconds(5),
        reconnect: ReconnectPolicy? = nil, decodesSky: Bool = true,
        label: String = "gpslocation.gpsd"
    ) {
        self.endpoint = endpoint
        self.noDataTimeout = noDataTimeout
        self.reconnect = reconnect
        sky = SkySwitch(decodesSky)
        self.label = label
    }

    deinit {
        // The reader holds no reference to the source; tell it to end (not waiting: the last
        // reference may have gone inside a handler, on the reader's own thread).
        control.withLock { $0.reader }?.cancel()
    }

    /// Connects (on the source's thread) and starts delivering events to `handler`.
    /// A connection failure arrives as `.failed` — `start` itself never blocks.
    /// - Parameter burstEnded: called after the reports of each burst — what gpsd sent one after
    ///   another, a receiver cycle's TPV, GST and SKY — before the thread waits for more: a
    ///   relay that holds what it forwards until then sends a cycle in one write (gpslocd: its
    ///   clients wake once a cycle, not once a report). With it, each wake-up also takes what
    ///   came while its reports were handled (one `recv` more).
    public func start(
        _ handler: @escaping @Sendable (GPSDEvent) -> Void, burstEnded: (@Sendable () -> Void)? = nil
    ) {
        let reader = control.withLock { control -> GPSDReader? in
            if control.reader != nil { return nil }
            let reader = GPSDReader(
                endpoint: endpoint, noDataTimeout: noDataTimeout.map(Self.seconds), reconnect: reconnect,
                sky: sky, handler: handler, burstEnded: burstEnded)
            control.reader = reader
            return reader
        }
        guard let reader else { return }
        reader.onEnd = { [weak self] in self?.ended(reader) }
        reader.launch(name: label)
    }

    /// The same events as an `AsyncStream`. Up to `limit` events wait for a slow consumer
    /// (10,000 by default: over ten minutes of a 10 Hz receiver's reports, so nothing is lost to
    /// a consumer that keeps up on average); beyond that the oldest are dropped, so memory stays
    /// bounded even if nobody reads. Ending the iteration (or cancelling its task) stops the
    /// source; `stop()` or a final `.failed` ends the stream.
    public func events(bufferingNewest limit: Int = 10_000) -> AsyncStream<GPSDEvent> {
        AsyncStream(bufferingPolicy: .bufferingNewest(max(1, limit))) { continuation in
            continuation.onTermination = { [weak self] _ in
                // Not inline: the stream may be terminated from inside one of our own callbacks.
                guard let source = self else { return }
                DispatchQueue.global().async { source.stop() }
            }
            control.withLock { $0.onStop = { continuation.finish() } }
            start { event in
                continuation.yield(event)
                if case .failed = event { continuation.finish() }
            }
        }
    }

    /// Stops reading and closes the connection. No event is delivered after this returns.
    public func stop() {
        let (reader, onStop) = control.withLock { control in
            defer {
                control.stopped = control.reader ?? control.stopped
                control.reader = nil
                control.onStop = nil
            }
            return (control.reader, control.onStop)
        }
        if let reader {
            reader.cancel()
            reader.waitUnlessOnItsThread()
        }
        onStop?()
    }

    /// Waits until the thread of the last stopped reader has ended — after a `stop()` from inside
    /// the handler, which cannot wait for its own thread. Then no event can follow, whatever was
    /// still buffered: a test proves "nothing after stop" by this, not by a pause.
    package func waitUntilStopped() {
        let stopped = control.withLock { control in
            defer { control.stopped = nil }
            return control.stopped
        }
        stopped?.waitUnlessOnItsThread()
    }

    /// The reader ended by itself (a failure without a reconnection policy).
    private func ended(_ reader: GPSDReader) {
        let onStop = control.withLock { control -> (@Sendable () -> Void)? in
            guard control.reader === reader else { return nil }
            control.reader = nil
            defer { control.onStop = nil }
            return control.onStop
        }
        onStop?()
    }

    private static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// Whether a connection's readers decode SKY reports (`GPSDConnection.decodesSky`).
final class SkySwitch: Sendable {
    let value: Atomic<Bool>
    init(_ value: Bool) { self.value = Atomic(value) }
}

/// One run of a `GPSDConnection`: the thread, its connection and its timers.
// @unchecked Sendable: `cancelled` is atomic, `finished` a semaphore, `socket` and `runningOn`
// are locked; everything else is touched only on the reader's own thread (and `onEnd`
// is set before it starts).
private final class GPSDReader: @unchecked Sendable {
    let endpoint: GPSDEndpoint
    let noDataTimeout: Double?
    let reconnect: ReconnectPolicy?
    let sky: SkySwitch
    let handler: @Sendable (GPSDEvent) -> Void
    let burstEnded: (@Sendable () -> Void)?
    var onEnd: (@Sendable () -> Void)?

    private let cancelled = Atomic(false)
    /// Wakes the thread from the reconnection wait (a blocked `recv` is ended by shutting the
    /// socket down instead).
    private let wake = WakePipe(owner: "gpsd reader")
    private let finished = DispatchSemaphore(value: 0)
    /// The reader's thread, set by the thread itself before it reports anything (pthread_create
    /// may store the id only after the new thread has started running).
    private let runningOn = Locked<pthread_t?>(nil)

    /// The connected socket's descriptor while `read` runs (-1 otherwise), for `cancel()`.
    private let socket = Locked<Int32>(-1)

    /// The reader's own state, on its thread only — in memory of its own, not in stored
    /// properties: each access to a class's stored property is checked for exclusivity at run
    /// time, and these are touched for every report.
    private struct Local {
        var attempts = 0
        var silent = false
        var heardAnything = false
        /// When the last fix (or the connection) came, in uptime nanoseconds.
        var lastFix: UInt64 = 0
        /// True while the socket's receive timeout is the rest of a silence timeout, not all of it.
        var partialTimeout = false
        /// The wait before the next connection attempt (set by `lost`).
        var retryDelay = 0.0
    }
    private let local: UnsafeMutablePointer<Local> = {
        let local = UnsafeMutablePointer<Local>.allocate(capacity: 1)
        local.initialize(to: Local())
        return local
    }()
    /// The thread's name (set by `launch`, before the thread starts).
    private var name = ""

    init(
        endpoint: GPSDEndpoint, noDataTimeout: Double?, reconnect: ReconnectPolicy?, sky: SkySwitch,
        handler: @escaping @Sendable (GPSDEvent) -> Void, burstEnded: (@Sendable () -> Void)?
    ) {
        self.burstEnded = burstEnded
        self.sky = sky
        self.endpoint = endpoint
        self.noDataTimeout = noDataTimeout
        self.reconnect = reconnect
        self.handler = handler
    }

    deinit {
        local.deinitialize(count: 1)
        local.deallocate()
    }

    func launch(name: String) {
        self.name = name
        let unmanaged = Unmanaged.passRetained(self)
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
        pthread_attr_setstacksize(&attributes, 512 * 1024)
        var thread = pthread_t()
        let created = pthread_create(
            &thread, &attributes,
            { context in
                let reader = Unmanaged<GPSDReader>.fromOpaque(context!).takeRetainedValue()
                reader.run()
                return nil
            }, unmanaged.toOpaque())
        if created != 0 {
            unmanaged.release()
            fatalError("GPSLocation: cannot start the gpsd reader thread (\(String(cString: strerror(created))))")
        }
    }

    /// Asks the thread to end; it leaves any wait at once and calls no handler after a running one.
    func cancel() {
        guard !cancelled.exchange(true, ordering: .sequentiallyConsistent) else { return }
        wake.signal()
        // A `recv` blocked on the connection returns at once.
        socket.withLock { descriptor in if descriptor >= 0 { shutdown(descriptor, Int32(SHUT_RDWR)) } }
    }

    /// Waits until the thread has ended, unless this is that thread (a handler stopping us).
    func waitUnlessOnItsThread() {
        if let own = runningOn.withLock({ $0 }), pthread_equal(pthread_self(), own) != 0 { return }
        finished.wait()
        finished.signal()  // a second waiter (stop and deinit racing) passes too
    }

    private var isCancelled: Bool { cancelled.load(ordering: .sequentiallyConsistent) }

    private func run() {
        runningOn.withLock { $0 = pthread_self() }
        // The thread's name in top, perf and /proc (at most 15 bytes).
        let comm = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        if comm >= 0 {
            _ = Array(name.utf8.prefix(15)).withUnsafeBytes { write(comm, $0.baseAddress, $0.count) }
            close(comm)
        }
        defer { finished.signal() }
        while !isCancelled {
            guard let connected = connect() else {
                if waitBeforeRetry() { continue }
                return
            }
            // `cancel()` shuts this socket down to end a blocked `recv`; it is forgotten before
            // the handle (and its descriptor) goes.
            socket.withLock { $0 = connected.fileDescriptor }
            let again = read(connected)
            socket.withLock { $0 = -1 }
            if !again { return }
        }
    }

    /// Opens the connection and sends WATCH; nil (after reporting) when that failed.
    private func connect() -> LibGPSHandle? {
        let handle = LibGPSHandle()
        do {
            try handle.open(endpoint)
            try handle.watch(endpoint)
        } catch {
            lost(error)
            return nil
        }
        // The backoff is not reset here: a server that accepts and closes at once (or says
        // nothing) must not be hammered. It resets when the connection delivers data.
        local.pointee.heardAnything = false
        local.pointee.silent = false
        local.pointee.lastFix = Self.uptime()
        emit(.connected(endpoint))
        return handle
    }

    /// Reads the connection until it is lost (true: try again) or the run ends (false).
    ///
    /// The thread blocks in `recv` itself: one system call per wake-up (a `poll` before each
    /// `recv` was a seventh of a live client's CPU). The silence timeout is the socket's receive
    /// timeout (`SO_RCVTIMEO`), and `cancel()` ends a blocked `recv` by shutting the socket down.
    private func read(_ handle: LibGPSHandle) -> Bool {
        let descriptor = handle.fileDescriptor
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        setReceiveTimeout(handle, noDataTimeout)  // `connect` left the source not silent
        while !isCancelled {
            let (error, received) = drain(handle)
            if isCancelled { return false }
            if let error {
                lost(error)
                return waitBeforeRetry()
            }
            if received && !local.pointee.silent && local.pointee.partialTimeout {
                setReceiveTimeout(handle, noDataTimeout)
            }
            if let timeout = noDataTimeout, !local.pointee.silent,
                Self.uptime() &- local.pointee.lastFix >= UInt64(timeout * 1e9)
            {
                // Nothing at all since connecting (gpsd always greets first): drop it and retry.
                if reconnect != nil && !local.pointee.heardAnything {
                    lost(GPSDError(code: .unresponsive, endpoint: endpoint, silence: timeout))
                    return waitBeforeRetry()
                }
                local.pointee.silent = true
                // Silent: no timeout until a fix comes (one report per silence).
                setReceiveTimeout(handle, nil)
                emit(.noData(GPSDError(code: .noData, endpoint: endpoint, silence: timeout)))
            } else if let timeout = noDataTimeout, !local.pointee.silent, !received {
                // Woken early (a signal, or a fix moved the deadline): wait out the rest.
                let due = local.pointee.lastFix &+ UInt64(timeout * 1e9)
                setReceiveTimeout(handle, Double(due &- Self.uptime()) / 1e9)
            }
        }
        return false
    }

    /// Sets `SO_RCVTIMEO` (nil: wait forever).
    private func setReceiveTimeout(_ handle: LibGPSHandle, _ seconds: Double?) {
        var value = timeval()
        if let seconds {
            let clamped = min(max(seconds, 0.001), 86_400)
            value.tv_sec = Int(clamped)
            value.tv_usec = Int((clamped - Double(Int(clamped))) * 1e6)
        }
        _ = setsockopt(
            handle.fileDescriptor, SOL_SOCKET, SO_RCVTIMEO, &value, socklen_t(MemoryLayout<timeval>.size))
        local.pointee.partialTimeout = seconds != nil && seconds != noDataTimeout
    }

    /// Waits for what the socket holds and reports every complete line; the error when the
    /// connection went (after the lines that came before it), and whether bytes came.
    private func drain(_ handle: LibGPSHandle) -> (GPSDError?, Bool) {
        var received = handle.receive()
        var (reported, fixCame) = reportLines(handle)
        if let burstEnded, reported {
            // gpsd writes a cycle's reports one after another: what came while these were
            // handled belongs to the same burst (bounded: a flood still lets the thread go on).
            var more = 0
            while more < 8, !isCancelled, case .received = received {
                received = handle.receive(wait: false)
                let (again, fix) = reportLines(handle)
                if fix { fixCame = true }
                if !again { break }
                more += 1
            }
            if case .nothing = received { received = .received }
            if !isCancelled { burstEnded() }
        }
        if fixCame && local.pointee.silent {
            local.pointee.silent = false
            setReceiveTimeout(handle, noDataTimeout)
        }
        switch received {
        case .received: return (nil, true)
        case .nothing: return (nil, false)
        case .overlong:
            // libgps gives up on a line longer than its buffer: not a closed connection.
            return (GPSDError(code: .protocolError, endpoint: endpoint), true)
        case .closed(let code):
            return (
                GPSDError(
                    code: .disconnected, endpoint: endpoint, libgpsCode: code == 0 ? nil : code,
                    libgpsMessage: code == 0 ? nil : LibGPSHandle.errorText(code)), false
            )
        }
    }

    /// Reports every complete buffered line; whether any was a report, and whether one was a fix.
    private func reportLines(_ handle: LibGPSHandle) -> (reported: Bool, fixCame: Bool) {
        var reported = false
        var fixCame = false
        while !isCancelled, let report = handle.nextReport(sky: sky.value.load(ordering: .relaxed)) {
            reported = true
            local.pointee.heardAnything = true
            local.pointee.attempts = 0
            if case .fix = report {
                fixCame = true
                local.pointee.lastFix = Self.uptime()
            }
            emit(report)
        }
        return (reported, fixCame)
    }

    /// The connection failed or was lost: says so, and whether and when it is tried again.
    private func lost(_ error: GPSDError) {
        guard let reconnect else {
            emit(.failed(error))
            cancelled.store(true, ordering: .sequentiallyConsistent)
            onEnd?()
            return
        }
        local.pointee.retryDelay = reconnect.delay(attempt: local.pointee.attempts, jitter: Double.random(in: 0...1))
        local.pointee.attempts += 1
        emit(.reconnecting(error, attempt: local.pointee.attempts, delay: local.pointee.retryDelay))
    }

    /// Sleeps the reconnection delay (woken early by `cancel`); false when the run ends.
    private func waitBeforeRetry() -> Bool {
        guard reconnect != nil, !isCancelled else { return false }
        let deadline = Self.uptime() &+ UInt64(local.pointee.retryDelay * 1e9)
        while !isCancelled {
            guard Self.uptime() < deadline else { return true }
            wake.wait(until: deadline)
        }
        return false
    }

    private func emit(_ event: GPSDEvent) {
        guard !isCancelled else { return }
        handler(event)
    }

    private static func uptime() -> UInt64 { TimerDescriptor.now() }
}

/// The earlier name of `GPSDConnection` (it is one connection to gpsd, not a `LocationSource`).
@available(*, deprecated, renamed: "GPSDConnection")
public typealias GPSDSource = GPSDConnection
