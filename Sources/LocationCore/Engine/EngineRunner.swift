import Dispatch
import FoundationEssentials
import GNSSCore
import Glibc
import Synchronization

/// The one driver of `LocationEngine`. `CLLocationManager`, `CLMonitor`, `CLLocationUpdate`,
/// `CLServiceSession` and every `gpsloc` command adapt it; none of them runs the engine itself.
///
/// It owns the engine (behind one lock), the engine's timers, the source, the last-location
/// cache and the reduced-accuracy state, and hands its adapter one `Output` at a time, in order,
/// on the adapter's serial `queue` (or, without one, on the thread that produced it, one at a
/// time: gpsloc writes its output so), never while holding the lock.
///
/// **Delivery.** A recording (a source that is not live) is lossless: when the adapter falls
/// more than `maximumBatch` locations behind, the source's thread waits until it has caught up,
/// so every location reaches the adapter whatever its speed. A recording that cannot wait
/// (gpsfake: gpsd drops what a client does not read in time) is kept instead, however far
/// behind. A live source never waits for the adapter: at most `maximumBatch` locations wait, the
/// oldest beyond that are dropped, and the adapter is told how many (a `droppedLocations`
/// diagnostic).
///
/// **Timers** only enqueue: a fired timer's engine step runs on the runner's own serial work
/// queue, so no user code and no file I/O runs on the process-wide timer thread.
public final class EngineRunner: Sendable {
    /// What the adapter receives: the engine's outputs, batched.
    public typealias Output = LocationEngine.Output

    struct State {
        var engine: LocationEngine
        /// Where outputs are handed over.
        var delivery: Delivery
        var consumer: (@Sendable (Output) -> Void)?
        /// Whether the source should run, as the engine last decided (`reconcileSource` makes
        /// it so; `SourceReconciler` holds whether it does).
        var sourceRunning = false
        /// Bumped by `stop()`: events, timers and outputs of an older generation are dropped.
        var generation = 0
        var pending: [Output] = []
        /// How many locations `pending` holds.
        var pendingLocations = 0
        var drainScheduled = false
        var maximumBatch = 100
        /// Live locations dropped for a slow adapter and not yet reported.
        var dropped = 0
        var lastLocationCache: LastLocationCache?
        /// Errors with these reasons end updates (for gpsloc watch, which exits on them).
        var endingReasons: Set<CLError.Reason> = []
        /// Bumped by `stop(keepingMonitoring: true)`: locations taken for delivery before it are
        /// not handed over after it.
        var locationGeneration = 0
        /// Drains started so far (the stall watchdog compares it with the count it armed at).
        var drainsStarted = 0
        var stallCheckArmed = false
        var stallReported = false
        var flowObserver: (@Sendable (SourceFlow) -> Void)?
        var diagnosticsHandler: DiagnosticsHandler?
    }

    /// What the engine's actions leave to do once the lock is released.
    private struct Effects {
        var sourceChanged = false
        var delivered: LocationValue?
        /// Where `delivered` goes (read under the same lock as the step).
        var cache: LastLocationCache?
        /// Outputs taken for inline delivery in the step's own critical section.
        var batch: Batch?
        /// The adapter was `maximumBatch` locations behind after the step.
        var behind = false
    }

    /// Outputs taken from `pending` to be handed over, with the generations they belong to.
    struct Batch {
        var outputs: [Output]
        var generation: Int
        var locationGeneration: Int
        var consumer: (@Sendable (Output) -> Void)?
    }

    /// Where fixes come from.
    public let source: any LocationSource
    let appID: String
    let state: Locked<State>
    /// `State.generation` and `State.locationGeneration`, stored under the lock whenever they
    /// change and read without it by the hand-over loop: one atomic load per output, not a lock.
    let generations = Atomic<Int>(0)
    let locationGenerations = Atomic<Int>(0)
    private let sourceControl = SourceReconciler()
    private let timers: EngineTimers
    /// "Now" for the engine and the timers' time: the system's, or a test's `ManualEngineClock`.
    public let clock: any EngineClock
    /// Where fired timers' steps run (serially), off the shared timer thread.
    private let work = DispatchQueue(label: "gpslocation.engine")
    private let queueKey = DispatchSpecificKey<ObjectIdentifier>()
    /// Marks the main queue (set once a process, when a runner first delivers there).
    private static let mainQueueKey: DispatchSpecificKey<Bool> = {
        let key = DispatchSpecificKey<Bool>()
        DispatchQueue.main.setSpecific(key: key, value: true)
        return key
    }()
    /// True on the main thread or in a job of the main queue (the main actor's executor, which
    /// a test harness may drain on another thread).
    public static var onMainQueue: Bool {
        DispatchQueue.getSpecific(key: mainQueueKey) == true || WorkerThread.isMainThread
    }
    /// Serializes inline delivery (no queue); recursive, so an adapter's callback may stop.
    let delivering = PlainLock(recursive: true)
    /// The authorizer this runner follows (`follow(_:)`) and its observation.
    private let followed = Locked<(LocationAuthorizer, UUID)?>(nil)

    /// A runner for one app's engine, stopped.
    ///
    /// - Parameters:
    ///   - source: where fixes come from (gpsd, a replay, the broker).
    ///   - configuration: the engine's settings (filters, accuracy, activity, monitors).
    ///   - authorization: the app's authorization, read by the gate on every output.
    ///   - lastLocationCache: where the last delivered location is kept between runs (nil: nowhere).
    ///   - fuzzer: reduced accuracy's fuzzer (`LocationAuthorizer.makeFuzzer`; default: this
    ///     process's secret, nothing kept between runs).
    ///   - queue: the serial queue outputs are handed over on; nil: inline, on the thread that
    ///     produced them (the source's, or the work queue's for a timer), one at a time — no
    ///     thread hop a location (gpsloc: a recording's thread then writes its own output).
    ///   - clock: "now" and the timers (tests inject a `ManualEngineClock`).
    public init(
        source: any LocationSource, configuration: LocationEngine.Configuration, authorization: AuthorizationState,
        fuzzer: LocationFuzzer? = nil, lastLocationCache: LastLocationCache?, queue: DispatchQueue?,
        clock: any EngineClock = SystemEngineClock()
    ) {
        self.source = source
        self.clock = clock
        appID = authorization.appID
        let owner = WeakRunner()
        let work = self.work
        timers = EngineTimers(clock: clock) { timer in
            work.async { owner.runner?.drive { engine in engine.timerFired(timer, now: clock.now) } }
        }
        state = Locked(
            State(
                engine: LocationEngine(
                    configuration: configuration, authorization: authorization, isLive: source.isLive,
                    sourceInformation: source.sourceInformation,
                    fuzzer: fuzzer),
                delivery: .on(queue), lastLocationCache: lastLocationCache))
        owner.runner = self
        delivery = .on(queue)
    }

    /// An app's runner that follows its authorizer: the authorization now, the app's fuzzer, and
    /// every change the authorizer makes afterwards (a grant, a revocation, reduced accuracy, in
    /// use or not) applied to the engine at once — the step of a face's recipe none may forget.
    ///
    /// - Parameters: as the designated initializer's; `authorizer` gives the authorization and
    ///   the fuzzer (`makeFuzzer(live:)`, live when the source is).
    public convenience init(
        source: any LocationSource, configuration: LocationEngine.Configuration, authorizer: LocationAuthorizer,
        lastLocationCache: LastLocationCache?, queue: DispatchQueue?, clock: any EngineClock = SystemEngineClock()
    ) {
        self.init(
            source: source, configuration: configuration, authorization: authorizer.state,
            fuzzer: authorizer.makeFuzzer(live: source.isLive), lastLocationCache: lastLocationCache, queue: queue,
            clock: clock)
        follow(authorizer)
    }

    /// Applies `authorizer`'s every change from now on, for as long as the runner lives (or until
    /// another `follow`): a revocation reaches the gate without the face doing anything. A face
    /// that also tells its app of the change (`CLLocationManager`'s delegate) adds its own
    /// observer first: the authorizer calls observers in the order they were added, so the app
    /// hears of the change before the error it causes.
    public func follow(_ authorizer: LocationAuthorizer) {
        let token = authorizer.addObserver { [weak self] in
            guard let self else { return }
            let clock = self.clock
            self.drive { $0.setAuthorization(authorizer.state, now: clock.now) }
        }
        let previous = followed.withLock { followed -> (LocationAuthorizer, UUID)? in
            defer { followed = (authorizer, token) }
            return followed
        }
        if let (old, oldToken) = previous { old.removeObserver(oldToken) }
    }

    deinit {
        if let (authorizer, token) = followed.withLock({ $0 }) { authorizer.removeObserver(token) }
        timers.cancelAll()
        clock.cancelAll(ObjectIdentifier(self))
        if case .performer(let target) = state.withLock({ $0.delivery }) { target.release() }
        if sourceControl.isRunning { source.stop() }
    }

    // MARK: Settings

    /// Reads or changes the engine under the lock (configuration, state queries).
    public func withEngine<Result>(_ body: (inout LocationEngine) -> Result) -> Result {
        state.withLock { body(&$0.engine) }
    }

    /// Sets the function that receives the engine's outputs (the face's adapter).
    public func setConsumer(_ consumer: @escaping @Sendable (Output) -> Void) {
        state.withLock { $0.consumer = consumer }
    }

    /// The queue outputs are handed over on, or nil (inline, or a run loop: see `delivery`).
    /// Setting it delivers on that queue (nil: inline).
    public var queue: DispatchQueue? {
        get {
            switch state.withLock({ $0.delivery }) {
            case .main: DispatchQueue.main
            case .queue(let queue): queue
            case .inline, .performer: nil
            }
        }
        set { delivery = .on(newValue) }
    }

    /// Where outputs are handed over: inline, on a serial queue, or on a thread's run loop.
    public var delivery: Delivery {
        get { state.withLock { $0.delivery } }
        set {
            switch newValue {
            case .queue(let queue): queue.setSpecific(key: queueKey, value: ObjectIdentifier(self))
            case .main: _ = Self.mainQueueKey
            case .inline, .performer: break
            }
            state.withLock { $0.delivery = newValue }
        }
    }

    /// Told what the outputs cannot carry, never on the delivery target: outputs that have
    /// waited `stallWarning` seconds for a main queue or run loop that does not run
    /// (`delegateThreadBlocked`, on the clock's timer thread, once per runner: the program's
    /// thread is blocked, and nothing reaches the app until it runs its loop); and, on the thread
    /// that calls `stop()`, a last location still being written when updates stopped
    /// (`lastLocationNotSaved`: the disk is slow or does not answer, and `stop()` returned after
    /// `LastLocationCache.finalWriteWait` seconds without it), or that final write's failure when
    /// it was not said yet. (A write that fails while updates run — a full disk — is an output,
    /// `.diagnostic`, in order with the rest.) Nil: nobody is told.
    public var diagnosticsHandler: DiagnosticsHandler? {
        get { state.withLock { $0.diagnosticsHandler } }
        set { state.withLock { $0.diagnosticsHandler = newValue } }
    }
    /// A seam for tests of slow adapters, told on the source's thread. An adapter that takes a
    /// location only while the source is held back (or has ended) is as far behind as the runner
    /// lets it be, by construction and with no clock.
    var flowObserver: (@Sendable (SourceFlow) -> Void)? {
        get { state.withLock { $0.flowObserver } }
        set { state.withLock { $0.flowObserver = newValue } }
    }
    /// Seconds outputs may wait for a main queue or run loop before `diagnosticsHandler` hears of it.
    static let stallWarning: TimeInterval = 5

    /// At most this many locations wait for the adapter (see the type's documentation).
    public var maximumBatch: Int {
        get { state.withLock { $0.maximumBatch } }
        set { state.withLock { $0.maximumBatch = max(1, newValue) } }
    }

    /// Where the last delivered location is kept (nil: nowhere).
    public var lastLocationCache: LastLocationCache? {
        get { state.withLock { $0.lastLocationCache } }
        set { state.withLock { $0.lastLocationCache = newValue } }
    }

    /// Errors with these reasons end updates too (besides those after which the engine stops).
    public var endingReasons: Set<CLError.Reason> {
        get { state.withLock { $0.endingReasons } }
        set { state.withLock { $0.endingReasons = newValue } }
    }

    /// True while the engine updates, monitors or reports headings.
    public var isRunning: Bool { state.withLock { $0.engine.isRunning } }

    /// Changes with every `stop()`.
    public var generation: Int { state.withLock { $0.generation } }

    /// True when called on the delivery target's thread: inside this runner's queue, on the main
    /// thread for the main queue, on the run loop's thread for a run loop. Waiting for delivery
    /// from there would wait for itself.
    var isOnQueue: Bool {
        switch delivery {
        case .inline: false
        // The main queue runs on the main thread (`RunLoop.main`) or, after `dispatchMain()`, on
        // a worker that serves it; its queue-specific value answers for both.
        case .main: DispatchQueue.getSpecific(key: Self.mainQueueKey) == true || WorkerThread.isMainThread
        case .queue: DispatchQueue.getSpecific(key: queueKey) == ObjectIdentifier(self)
        case .performer(let target): target.isCurrent
        }
    }

    // MARK: Driving

    /// Runs `step` on the engine under the lock, queues its outputs, arms and cancels its timers
    /// (under the lock too: a one-shot's cancel decided before the next request's arm is done
    /// before it), and brings the source and the cache in line after the lock is released.
    /// Dropped when `generation` is given and a `stop()` came since.
    public func drive(generation expected: Int? = nil, _ step: (inout LocationEngine) -> [LocationEngine.Action]) {
        _ = driveStep(generation: expected, step)
    }

    /// `drive`; true when the adapter is `maximumBatch` locations behind afterwards.
    private func driveStep(generation expected: Int?, _ step: (inout LocationEngine) -> [LocationEngine.Action])
        -> Bool
    {
        // Filled inside the lock and used after it (not returned from it: a returned struct of
        // references was copied and destroyed once more, a retain and a release each).
        var effects = Effects()
        let stepped = state.withLock { state -> Bool in
            if let expected, expected != state.generation { return false }
            let actions = step(&state.engine)
            // Which errors end updates is decided here, once: those after which the engine
            // runs no more, and those the adapter named.
            let stopped = !state.engine.isRunning
            var stoppedSource = false
            for action in actions {
                switch action {
                case .emit(let output):
                    if case .locations(let batch) = output, let location = batch.last { effects.delivered = location }
                    if case .failure(var error) = output {
                        error.endsUpdates = stopped || error.reason.map(state.endingReasons.contains) == true
                        Self.append(.failure(error), to: &state)
                    } else {
                        Self.append(output, to: &state)
                    }
                // Timers only enqueue when they fire: arming one under the lock waits for nothing.
                case .arm(let timer, let seconds): timers.arm(timer, after: seconds)
                case .cancel(let timer): timers.cancel(timer)
                case .stopSource:
                    stoppedSource = true
                    if state.sourceRunning {
                        state.sourceRunning = false
                        effects.sourceChanged = true
                    }
                }
            }
            if state.engine.isRunning && !state.sourceRunning && !stoppedSource {
                state.sourceRunning = true
                effects.sourceChanged = true
            }
            if effects.delivered != nil { effects.cache = state.lastLocationCache }
            // Inline delivery with no hand-over under way: the outputs are taken here, in the
            // step's own critical section, and handed over by this thread below.
            if case .inline = state.delivery, !state.drainScheduled, !state.pending.isEmpty {
                state.drainScheduled = true
                state.drainsStarted += 1
                effects.batch = Self.take(&state)
            }
            effects.behind = state.pendingLocations >= state.maximumBatch
            return true
        }
        guard stepped else { return false }
        if effects.sourceChanged { reconcileSource() }
        if let location = effects.delivered, let cache = effects.cache,
            cache.record(location, for: appID, inBackground: true)
        {
            // An earlier write failed (a full disk): said once, at the next write, in order with
            // the outputs.
            if let problem = cache.takeProblem(for: appID) {
                enqueue(
                    .diagnostic(LocationDiagnostic(code: "lastLocationNotSaved", .lastLocationWriteFailed(problem))))
            }
        }
        if let batch = effects.batch {
            delivering.lock()
            defer { delivering.unlock() }
            handOver(batch)
        } else {
            scheduleDrain()
        }
        return effects.behind
    }

    /// Starts or stops the source until it does what the engine last decided
    /// (`SourceReconciler`). Returns at once when another thread is doing it: that thread looks again.
    private func reconcileSource() {
        sourceControl.reconcile(
            wanted: { state.withLock { ($0.sourceRunning, $0.generation) } },
            stop: { source.stop() },
            start: { generation in
                source.start { [weak self] event in self?.sourceEvent(event, generation: generation) }
            })
    }

    /// Blocks until the steps of timers fired so far have run and their outputs have been handed
    /// over (with a queue: until that queue has run them). With a `ManualEngineClock` and a
    /// source that has stopped sending, what the adapter holds afterwards is final: a test
    /// proves "nothing more" without waiting. Never call it from the adapter's queue.
    public func settle() {
        work.sync {}
        switch delivery {
        case .inline: flush()
        case .main: DispatchQueue.main.sync {}
        case .queue(let queue): queue.sync {}
        case .performer(let target):
            let done = DispatchSemaphore(value: 0)
            target.perform { done.signal() }
            done.wait()
        }
    }

    /// Source events arrive on the source's own thread. A recording's thread waits here while the
    /// adapter is `maximumBatch` locations behind.
    private func sourceEvent(_ event: LocationSourceEvent, generation: Int) {
        let uptime = source.isLive ? clock.uptime : nil
        if case .problem(_, terminal: true) = event, let observer = state.withLock({ $0.flowObserver }) {
            observer(.ended)
        }
        let behindAfterStep = driveStep(generation: generation) { engine in
            engine.handle(event, now: clock.now, uptime: uptime)
        }
        // Nearly always the adapter keeps up: no wait, and no process-wide condition to take.
        guard behindAfterStep, source.waitsForConsumer, !isOnQueue else { return }
        let behind = { [self] in
            state.withLock { $0.generation == generation && $0.pendingLocations >= $0.maximumBatch }
        }
        if behind() {
            let observer = state.withLock { $0.flowObserver }
            observer?(.heldBack)
            FlowControl.wait { !behind() }
            observer?(.released)
        }
    }

    /// Starts updates (or a one-shot request); false when the engine refused (denied, restricted).
    @discardableResult
    public func start(_ mode: LocationEngine.Mode) -> Bool {
        drive { engine in engine.start(mode, now: clock.now) }
        return isRunning
    }

    /// Stops everything: the engine's updates, the timers, the source. Outputs not yet handed
    /// over are dropped; one being handed over when this returns has finished (unless this is
    /// called from the adapter's own callback). The source is stopped before this returns, or,
    /// when another thread is starting or stopping it at that moment, by that thread as soon as
    /// it has (`reconcileSource`); its events are dropped either way. The newest location goes
    /// to the cache.
    /// With `keepingMonitoring`, monitoring services (regions, visits) go on if they run.
    public func stop(keepingMonitoring: Bool = false) {
        let (wasRunning, last) = state.withLock { state -> (Bool, LocationValue?) in
            _ = state.engine.stop()
            if keepingMonitoring && state.engine.isRunning {
                // Only the location updates' pending callbacks are dropped.
                state.pending.removeAll { if case .locations = $0 { true } else { false } }
                state.pendingLocations = 0
                state.locationGeneration += 1
                locationGenerations.store(state.locationGeneration, ordering: .releasing)
                timers.cancel(.staleness)
                timers.cancel(.requestLocation)
                return (false, state.engine.lastDelivered)
            }
            state.generation += 1
            generations.store(state.generation, ordering: .releasing)
            state.pending.removeAll()
            state.pendingLocations = 0
            let wasRunning = state.sourceRunning
            state.sourceRunning = false
            if wasRunning {
                timers.cancelAll()
            } else {
                timers.cancel(.staleness)
                timers.cancel(.requestLocation)
            }
            return (wasRunning, state.engine.lastDelivered)
        }
        // A recording's thread waiting for the adapter goes on (and sees it was stopped).
        FlowControl.changed()
        reconcileSource()
        // Written before stop returns (gpsloc's exit keeps its last location), but a disk that does
        // not answer holds the caller no longer than `finalWriteWait`, and is named.
        if wasRunning, let last, let cache = lastLocationCache, let facts = cache.recordFinal(last, for: appID) {
            diagnosticsHandler?(LocationDiagnostic(code: "lastLocationNotSaved", facts))
        }
        flush()
    }
}

/// The runner, weakly, for its timers' handler (made before the runner exists).
private final class WeakRunner: Sendable {
    private struct Weak: Sendable { weak var runner: EngineRunner? }
    private let reference = Locked(Weak())
    /// Set once, in the runner's init, before any timer can fire.
    var runner: EngineRunner? {
        get { reference.withLock { $0.runner } }
        set { reference.withLock { $0.runner = newValue } }
    }
}
