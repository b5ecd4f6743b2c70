import Dispatch
import Foundation
import GNSSCore

/// CoreLocation's location manager, on Linux, over gpsd.
///
/// **One engine, one driver.** Which location is delivered is decided by `LocationEngine`, run
/// by `EngineRunner`, the same driver `gpsloc` uses; the manager only translates the runner's
/// outputs into delegate calls.
///
/// **Where callbacks arrive.** As Apple does, on the run loop of the thread that made the
/// manager: made on the main thread, on the main queue (served by `dispatchMain()`,
/// `RunLoop.main.run()` or an `async` main), so a `@MainActor` delegate works; made inside
/// another thread's running run loop, on that run loop. Made where no run loop runs (a dispatch
/// queue, a Swift concurrency thread), on a private serial queue, and a `privateDelegateQueue`
/// diagnostic says so once a process; `delegateQueue` chooses. When callbacks wait 5 s for a main
/// thread that never runs its loop, a `delegateThreadBlocked` diagnostic names the fix. Every
/// delegate method is called serially. Locations arrive oldest first; locations that wait for a slow delegate come
/// batched into one call. A recording (a source that is not live) is never dropped: its source
/// waits for the delegate. From a live source at most `maximumBatch` wait; the oldest beyond
/// that are dropped and the diagnostics handler hears how many. No callback of any kind arrives
/// after `stopUpdatingLocation()` returns.
///
/// **Silent failures are errors here.** Starting updates while the status is `notDetermined`
/// and no authorization was ever requested reports `CLError.promptDeclined` (code 18) to the
/// delegate and a diagnostic; starting without a delegate is a diagnostic too. Diagnostics go to
/// `diagnosticsHandler` (default: one line on stderr).
///
/// ```swift
/// final class Tracker: NSObject, CLLocationManagerDelegate {
///     let manager = CLLocationManager()  // gpsd at $GPSLOCATION_GPSD, else 127.0.0.1:2947
///     override init() {
///         super.init()
///         manager.delegate = self
///         manager.distanceFilter = 10
///         manager.requestWhenInUseAuthorization()
///         manager.startUpdatingLocation()
///     }
///     func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
///         print(locations.last!.coordinate, locations.last!.horizontalAccuracy)
///     }
///     func locationManager(_ manager: CLLocationManager, didFailWithError error: Error) {
///         print(error.localizedDescription)  // what is wrong, and the command that fixes it
///     }
/// }
/// ```
open class CLLocationManager: NSObject {
    // @unchecked Sendable: a non-final NSObject subclass cannot be checked. All mutable state is
    // in `state` and the runner (each behind one lock); delegate calls happen on `delegateQueue`.

    /// Weak, as Apple's. The first delegate set receives the initial authorization state
    /// (`locationManagerDidChangeAuthorization`) on `delegateQueue`, as Apple reports it after
    /// the manager is created.
    public weak var delegate: (any CLLocationManagerDelegate)? {
        get { state.withLock { $0.delegate.value } }
        set {
            let reference = DelegateReference(value: newValue)
            let first = state.withLock { state in
                state.delegate = reference
                defer { if reference.value != nil { state.initialAuthorizationReported = true } }
                return reference.value != nil && !state.initialAuthorizationReported
            }
            if first {
                runner.enqueue(.adapter(ManagerEvent.authorization))
                resumePersistedRegions()
            }
        }
    }
    /// Default `kCLLocationAccuracyBest`. Used by `requestLocation()` and the tier check.
    /// `kCLLocationAccuracyReduced` asks for approximate locations even with full accuracy
    /// authorization, as Apple documents it ("as if the app didn't have that authorization"):
    /// the reduced-accuracy fuzzer then serves this manager.
    public var desiredAccuracy: CLLocationAccuracy {
        get { runner.withEngine { $0.configuration.desiredAccuracy } }
        set { runner.withEngine { $0.configuration.desiredAccuracy = newValue } }
    }
    /// Metres; `kCLDistanceFilterNone` (the default) delivers every location. See `DeliveryFilter`.
    public var distanceFilter: CLLocationDistance {
        get { runner.withEngine { $0.configuration.distanceFilter } }
        set { runner.withEngine { $0.configuration.distanceFilter = newValue } }
    }
    /// At most one location per this many seconds (a GPSLocation addition, like GeoClue's time
    /// threshold and Android's minimum update interval; 0, the default: no limit). Measured on
    /// the locations' own timestamps; with a `distanceFilter` both must pass.
    public var minimumUpdateInterval: TimeInterval {
        get { runner.withEngine { $0.configuration.minimumUpdateInterval } }
        set { runner.withEngine { $0.configuration.minimumUpdateInterval = max(0, newValue) } }
    }
    /// Where the last location this app received is kept between runs (default: the user's
    /// cache, `LastLocationCache.user`); nil keeps nothing.
    public var lastLocationCache: LastLocationCache? {
        get { runner.lastLocationCache }
        set {
            runner.lastLocationCache = newValue
            state.withLock { $0.cachedLocation = nil }
        }
    }

    /// This app's authorization now (the authorizer's: policy, then the user's decision).
    public var authorizationStatus: CLAuthorizationStatus { authorizer.status }
    /// Full or reduced (approximate) accuracy for this app.
    public var accuracyAuthorization: CLAccuracyAuthorization { authorizer.accuracy }

    // MARK: GPSLocation additions

    /// The queue delegate methods are called on (see the type's documentation): the main queue
    /// for a manager made on the main thread, the one given to `init(source:authorizer:delegateQueue:)`,
    /// or the manager's private serial queue. A manager made inside another thread's running run
    /// loop is called on that run loop; this is then the private queue, used once it is set.
    /// Setting it moves every later callback to `newValue`.
    public var delegateQueue: DispatchQueue {
        get { runner.queue ?? privateQueue }
        set { runner.queue = newValue }
    }
    /// The private queue a manager falls back to (see `delegateQueue`).
    private let privateQueue = DispatchQueue(label: "gpslocation.delegate")
    /// How long `requestLocation()` waits for `desiredAccuracy` before settling for the best
    /// location seen, or failing with `locationUnknown` (default 10 s).
    public var requestLocationTimeout: TimeInterval {
        get { runner.withEngine { $0.configuration.requestLocationTimeout } }
        set { runner.withEngine { $0.configuration.requestLocationTimeout = newValue } }
    }
    /// Fixes older than this (seconds, default 10) are stale and not delivered (a GPSLocation
    /// addition). Live, age is measured on the receiver's own clock, advanced by the monotonic
    /// clock since its last fresh fix — a receiver repeating an old fix, or gpsd handing on
    /// reports it held back — never against the system clock, which may be wrong by years; a
    /// system clock that disagrees with the receiver's is one `systemClockOffset` diagnostic. In
    /// a replay, age is measured on the recording's clock. `.infinity` turns the check off.
    public var maximumLocationAge: TimeInterval {
        get { runner.withEngine { $0.configuration.maximumLocationAge } }
        set { runner.withEngine { $0.configuration.maximumLocationAge = newValue } }
    }
    /// From a live source, at most this many locations wait for a slow delegate; older ones are
    /// dropped (and counted in a `droppedLocations` diagnostic). A recording waits instead.
    public var maximumBatch: Int {
        get { runner.maximumBatch }
        set { runner.maximumBatch = newValue }
    }
    /// Seconds without a usable fix, while updating, before the delegate gets
    /// `CLError.locationUnknown` (once per stretch). nil (the default): three receiver cycles,
    /// at least 1 s — see `FixStalenessMonitor`. `location` is kept meanwhile and
    /// `isLocationStale` is true; the next fix is delivered as usual, with no extra callback.
    public var staleFixTimeout: TimeInterval? {
        get { runner.withEngine { $0.configuration.staleFixTimeout } }
        set { runner.withEngine { $0.configuration.staleFixTimeout = newValue } }
    }
    /// Which receiver to follow when gpsd reports several (default `.bestFix`; see
    /// `ReceiverSelectionStage` for the exact rule).
    public var receiverSelection: ReceiverSelection {
        get { runner.withEngine { $0.configuration.receiverSelection } }
        set { runner.withEngine { $0.configuration.receiverSelection = newValue } }
    }
    /// How much further ahead of the last location a live fix may be dated than the time that
    /// has passed since it (default 5 s; see `TimeOrderStage`). `.infinity` turns the check off —
    /// for a gpsd fed faster than real time (gpsfake with a short cycle), where recorded gaps
    /// pass quicker than they did.
    public var timeJumpTolerance: TimeInterval {
        get { runner.withEngine { $0.configuration.timeJumpTolerance } }
        set { runner.withEngine { $0.configuration.timeJumpTolerance = newValue } }
    }
    /// The device path whose fixes are being delivered, once one has been chosen.
    public var followedReceiver: String? { runner.withEngine { $0.followedReceiver } }
    /// True while updates run and no usable fix has come for `staleFixTimeout`: `location`
    /// is the last one known, not the current position. Also true for a `location` from the
    /// last-location cache older than `maximumLocationAge` (an earlier run's).
    public var isLocationStale: Bool {
        if runner.withEngine({ $0.isStale }) { return true }
        guard runner.withEngine({ $0.lastDelivered == nil }), let age = locationAge else { return false }
        return age > maximumLocationAge
    }
    /// The age of `location` in seconds by the source's clock (live, the receiver's clock, so a
    /// wrong system clock does not age it; the recording's in a replay; the wall clock for a
    /// cached location), or nil without one.
    public var locationAge: TimeInterval? {
        let delivered = runner.withEngine { engine -> TimeInterval?? in
            guard let location = engine.lastDelivered else { return .none }
            let now = engine.clock(now: runner.clock.now, uptime: runner.clock.uptime) ?? location.timestamp
            return .some(now.timeIntervalSince(location.timestamp))
        }
        if let delivered { return delivered }
        return location.map { runner.clock.now.timeIntervalSince($0.timestamp) }
    }
    /// Where notes that are not errors for the app go (dropped fixes, a receiver clock that
    /// stepped, a request that cannot work): by default one line on stderr. Daemons route them
    /// to their own log.
    public var diagnosticsHandler: DiagnosticsHandler {
        get { state.withLock { $0.diagnosticsHandler } }
        set { state.withLock { $0.diagnosticsHandler = newValue } }
    }

    /// Where fixes come from: gpsd, a replay, or any `LocationSource` (a GPSLocation addition).
    public var source: any LocationSource { runner.source }
    /// The gate every location passes (a GPSLocation addition; see `sharedAuthorizer`).
    public let authorizer: LocationAuthorizer

    /// The process-wide authorizer managers use unless given one: the real gate for this app
    /// (the executable's name) — the administrator's policy, then the user's decision store,
    /// both followed live, so a `gpsloc auth grant APP --always` reaches a running program. On a
    /// terminal a request asks there (`LocationAuthorizer.terminalPrompt`); without one nobody
    /// is asked and the explanation names the command. The usage description comes from
    /// `GPSLOCATION_USAGE_DESCRIPTION`.
    ///
    /// Where a broker is in force (`GPSLOCATION_BROKER`, or gpslocd's socket at
    /// /run/gpslocd/socket) gpslocd holds the decision instead (`LocationAuthorizer.brokered`).
    public static let sharedAuthorizer: LocationAuthorizer =
        BrokerProtocol.socketPath().map {
            LocationAuthorizer.brokered(appID: LocationAuthorizer.defaultAppID, socketPath: $0)
        }
        ?? LocationAuthorizer.persistent(
            appID: LocationAuthorizer.defaultAppID,
            prompt: isatty(STDIN_FILENO) != 0
                ? LocationAuthorizer.terminalPrompt(usageDescription: LocationAuthorizer.environmentUsageDescription)
                : nil)

    /// Locations enabled for this machine: false when the administrator's policy
    /// (`LocationPolicy`, /etc/gpslocation/policy.json) turns them off or cannot be read.
    open class func locationServicesEnabled() -> Bool { LocationPolicy.effective().locationServicesEnabled }

    /// The shared authorizer's status (Apple's deprecated class method).
    @available(*, deprecated, message: "Use the authorizationStatus instance property")
    open class func authorizationStatus() -> CLAuthorizationStatus { sharedAuthorizer.status }

    // MARK: State

    /// The delegate, weakly. @unchecked Sendable: it is read and written only under `state`'s
    /// lock, and the delegate is called only on `delegateQueue`, serially (Apple's contract).
    struct DelegateReference: @unchecked Sendable {
        weak var value: (any CLLocationManagerDelegate)?
    }

    /// What only the manager keeps; the engine, its timers and deliveries are the runner's.
    struct State {
        var delegate = DelegateReference()
        var allowsBackgroundLocationUpdates = false
        var diagnosticsHandler: DiagnosticsHandler = Diagnostics.standardError
        var initialAuthorizationReported = false
        var requested = false
        var warnedNoDelegate = false
        var loggedMessages: Set<String> = []
        var onSourceEnded: (@Sendable () -> Void)?
        /// The cache's entry for this app, read once (nil inside: there was none).
        var cachedLocation: LocationValue??
        /// The last `CLLocation` handed to the delegate (what `location` returns while current).
        var lastShown: CLLocation?
        var regions = RegionRegistry()
        var heading: CLHeading?
        var headingOrientation = CLDeviceOrientation.portrait
        var showsBackgroundLocationIndicator = false
    }

    /// The manager's own events, queued with the engine's so they arrive in order.
    enum ManagerEvent: Sendable {
        case authorization
        case regionFailed(CLRegion?, CLError)
        case regionStarted(CLRegion)
        case regionState(CLRegion, CLRegionState)
        /// A call of the manager's own (an answer to a request), in order with the rest.
        case call(@Sendable (CLLocationManager, any CLLocationManagerDelegate) -> Void)
    }

    /// Calls the delegate where its callbacks come, in order with the engine's outputs.
    func callDelegate(_ body: @escaping @Sendable (CLLocationManager, any CLLocationManagerDelegate) -> Void) {
        runner.enqueue(.adapter(ManagerEvent.call(body)))
    }

    let state = Locked(State())
    /// The one driver: engine, timers, source, cache, kept state, delivery.
    let runner: EngineRunner

    /// Called on `delegateQueue` after the delegate has heard that the source stopped for good
    /// (a terminal error: a replay ended, gpsd gone without reconnection). `liveUpdates` uses
    /// it to end its sequence instead of waiting forever.
    var onSourceEnded: (@Sendable () -> Void)? {
        get { state.withLock { $0.onSourceEnded } }
        set { state.withLock { $0.onSourceEnded = newValue } }
    }

    private var authorizerObservation: UUID?
    /// No run loop could serve the creating thread: the delegate is called on a private queue.
    private let usesFallbackQueue: Bool

    /// A manager reading `source` (default: gpsd, see `defaultSource()`), gated by `authorizer`,
    /// calling its delegate on `delegateQueue` (default: a serial queue of its own).
    public init(
        source: any LocationSource = CLLocationManager.defaultSource(),
        authorizer: LocationAuthorizer = CLLocationManager.sharedAuthorizer,
        delegateQueue: DispatchQueue? = nil
    ) {
        self.authorizer = authorizer
        (runner, usesFallbackQueue) = Self.makeRunner(source, authorizer, delegateQueue, SystemEngineClock())
        super.init()
        connect()
    }

    /// With an injected clock (tests: `ManualEngineClock`).
    convenience init(
        source: any LocationSource, authorizer: LocationAuthorizer, delegateQueue: DispatchQueue?,
        clock: any EngineClock
    ) {
        self.init(authorizer: authorizer, made: Self.makeRunner(source, authorizer, delegateQueue, clock))
    }

    /// Private, so no subclass inherits or must override it (a subclass's `override init()`
    /// is all Apple's API asks of it).
    private init(authorizer: LocationAuthorizer, made: (EngineRunner, usesFallback: Bool)) {
        self.authorizer = authorizer
        (runner, usesFallbackQueue) = made
        super.init()
        connect()
    }

    /// Apple's initializer, designated as Apple's is (a subclass may `override init()`): the
    /// source is `CLLocationManager.defaultSource()` (gpsd on 127.0.0.1:2947 unless
    /// `setDefaultSource` says otherwise), the authorizer is shared, the delegate is called on
    /// the creating thread's run loop (see the type's documentation).
    public override init() {
        authorizer = CLLocationManager.sharedAuthorizer
        (runner, usesFallbackQueue) = Self.makeRunner(
            CLLocationManager.defaultSource(), authorizer, nil, SystemEngineClock())
        super.init()
        connect()
    }

    func connect() {
        let this = WeakReference(self)
        runner.setConsumer { output in this.value?.deliver(output) }
        runner.diagnosticsHandler = { diagnostic in this.value?.diagnosticsHandler(diagnostic) }
        // The delegate hears of a change first, then the runner applies it (it follows the
        // authorizer itself, as every face's runner does): observers are called in this order.
        authorizerObservation = authorizer.addObserver { this.value?.tellAuthorization() }
        runner.follow(authorizer)
        let explain =
            usesFallbackQueue
            && Self.fallbackExplained.withLock { explained in
                defer { explained = true }
                return !explained
            }
        if explain {
            runner.enqueue(.diagnostic(LocationDiagnostic(code: "privateDelegateQueue", message: Self.fallbackMessage)))
        }
    }

    deinit {
        if let keeper = state.withLock({ $0.regions.keeper }), keeper.takePending() { keeper.save(keptRegions()) }
        if let authorizerObservation { authorizer.removeObserver(authorizerObservation) }
    }

    // MARK: Authorization requests

    /// Asks for When In Use (on a terminal: there; otherwise the error names the grant command).
    /// The answer comes through `locationManagerDidChangeAuthorization(_:)`.
    public func requestWhenInUseAuthorization() { request(always: false) }
    /// Asks for Always (daemons and region monitoring need it); as `requestWhenInUseAuthorization()`.
    public func requestAlwaysAuthorization() { request(always: true) }

    private func request(always: Bool) {
        state.withLock { $0.requested = true }
        switch authorizer.request(always: always) {
        case .changed:
            authorizationChanged()
        case .unchanged:
            break
        case .noPrompt(let message), .missingUsageDescription(let message):
            // A diagnostic now; the delegate hears of it only when locations are asked for (the
            // gate's refusal, naming the same command), as Apple reports errors only then.
            logOnce(message.words, code: "authorizationRequest")
        }
    }

    /// Call after changing `authorizer`'s decision from outside (a settings change): the delegate
    /// hears of it, and delivery follows the new state before the next fix.
    public func authorizationChanged() {
        tellAuthorization()
        let current = authorizer.state
        runner.drive { engine in engine.setAuthorization(current, now: runner.clock.now) }
    }

    /// Queues `locationManagerDidChangeAuthorization(_:)` (the runner applies the change itself).
    private func tellAuthorization() { runner.enqueue(.adapter(ManagerEvent.authorization)) }

    // MARK: Updates

    /// Starts delivering locations to `locationManager(_:didUpdateLocations:)` (asking first if
    /// not determined); problems arrive at `locationManager(_:didFailWithError:)`.
    public func startUpdatingLocation() { start(.continuous) }

    /// Ends location updates (monitoring services go on). No delegate call for them arrives
    /// after this returns, unless it is called from a delegate callback, which finishes first.
    public func stopUpdatingLocation() { runner.stop(keepingMonitoring: true) }

    /// One location meeting `desiredAccuracy`; after `requestLocationTimeout`, the best one seen;
    /// with none, `CLError.locationUnknown`. Does nothing while updates are running.
    public func requestLocation() { start(.oneShot) }

    private func start(_ mode: LocationEngine.Mode) {
        guard preflight() else { return }
        runner.start(mode)
    }

    /// Reports the ways of starting that cannot work and are mistakes of the calling code
    /// (no delegate, never asked for authorization, services off). False: do not start.
    func preflight() -> Bool {
        let (hasDelegate, wasRequested, warn) = state.withLock { state in
            let hasDelegate = state.delegate.value != nil
            defer { if !hasDelegate { state.warnedNoDelegate = true } }
            return (hasDelegate, state.requested || authorizer.wasRequested, !hasDelegate && !state.warnedNoDelegate)
        }
        if !hasDelegate && warn {
            logOnce(
                "CLLocationManager: updates were started without a delegate, so locations go nowhere — set `manager.delegate` first",
                code: "noDelegate")
        }
        guard Self.locationServicesEnabled() else {
            runner.enqueue(
                .failure(
                    CLError(
                        .denied, message: "location services are disabled on this machine by the administrator",
                        reason: .notAuthorized)))
            return false
        }
        if authorizer.status == .notDetermined && !wasRequested {
            let message =
                "location updates were started for \(authorizer.appID) while authorization is not determined and was never requested — "
                + "call requestWhenInUseAuthorization() (or requestAlwaysAuthorization()) first; nothing is delivered until it is granted"
            runner.withEngine { $0.authorizationExplained() }
            logOnce(message, code: "authorizationRequest")
            runner.enqueue(.failure(CLError(.promptDeclined, message: message, reason: .authorizationRequest)))
        }
        return true
    }

    // MARK: Delivery

    /// Translates one of the runner's outputs into delegate calls (on `delegateQueue`).
    private func deliver(_ output: EngineRunner.Output) {
        let (delegate, handler) = state.withLock { ($0.delegate.value, $0.diagnosticsHandler) }
        switch output {
        case .locations(let locations):
            let objects = locations.map(CLLocation.init)
            state.withLock { $0.lastShown = objects.last }
            delegate?.locationManager(self, didUpdateLocations: objects)
        case .failure(let error): delegate?.locationManager(self, didFailWithError: error)
        case .sourceEnded: onSourceEnded?()
        case .receiver(let event):
            receiverIdentified(event)
            delegate?.locationManager(self, didChangeReceiver: event)
        case .sky: break
        case .region(let event): regionEventHappened(event, delegate: delegate)
        case .visit(let record): delegate?.locationManager(self, didVisit: CLVisit(record))
        case .heading(let value):
            let heading = CLHeading(value)
            state.withLock { $0.heading = heading }
            headingDelivered()
            delegate?.locationManager(self, didUpdateHeading: heading)
        case .paused(true): delegate?.locationManagerDidPauseLocationUpdates(self)
        case .paused(false): delegate?.locationManagerDidResumeLocationUpdates(self)
        case .diagnostic(let diagnostic): handler(diagnostic)
        case .adapter(let event):
            switch event as? ManagerEvent {
            case .authorization?:
                delegate?.locationManagerDidChangeAuthorization(self)
                delegate?.locationManager(self, didChangeAuthorization: authorizer.status)
            case .regionFailed(let region, let error)?:
                delegate?.locationManager(self, monitoringDidFailFor: region, withError: error)
            case .regionStarted(let region)?:
                delegate?.locationManager(self, didStartMonitoringFor: region)
            case .regionState(let region, let regionState)?:
                delegate?.locationManager(self, didDetermineState: regionState, for: region)
            case .call(let body)?:
                if let delegate { body(self, delegate) }
            case nil: break
            }
        }
    }

    /// Passes `message` to the diagnostics handler the first time this manager meets it.
    func logOnce(_ message: String, code: String) {
        let (first, handler) = state.withLock { ($0.loggedMessages.insert(message).inserted, $0.diagnosticsHandler) }
        if first { handler(LocationDiagnostic(code: code, message: message)) }
    }
}
