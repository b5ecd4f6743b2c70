import Dispatch
import Foundation
import GNSSCore

/// What a `GPSDSource` reports, in the order it happened.
public enum GPSDEvent: Sendable, Equatable {
    /// Connected, and the WATCH request was sent.
    case connected(GPSDEndpoint)
    /// A decoded report (TPV, SKY, DEVICE, …).
    case report(GPSDReport)
    /// gpsd sent no TPV for `noDataTimeout`; sent once per silence, then again after data returns.
    case noData(GPSDError)
    /// The connection could not be made or was lost; the source tries again after `delay`
    /// seconds (only with a `ReconnectPolicy`). `attempt` counts from 1.
    case reconnecting(GPSDError, attempt: Int, delay: Double)
    /// The connection could not be made, or was lost. The source has stopped.
    case failed(GPSDError)
}

/// How a `GPSDSource` reconnects: capped exponential backoff with jitter. Attempt n (from 0)
/// waits `min(maximumDelay, initialDelay × 2ⁿ)` scaled by a random factor in [0.5, 1], so with
/// the defaults (0.1 s, 2 s) the first retry comes within 0.1 s and none waits more than 2 s —
/// a restarted gpsd is found again within 2 s of coming back.
public struct ReconnectPolicy: Sendable, Hashable {
    public var initialDelay: Double
    public var maximumDelay: Double

    public init(initialDelay: Double = 0.1, maximumDelay: Double = 2) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// The delay before attempt `attempt` (0-based), for a jitter value in [0, 1].
    public func delay(attempt: Int, jitter: Double) -> Double {
        let exponential = initialDelay * pow(2, Double(min(attempt, 30)))
        return min(maximumDelay, exponential) * (0.5 + 0.5 * min(max(jitter, 0), 1))
    }
}

/// Reads a gpsd daemon through libgps, without ever blocking a Swift concurrency thread.
///
/// The socket is watched by a `DispatchSourceRead` on the source's own serial queue; after each
/// readiness event it keeps calling `gps_read` while `gps_waiting(…, 0)` says more is buffered.
/// Every event is passed to the handler on that queue, in order. After `stop()` returns the
/// handler is never called again.
// @unchecked Sendable: every mutable property below is read and written only on `queue`
// (each entry point hops onto it; `dispatchPrecondition` checks that in debug builds).
public final class GPSDSource: @unchecked Sendable {
    public let endpoint: GPSDEndpoint
    /// How long gpsd may stay silent (no TPV) before a `.noData` event; nil disables it.
    public let noDataTimeout: Duration?

    private let queue: DispatchQueue
    private let queueKey = DispatchSpecificKey<Void>()
    /// Mutable state, touched only on `queue`.
    private var queueState = State()

    private struct State {
        var handle: LibGPSHandle?
        var readSource: (any DispatchSourceRead)?
        var timer: (any DispatchSourceTimer)?
        var handler: (@Sendable (GPSDEvent) -> Void)?
        var silent = false
        var running = false
        var retryTimer: (any DispatchSourceTimer)?
        var attempts = 0
        /// When the last fix (or the connection) came; the silence timer measures from it.
        var lastFix = DispatchTime.now()
        var timerArmed = false
        /// Anything came on this connection (gpsd greets with VERSION at once).
        var heardAnything = false
        /// Called once when the source stops (ends an `events()` stream).
        var onStop: (@Sendable () -> Void)?
    }

    /// Runs `body` on the state; must be called on `queue`.
    private func withState<T>(_ body: (inout State) -> T) -> T {
        dispatchPrecondition(condition: .onQueue(queue))
        return body(&queueState)
    }

    /// Reconnection after a lost or failed connection; nil: stop and report `.failed`.
    public let reconnect: ReconnectPolicy?

    public init(
        endpoint: GPSDEndpoint = GPSDEndpoint(), noDataTimeout: Duration? = .seconds(5),
        reconnect: ReconnectPolicy? = nil,
        label: String = "gpslocation.gpsd"
    ) {
        self.endpoint = endpoint
        self.noDataTimeout = noDataTimeout
        self.reconnect = reconnect
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: queueKey, value: ())
    }

    deinit {
        // No other reference exists any more, so reading the state off the queue is safe here.
        queueState.timer?.cancel()
        queueState.retryTimer?.cancel()
        queueState.readSource?.cancel()
    }

    /// Connects (on the source's queue) and starts delivering events to `handler`.
    /// A connection failure arrives as `.failed` — `start` itself never blocks.
    public func start(_ handler: @escaping @Sendable (GPSDEvent) -> Void) {
        queue.async { [self] in
            let alreadyRunning = withState { state in
                if state.running { return true }
                state.running = true
                state.handler = handler
                return false
            }
            if alreadyRunning { return }
            connect()
        }
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
            queue.async { [self] in withState { $0.onStop = { continuation.finish() } } }
            start { event in
                continuation.yield(event)
                if case .failed = event { continuation.finish() }
            }
        }
    }

    /// Stops reading and closes the connection. No event is delivered after this returns.
    public func stop() {
        if DispatchQueue.getSpecific(key: queueKey) != nil {
            shutDown()
        } else {
            queue.sync { shutDown() }
        }
    }

    // MARK: - On the queue

    private func connect() {
        guard withState({ $0.running }) else { return }
        let handle = LibGPSHandle()
        do {
            try handle.open(endpoint)
            try handle.watch(endpoint)
        } catch {
            lose(error)
            return
        }
        let source = DispatchSource.makeReadSource(fileDescriptor: handle.fileDescriptor, queue: queue)
        source.setEventHandler { [weak self] in self?.drain() }
        // Closing the socket belongs after the source stops watching its descriptor.
        source.setCancelHandler { withExtendedLifetime(handle) {} }
        // The backoff is not reset here: a server that accepts and closes at once (or says
        // nothing) must not be hammered. It resets when the connection delivers data.
        withState { state in
            state.handle = handle
            state.readSource = source
            state.heardAnything = false
        }
        emit(.connected(endpoint))
        armTimer()
        source.resume()
    }

    private func drain() {
        guard let handle = withState({ $0.handle }) else { return }
        while true {
            switch handle.read() {
            case .disconnected(let code):
                // Still open (data waiting, or nothing yet): libgps gave up on what it read — an
                // over-long or broken line — not on a closed connection.
                var byte: UInt8 = 0
                let peeked = recv(handle.fileDescriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
                let stillOpen = peeked > 0 || (peeked < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                lose(
                    GPSDError(
                        code: stillOpen ? .protocolError : .disconnected, endpoint: endpoint,
                        libgpsCode: code == 0 ? nil : code,
                        libgpsMessage: code == 0 ? nil : LibGPSHandle.errorText(code)))
                return
            case .partial:
                return
            case .report(let report):
                withState { state in
                    state.heardAnything = true
                    state.attempts = 0
                }
                if case .fix = report { heardFix() }
                emit(.report(report))
            }
            // The handler may have stopped us.
            guard withState({ $0.handle }) != nil, handle.hasPendingInput else { return }
        }
    }

    /// A fix came: the silence deadline moves. The timer is not re-armed for it (that cost a
    /// timer call per fix): when it fires it looks at the last fix and waits the rest.
    private func heardFix() {
        let armed = withState { state in
            state.silent = false
            state.lastFix = DispatchTime.now()
            return state.timerArmed
        }
        if !armed { armTimer() }
    }

    private var timeoutSeconds: Double? {
        noDataTimeout.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
    }

    /// Arms the silence timer for a whole timeout from now (connecting, or no timer armed).
    private func armTimer(after delay: Double? = nil) {
        guard let seconds = timeoutSeconds else { return }
        let existing = withState { $0.timer }
        let timer: any DispatchSourceTimer
        if let existing {
            timer = existing
        } else {
            timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in self?.timerFired() }
            withState { $0.timer = timer }
            timer.resume()
        }
        withState { state in
            state.timerArmed = true
            if delay == nil { state.lastFix = DispatchTime.now() }
        }
        timer.schedule(deadline: .now() + (delay ?? seconds), repeating: .never, leeway: .milliseconds(50))
    }

    private func timerFired() {
        guard let seconds = timeoutSeconds else { return }
        let sinceLast = withState { state -> Double in
            state.timerArmed = false
            return Double(DispatchTime.now().uptimeNanoseconds - state.lastFix.uptimeNanoseconds) / 1e9
        }
        if sinceLast < seconds - 0.01 {
            armTimer(after: seconds - sinceLast)
            return
        }
        silenceElapsed(seconds)
    }

    private func silenceElapsed(_ seconds: Double) {
        // Nothing at all since connecting (gpsd always greets first): drop it and try again.
        if reconnect != nil, withState({ $0.running && $0.handle != nil && !$0.heardAnything }) {
            lose(GPSDError(code: .unresponsive, endpoint: endpoint, silence: seconds))
            return
        }
        let first = withState { state in
            guard state.running, !state.silent else { return false }
            state.silent = true
            return true
        }
        if first { emit(.noData(GPSDError(code: .noData, endpoint: endpoint, silence: seconds))) }
    }

    /// The connection failed or was lost: retry under the policy, or stop.
    private func lose(_ error: GPSDError) {
        guard let reconnect else {
            emit(.failed(error))
            shutDown()
            return
        }
        // Drop the dead connection (its socket closes once the read source is cancelled).
        let (source, attempt) = withState { state -> ((any DispatchSourceRead)?, Int) in
            defer {
                state.readSource = nil
                state.handle = nil
                state.attempts += 1
            }
            return (state.readSource, state.attempts)
        }
        source?.cancel()
        let delay = reconnect.delay(attempt: attempt, jitter: Double.random(in: 0...1))
        emit(.reconnecting(error, attempt: attempt + 1, delay: delay))
        guard withState({ $0.running }) else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + delay)
        timer.setEventHandler { [weak self] in self?.connect() }
        withState { $0.retryTimer = timer }
        timer.resume()
    }

    private func emit(_ event: GPSDEvent) {
        guard let handler = withState({ $0.running ? $0.handler : nil }) else { return }
        handler(event)
    }

    private func shutDown() {
        let (source, timer, retry, onStop) = withState { state in
            defer {
                state.readSource = nil
                state.timer = nil
                state.retryTimer = nil
                state.handle = nil
                state.handler = nil
                state.running = false
                state.onStop = nil
            }
            return (state.readSource, state.timer, state.retryTimer, state.onStop)
        }
        timer?.cancel()
        retry?.cancel()
        source?.cancel()
        onStop?()
    }
}
