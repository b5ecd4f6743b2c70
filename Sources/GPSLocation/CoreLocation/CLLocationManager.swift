import Dispatch
import Foundation
import GNSSCore

/// Holds the factory behind `CLLocationManager.defaultSource()`.
private let defaultSourceFactory = Locked<@Sendable () -> any LocationSource>({
    // A manager has no use for SKY reports: they are left undecoded.
    GPSDLocationSource(endpoint: .fromEnvironment(), sky: false)
})

/// Apple's delegate protocol. Every method is optional (default implementations do nothing).
public protocol CLLocationManagerDelegate: AnyObject {
    /// Locations in chronological order, the newest last; never empty.
    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation])
    /// `CLError` values (as `any Error`, like Apple's signature).
    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error)
    /// Called once after the manager is created, and on every change of status or accuracy.
    func locationManagerDidChangeAuthorization(_ manager: CLLocationManager)
    /// Deprecated by Apple in iOS 14; called alongside `locationManagerDidChangeAuthorization`.
    func locationManager(_ manager: CLLocationManager, didChangeAuthorization status: CLAuthorizationStatus)
    /// A GPSLocation addition: gpsd activated or deactivated a receiver (plugged in, unplugged,
    /// `gpsdctl add/remove`). When the receiver being followed goes away, the delegate also
    /// gets `CLError.locationUnknown` saying so.
    func locationManager(_ manager: CLLocationManager, didChangeReceiver receiver: DeviceEvent)
    /// A monitored region's state became known (the first time, after a gap, in answer to
    /// `requestState(for:)`) or changed — alongside every enter and exit.
    func locationManager(_ manager: CLLocationManager, didDetermineState state: CLRegionState, for region: CLRegion)
    func locationManager(_ manager: CLLocationManager, didEnterRegion region: CLRegion)
    func locationManager(_ manager: CLLocationManager, didExitRegion region: CLRegion)
    func locationManager(_ manager: CLLocationManager, didStartMonitoringFor region: CLRegion)
    /// `regionMonitoringDenied` (not authorized Always with full accuracy: the region stays
    /// registered and is monitored once it is) or `regionMonitoringFailure` (it cannot be).
    func locationManager(
        _ manager: CLLocationManager, monitoringDidFailFor region: CLRegion?, withError error: any Error)
    func locationManager(_ manager: CLLocationManager, didVisit visit: CLVisit)
}

extension CLLocationManagerDelegate {
    public func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {}
    public func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {}
    public func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {}
    public func locationManager(_ manager: CLLocationManager, didChangeAuthorization status: CLAuthorizationStatus) {}
    public func locationManager(_ manager: CLLocationManager, didChangeReceiver receiver: DeviceEvent) {}
    public func locationManager(
        _ manager: CLLocationManager, didDetermineState state: CLRegionState, for region: CLRegion
    ) {}
    public func locationManager(_ manager: CLLocationManager, didEnterRegion region: CLRegion) {}
    public func locationManager(_ manager: CLLocationManager, didExitRegion region: CLRegion) {}
    public func locationManager(_ manager: CLLocationManager, didStartMonitoringFor region: CLRegion) {}
    public func locationManager(
        _ manager: CLLocationManager, monitoringDidFailFor region: CLRegion?, withError error: any Error
    ) {}
    public func locationManager(_ manager: CLLocationManager, didVisit visit: CLVisit) {}
}

/// CoreLocation's location manager, on Linux, over gpsd.
///
/// **One engine.** Which location is delivered is decided by `LocationEngine`, the same state
/// machine `gpsloc` drives; the manager only stores it (one lock, `Locked`), feeds it the source's
/// events, and executes its actions — delegate calls, timers, stopping the source — after the
/// lock is released.
///
/// **Where callbacks arrive.** Apple calls delegates on the run loop of the thread that made the
/// manager. A Linux CLI or daemon usually runs no run loop, so here every delegate method is
/// called serially on `delegateQueue`: by default a private serial queue of the manager's own,
/// which needs nothing running; set it to `.main` in a program that runs `dispatchMain()` or a
/// main run loop. Locations arrive oldest first; if the delegate is slower than the receiver,
/// waiting locations are batched into one call (at most `maximumBatch`, the oldest dropped
/// beyond that). No callback of any kind arrives after `stopUpdatingLocation()` returns.
///
/// **Silent failures are errors here.** Starting updates while the status is `notDetermined`
/// and no authorization was ever requested reports `CLError.promptDeclined` (code 18) to the
/// delegate and a diagnostic; starting without a delegate is a diagnostic too. Diagnostics go to
/// `diagnosticsHandler` (default: one line on stderr).
open class CLLocationManager: NSObject, @unchecked Sendable {
    // @unchecked Sendable: a non-final NSObject subclass cannot be checked. All mutable state is
    // in `state` (one lock); delegate calls happen on `delegateQueue` outside it.

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
                enqueue(.authorization)
                resumePersistedRegions()
            }
        }
    }
    /// Default `kCLLocationAccuracyBest`. Used by `requestLocation()` and the tier check.
    public var desiredAccuracy: CLLocationAccuracy {
        get { state.withLock { $0.engine.configuration.desiredAccuracy } }
        set { state.withLock { $0.engine.configuration.desiredAccuracy = newValue } }
    }
    /// Metres; `kCLDistanceFilterNone` (the default) delivers every location. See `DistanceFilterStage`.
    public var distanceFilter: CLLocationDistance {
        get { state.withLock { $0.engine.configuration.distanceFilter } }
        set { state.withLock { $0.engine.configuration.distanceFilter = newValue } }
    }
    /// At most one location per this many seconds (a GPSLocation addition, like GeoClue's time
    /// threshold and Android's minimum update interval; 0, the default: no limit). Measured on
    /// the locations' own timestamps; with a `distanceFilter` both must pass.
    public var minimumUpdateInterval: TimeInterval {
        get { state.withLock { $0.engine.configuration.minimumUpdateInterval } }
        set { state.withLock { $0.engine.configuration.minimumUpdateInterval = max(0, newValue) } }
    }
    /// Accepted for source compatibility; gpsd receivers do not change behaviour with it.
    public var activityType: CLActivityType {
        get { state.withLock { $0.activityType } }
        set { state.withLock { $0.activityType = newValue } }
    }
    /// Accepted for source compatibility; a Linux process is never suspended.
    public var allowsBackgroundLocationUpdates: Bool {
        get { state.withLock { $0.allowsBackgroundLocationUpdates } }
        set { state.withLock { $0.allowsBackgroundLocationUpdates = newValue } }
    }
    /// Accepted for source compatibility; updates are never paused automatically on Linux.
    public var pausesLocationUpdatesAutomatically: Bool {
        get { state.withLock { $0.pausesLocationUpdatesAutomatically } }
        set { state.withLock { $0.pausesLocationUpdatesAutomatically = newValue } }
    }
    /// The most recent location delivered, or nil.
    /// The last location delivered to this manager; before any, the last one this app received
    /// (the per-user `lastLocationCache`), with its own old timestamp — when the app is
    /// authorized now, and with reduced accuracy only if that one was reduced too.
    public var location: CLLocation? {
        let (delivered, cache, cached) = state.withLock {
            ($0.engine.lastDelivered, $0.lastLocationCache, $0.cachedLocation)
        }
        if let delivered { return delivered }
        guard let cache else { return nil }
        let decision = AuthorizationDecision(status: authorizer.status, accuracy: authorizer.accuracy)
        guard decision.status == .authorizedAlways || decision.status == .authorizedWhenInUse else { return nil }
        let entry: CLLocation?
        if let cached {
            entry = cached
        } else {
            entry = cache.location(for: authorizer.appID)
            state.withLock { $0.cachedLocation = .some(entry) }
        }
        guard let entry, decision.accuracy == .fullAccuracy || entry.gnss?.reduced == true else { return nil }
        return entry
    }

    /// Where the last location this app received is kept between runs (default: the user's
    /// cache, `LastLocationCache.user`); nil keeps nothing.
    public var lastLocationCache: LastLocationCache? {
        get { state.withLock { $0.lastLocationCache } }
        set {
            state.withLock {
                $0.lastLocationCache = newValue
                $0.cachedLocation = nil
            }
        }
    }

    public var authorizationStatus: CLAuthorizationStatus { authorizer.status }
    public var accuracyAuthorization: CLAccuracyAuthorization { authorizer.accuracy }

    // MARK: GPSLocation additions

    /// The queue delegate methods are called on (see the type's documentation).
    public var delegateQueue: DispatchQueue {
        get { state.withLock { $0.queue } }
        set {
            newValue.setSpecific(key: queueKey, value: ObjectIdentifier(self))
            state.withLock { $0.queue = newValue }
        }
    }
    /// How long `requestLocation()` waits for `desiredAccuracy` before settling for the best
    /// location seen, or failing with `locationUnknown` (default 10 s).
    public var requestLocationTimeout: TimeInterval {
        get { state.withLock { $0.engine.configuration.requestLocationTimeout } }
        set { state.withLock { $0.engine.configuration.requestLocationTimeout = newValue } }
    }
    /// Fixes older than this (seconds, by the source's clock) are stale and not delivered.
    public var maximumLocationAge: TimeInterval {
        get { state.withLock { $0.engine.configuration.maximumLocationAge } }
        set { state.withLock { $0.engine.configuration.maximumLocationAge = newValue } }
    }
    /// At most this many locations wait for a slow delegate; older ones are dropped.
    public var maximumBatch: Int {
        get { state.withLock { $0.maximumBatch } }
        set { state.withLock { $0.maximumBatch = max(1, newValue) } }
    }
    /// Seconds without a usable fix, while updating, before the delegate gets
    /// `CLError.locationUnknown` (once per stretch). nil (the default): three receiver cycles,
    /// at least 1 s — see `FixStalenessMonitor`. `location` is kept meanwhile and
    /// `isLocationStale` is true; the next fix is delivered as usual, with no extra callback.
    public var staleFixTimeout: TimeInterval? {
        get { state.withLock { $0.engine.configuration.staleFixTimeout } }
        set { state.withLock { $0.engine.configuration.staleFixTimeout = newValue } }
    }
    /// Which receiver to follow when gpsd reports several (default `.bestFix`; see
    /// `ReceiverSelectionStage` for the exact rule).
    public var receiverSelection: ReceiverSelection {
        get { state.withLock { $0.engine.configuration.receiverSelection } }
        set { state.withLock { $0.engine.configuration.receiverSelection = newValue } }
    }
    /// How much further ahead of the last location a live fix may be dated than the time that
    /// has passed since it (default 5 s; see `TimeOrderStage`). `.infinity` turns the check off —
    /// for a gpsd fed faster than real time (gpsfake with a short cycle), where recorded gaps
    /// pass quicker than they did.
    public var timeJumpTolerance: TimeInterval {
        get { state.withLock { $0.engine.configuration.timeJumpTolerance } }
        set { state.withLock { $0.engine.configuration.timeJumpTolerance = newValue } }
    }
    /// The device path whose fixes are being delivered, once one has been chosen.
    public var followedReceiver: String? { state.withLock { $0.engine.followedReceiver } }
    /// True while updates run and no usable fix has come for `staleFixTimeout`: `location`
    /// is the last one known, not the current position. Also true for a `location` from the
    /// last-location cache older than `maximumLocationAge` (an earlier run's).
    public var isLocationStale: Bool {
        if state.withLock({ $0.engine.isStale }) { return true }
        guard state.withLock({ $0.engine.lastDelivered == nil }), let age = locationAge else { return false }
        return age > maximumLocationAge
    }
    /// The age of `location` in seconds by the source's clock (the wall clock live, the
    /// recording's in a replay; the wall clock for a cached location), or nil without one.
    public var locationAge: TimeInterval? {
        let delivered = state.withLock { state -> TimeInterval?? in
            guard let location = state.engine.lastDelivered else { return .none }
            let now = state.engine.clock(now: Date()) ?? location.timestamp
            return .some(now.timeIntervalSince(location.timestamp))
        }
        if let delivered { return delivered }
        return location.map { Date().timeIntervalSince($0.timestamp) }
    }
    /// Where notes that are not errors for the app go (dropped fixes, a receiver clock that
    /// stepped, a request that cannot work): by default one line on stderr. Daemons route them
    /// to their own log.
    public var diagnosticsHandler: DiagnosticsHandler {
        get { state.withLock { $0.diagnosticsHandler } }
        set { state.withLock { $0.diagnosticsHandler = newValue } }
    }

    public let source: any LocationSource
    public let authorizer: LocationAuthorizer

    /// The process-wide authorizer managers use unless given one: the real gate for this app
    /// (the executable's name) — the administrator's policy, then the user's decision store,
    /// both followed live, so a `gpsloc auth grant APP --always` reaches a running program. On a
    /// terminal a request asks there (`LocationAuthorizer.terminalPrompt`); without one nobody
    /// is asked and the explanation names the command. The usage description comes from
    /// `GPSLOCATION_USAGE_DESCRIPTION`.
    public static let sharedAuthorizer = LocationAuthorizer.persistent(
        appID: LocationAuthorizer.defaultAppID,
        prompt: isatty(STDIN_FILENO) != 0
            ? LocationAuthorizer.terminalPrompt(usageDescription: LocationAuthorizer.environmentUsageDescription) : nil)

    /// Locations enabled for this machine: false when the administrator's policy
    /// (`LocationPolicy`, /etc/gpslocation/policy.json) turns them off or cannot be read.
    open class func locationServicesEnabled() -> Bool { LocationPolicy.effective().locationServicesEnabled }

    @available(*, deprecated, message: "Use the authorizationStatus instance property")
    open class func authorizationStatus() -> CLAuthorizationStatus { sharedAuthorizer.status }

    // MARK: State

    /// The delegate, weakly. @unchecked Sendable: it is read and written only under `state`'s
    /// lock, and the delegate is called only on `delegateQueue`, serially (Apple's contract).
    private struct DelegateReference: @unchecked Sendable {
        weak var value: (any CLLocationManagerDelegate)?
    }

    private struct State {
        var engine: LocationEngine
        var delegate = DelegateReference()
        var queue: DispatchQueue
        var activityType = CLActivityType.other
        var allowsBackgroundLocationUpdates = false
        var pausesLocationUpdatesAutomatically = false
        var maximumBatch = 100
        var diagnosticsHandler: DiagnosticsHandler = Diagnostics.standardError
        var initialAuthorizationReported = false
        var requested = false
        var warnedNoDelegate = false
        var loggedMessages: Set<String> = []
        var sourceRunning = false
        /// Bumped by `stopUpdatingLocation()`: events and callbacks of an older generation are dropped.
        var generation = 0
        var pending: [Event] = []
        var drainScheduled = false
        var onSourceEnded: (@Sendable () -> Void)?
        /// The registered regions, by identifier (for the delegate calls).
        var regions: [String: CLRegion] = [:]
        var regionStore: MonitorStore? = MonitorStore()
        var persistedRegionsLoaded = false
        /// When each region's state last changed (kept with it).
        var regionDates: [String: Date] = [:]
        /// Set by `CLMonitor`: region events go here instead of to the delegate.
        var regionHandler: (@Sendable (RegionEvent) -> Void)?
        var lastLocationCache: LastLocationCache? = .user
        /// The cache's entry for this app, read once (nil inside: there was none).
        var cachedLocation: CLLocation??
    }

    private enum Event {
        case locations([CLLocation])
        case failure(CLError)
        case authorization
        case sourceEnded
        case receiver(DeviceEvent)
        case region(RegionEvent)
        case regionFailed(CLRegion?, CLError)
        case regionStarted(CLRegion)
        case regionState(CLRegion, CLRegionState)
        case visit(VisitRecord)
    }

    /// What the engine's actions leave to do once the lock is released.
    private struct Effects {
        var arm: [(LocationEngine.Timer, TimeInterval)] = []
        var cancel: [LocationEngine.Timer] = []
        var diagnostics: [LocationDiagnostic] = []
        var stopSource = false
        var startSource = false
        var drain = false
        var generation = 0
        /// The newest delivered location, for the last-location cache.
        var delivered: CLLocation?
        /// Region events to hand to `regionHandler` (CLMonitor) and to persist.
        var regionEvents: [RegionEvent] = []
        /// Reduced accuracy's state to keep for the next run.
        var reducedAccuracy: ReducedAccuracyState?
    }

    private let state: Locked<State>
    private let queueKey = DispatchSpecificKey<ObjectIdentifier>()
    /// The engine's timers; their handler feeds the engine (a stopped engine ignores them).
    private let timers: EngineTimers

    /// Called on `delegateQueue` after the delegate has heard that the source stopped for good
    /// (a terminal error: a replay ended, gpsd gone without reconnection). `liveUpdates` uses
    /// it to end its sequence instead of waiting forever.
    var onSourceEnded: (@Sendable () -> Void)? {
        get { state.withLock { $0.onSourceEnded } }
        set { state.withLock { $0.onSourceEnded = newValue } }
    }

    private var authorizerObservation: UUID?

    public init(
        source: any LocationSource = CLLocationManager.defaultSource(),
        authorizer: LocationAuthorizer = CLLocationManager.sharedAuthorizer,
        delegateQueue: DispatchQueue? = nil
    ) {
        self.source = source
        self.authorizer = authorizer
        let queue = delegateQueue ?? DispatchQueue(label: "gpslocation.delegate")
        let owner = WeakManager()
        timers = EngineTimers { timer in
            owner.manager?.drive { engine in engine.timerFired(timer, now: Date()) }
        }
        var configuration = LocationEngine.Configuration()
        configuration.regionsRequireAlways = true
        state = Locked(
            State(
                engine: LocationEngine(
                    configuration: configuration, authorization: authorizer.state, isLive: source.isLive,
                    sourceInformation: source.sourceInformation,
                    fuzzer: authorizer.makeFuzzer(live: source.isLive)),
                queue: queue))
        super.init()
        owner.manager = self
        queue.setSpecific(key: queueKey, value: ObjectIdentifier(self))
        authorizerObservation = authorizer.addObserver { [weak self] in self?.authorizationChanged() }
    }

    /// Apple's initializer: the source is `CLLocationManager.defaultSource()` (gpsd on
    /// 127.0.0.1:2947 unless `setDefaultSource` says otherwise), the authorizer is shared.
    public override convenience init() { self.init(source: CLLocationManager.defaultSource()) }

    /// What `CLLocationManager()` and `CLLocationUpdate.liveUpdates()` read from: by default a
    /// new `GPSDLocationSource(sky: false)` each time. Programs (and tests) can point them elsewhere —
    /// another gpsd endpoint, a replay — without changing CoreLocation-style code.
    public static func setDefaultSource(_ factory: @escaping @Sendable () -> any LocationSource) {
        defaultSourceFactory.withLock { $0 = factory }
    }

    public static func defaultSource() -> any LocationSource { defaultSourceFactory.withLock { $0 }() }

    deinit {
        if regionWriter.takePending() { saveRegions() }
        if let authorizerObservation { authorizer.removeObserver(authorizerObservation) }
        if state.withLock({ $0.sourceRunning }) { source.stop() }
    }

    // MARK: Authorization requests

    public func requestWhenInUseAuthorization() { request(always: false) }
    public func requestAlwaysAuthorization() { request(always: true) }

    private func request(always: Bool) {
        state.withLock { $0.requested = true }
        switch authorizer.request(always: always) {
        case .changed:
            authorizationChanged()
        case .unchanged:
            break
        case .noPrompt(let message), .missingUsageDescription(let message):
            state.withLock { $0.engine.authorizationExplained() }
            logOnce(message, code: "authorizationRequest")
            enqueue(.failure(CLError(.promptDeclined, message: message, reason: .authorizationRequest)))
        }
    }

    /// Call after changing `authorizer`'s decision from outside (a settings change): the delegate
    /// hears of it, and delivery follows the new state before the next fix.
    public func authorizationChanged() {
        enqueue(.authorization)
        let current = authorizer.state
        drive { engine in engine.setAuthorization(current, now: Date()) }
    }

    // MARK: Updates

    public func startUpdatingLocation() { start(.continuous) }

    public func stopUpdatingLocation() {
        let (wasRunning, queue, last, cache) = state.withLock { state in
            _ = state.engine.stop()
            if state.engine.isRunning {
                // Monitoring goes on: only the location updates' pending callbacks are dropped.
                state.pending.removeAll { if case .locations = $0 { true } else { false } }
                return (false, state.queue, state.engine.lastDelivered, state.lastLocationCache)
            }
            state.generation += 1
            state.pending.removeAll()
            let wasRunning = state.sourceRunning
            state.sourceRunning = false
            return (wasRunning, state.queue, state.engine.lastDelivered, state.lastLocationCache)
        }
        if wasRunning {
            timers.cancelAll()
        } else {
            timers.cancel(.staleness)
            timers.cancel(.requestLocation)
        }
        if wasRunning { source.stop() }
        // The newest location is kept even when the last timed write was a while before it.
        if wasRunning, let last, let cache { cache.record(last, for: authorizer.appID, force: true) }
        // Wait for a callback already running on the delegate queue, unless we are it.
        if DispatchQueue.getSpecific(key: queueKey) != ObjectIdentifier(self) { queue.sync {} }
    }

    /// One location meeting `desiredAccuracy`; after `requestLocationTimeout`, the best one seen;
    /// with none, `CLError.locationUnknown`. Does nothing while updates are running.
    public func requestLocation() { start(.oneShot) }

    private func start(_ mode: LocationEngine.Mode) {
        guard preflight() else { return }
        drive { engine in engine.start(mode, now: Date()) }
    }

    /// Reports the ways of starting that cannot work and are mistakes of the calling code
    /// (no delegate, never asked for authorization, services off). False: do not start.
    private func preflight() -> Bool {
        let (hasDelegate, wasRequested, warn) = state.withLock { state in
            let hasDelegate = state.delegate.value != nil
            defer { if !hasDelegate { state.warnedNoDelegate = true } }
            return (hasDelegate, state.requested, !hasDelegate && !state.warnedNoDelegate)
        }
        if !hasDelegate && warn {
            logOnce(
                "CLLocationManager: updates were started without a delegate, so locations go nowhere — set `manager.delegate` first",
                code: "noDelegate")
        }
        guard Self.locationServicesEnabled() else {
            enqueue(
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
            state.withLock { $0.engine.authorizationExplained() }
            logOnce(message, code: "authorizationRequest")
            enqueue(.failure(CLError(.promptDeclined, message: message, reason: .authorizationRequest)))
        }
        return true
    }

    // MARK: The async shape, for daemons

    /// Location updates as an `AsyncSequence`, for code that prefers a loop to a delegate
    /// (a daemon's main task): `for try await location in manager.locations() { … }` starts
    /// updates with this manager's settings (distance filter, minimum interval, …) and stops
    /// them when the loop ends or its task is cancelled. While it runs the stream is the
    /// manager's delegate. Errors that do not end updates (gpsd lost and reconnecting, no fix
    /// for a while) go to `diagnosticsHandler`; those that do — denied or restricted, the
    /// source ended for good — end the loop by throwing the `CLError`. Authorization that was
    /// never requested is requested (Always) first, as `requestAlwaysAuthorization()` does.
    public func locations() -> AsyncThrowingStream<CLLocation, any Error> {
        AsyncThrowingStream(bufferingPolicy: .bufferingNewest(max(1, maximumBatch))) { continuation in
            let adapter = StreamDelegate(
                continuation: continuation,
                diagnostics: { [weak self] in
                    self?.diagnosticsHandler ?? Diagnostics.standardError
                })
            delegate = adapter
            onSourceEnded = {
                continuation.finish(
                    throwing: CLError(.locationUnknown, message: "the source ended", reason: .sourceEnded))
            }
            continuation.onTermination = { [weak self] _ in
                withExtendedLifetime(adapter) {}
                self?.stopUpdatingLocation()
            }
            if authorizationStatus == .notDetermined { requestAlwaysAuthorization() }
            startUpdatingLocation()
        }
    }

    // MARK: Region monitoring, visits, significant changes

    /// The largest radius `startMonitoring(for:)` accepts: 100 km (Apple documents no value;
    /// −1 would mean monitoring is unavailable).
    public var maximumRegionMonitoringDistance: CLLocationDistance { 100_000 }

    /// True for `CLCircularRegion` (and its subclasses): the only kind a GNSS receiver can monitor.
    open class func isMonitoringAvailable(for regionClass: AnyClass) -> Bool {
        regionClass is CLCircularRegion.Type
    }

    /// Always available: a receiver's fixes are all it takes.
    open class func significantLocationChangeMonitoringAvailable() -> Bool { true }

    /// The regions this app monitors, including those kept from earlier runs (`regionStore`).
    public var monitoredRegions: Set<CLRegion> {
        loadPersistedRegions()
        return Set(state.withLock { $0.regions.values })
    }

    /// Where monitored regions are kept between runs (default: the user's
    /// `$XDG_STATE_HOME/gpslocation/monitors/APP/regions.json`); nil keeps nothing. Set it before
    /// the delegate: kept regions are monitored again as soon as a delegate is set.
    public var regionStore: MonitorStore? {
        get { state.withLock { $0.regionStore } }
        set { state.withLock { $0.regionStore = newValue } }
    }

    /// Starts monitoring a circular region (replacing a region with its identifier), fed by the
    /// same gated locations as updates (see `RegionMonitorStage` for the boundary rule: a
    /// location counts when its whole circle of uncertainty is inside or outside, a crossing
    /// needs 4 s and three locations, 60 s without a location makes the state unknown). The
    /// delegate hears `didStartMonitoringFor`, then `didDetermineState` as soon as the state is
    /// known, then `didEnterRegion`/`didExitRegion` (each with `didDetermineState`). As on Apple
    /// platforms it needs Always authorization with full accuracy: otherwise
    /// `monitoringDidFailFor` with `regionMonitoringDenied` says why, and the region stays
    /// registered and is monitored once that is granted.
    open func startMonitoring(for region: CLRegion) {
        loadPersistedRegions()
        guard let circle = region as? CLCircularRegion else {
            enqueue(
                .regionFailed(
                    region,
                    CLError(
                        .regionMonitoringFailure,
                        message: "only CLCircularRegion can be monitored (\(type(of: region)) cannot)",
                        reason: .invalidRegion)))
            return
        }
        if let problem = circle.problem(maximumDistance: maximumRegionMonitoringDistance) {
            enqueue(.regionFailed(region, CLError(.regionMonitoringFailure, message: problem, reason: .invalidRegion)))
            return
        }
        guard preflight() else { return }
        state.withLock { $0.regions[circle.identifier] = circle }
        enqueue(.regionStarted(circle))
        drive { engine in engine.startMonitoring(circle.geofence, now: Date()) }
        saveRegions()
    }

    open func stopMonitoring(for region: CLRegion) {
        loadPersistedRegions()
        let removed = state.withLock { $0.regions.removeValue(forKey: region.identifier) != nil }
        guard removed else { return }
        drive { engine in engine.stopMonitoring(region.identifier) }
        saveRegions()
    }

    /// The region's current state, asynchronously through `didDetermineState` (unknown when it
    /// is not known yet, or the region is not monitored).
    open func requestState(for region: CLRegion) {
        loadPersistedRegions()
        let known = state.withLock { state -> (CLRegion, CLRegionState) in
            let registered = state.regions[region.identifier] ?? region
            return (registered, state.engine.regionState(region.identifier).map(CLRegionState.init) ?? .unknown)
        }
        enqueue(.regionState(known.0, known.1))
    }

    /// Visits (`didVisit`): a stop of at least 3 minutes within 50 m is an arrival (reported
    /// then, dated with the first location of the stop), leaving it a departure (dated with the
    /// last location there); see `VisitStage` for the exact rule. A tunnel or outage is not a
    /// visit. Works with When In Use (while in use) and Always; with reduced accuracy visits are
    /// as coarse, and as late, as the reduced locations.
    open func startMonitoringVisits() {
        guard preflight() else { return }
        drive { engine in engine.startVisits() }
    }

    open func stopMonitoringVisits() { drive { engine in engine.stopVisits() } }

    /// The significant-change service: the first location at once, then one whenever the device
    /// is at least 500 m from the last one and at least 5 minutes after it (Apple's documented
    /// behaviour), through `didUpdateLocations`, unaffected by `desiredAccuracy` and
    /// `distanceFilter`. While standard updates run they already deliver every location.
    open func startMonitoringSignificantLocationChanges() {
        guard preflight() else { return }
        drive { engine in engine.startSignificantChanges() }
    }

    open func stopMonitoringSignificantLocationChanges() { drive { engine in engine.stopSignificantChanges() } }

    /// `CLMonitor` drives region monitoring through its own manager: When In Use is enough,
    /// nothing is persisted here, and region events go to `handler` instead of the delegate.
    func adoptForMonitor(handler: @escaping @Sendable (RegionEvent) -> Void) {
        state.withLock {
            $0.regionHandler = handler
            $0.regionStore = nil
            $0.persistedRegionsLoaded = true
            $0.engine.configuration.regionsRequireAlways = false
        }
    }

    /// `CLMonitor`'s conditions.
    func monitor(_ fence: Geofence, assuming: RegionPresence) {
        _ = preflight()
        drive { engine in engine.startMonitoring(fence, assuming: assuming, now: Date()) }
    }

    func unmonitor(_ identifier: String) { drive { engine in engine.stopMonitoring(identifier) } }

    /// The regions kept from earlier runs are registered once, with their last known states.
    private func loadPersistedRegions() {
        let (store, first) = state.withLock { state in
            defer { state.persistedRegionsLoaded = true }
            return (state.regionStore, !state.persistedRegionsLoaded)
        }
        guard first, let store else { return }
        let conditions: [MonitorStore.Condition]
        do {
            conditions = try store.conditions(monitor: MonitorStore.legacyRegions, app: authorizer.appID)
        } catch {
            logOnce(error.description, code: "regionStore")
            enqueue(
                .regionFailed(nil, CLError(.regionMonitoringFailure, message: error.description, reason: .persistence)))
            return
        }
        state.withLock { state in
            for condition in conditions {
                let region = CLCircularRegion(
                    center: CLLocationCoordinate2D(latitude: condition.latitude, longitude: condition.longitude),
                    radius: condition.radius, identifier: condition.identifier)
                region.notifyOnEntry = condition.notifyOnEntry
                region.notifyOnExit = condition.notifyOnExit
                state.regions[condition.identifier] = region
            }
        }
    }

    /// Kept regions resume when the first delegate is set, as a relaunched app's do on Apple platforms.
    private func resumePersistedRegions() {
        loadPersistedRegions()
        guard let store = regionStore else { return }
        let stored = (try? store.conditions(monitor: MonitorStore.legacyRegions, app: authorizer.appID)) ?? []
        guard !stored.isEmpty else { return }
        guard preflight() else { return }
        drive { engine in
            var actions: [LocationEngine.Action] = []
            for condition in stored where engine.region(condition.identifier) == nil {
                let fence = Geofence(
                    identifier: condition.identifier, latitude: condition.latitude, longitude: condition.longitude,
                    radius: condition.radius)
                actions += engine.startMonitoring(
                    fence, assuming: RegionPresence(rawValue: condition.state) ?? .unknown, now: Date())
            }
            return actions
        }
    }

    private let regionWriter = CoalescedWriter()

    /// Writes the registered regions and their states.
    private func saveRegions() {
        let (store, conditions) = state.withLock { state -> (MonitorStore?, [MonitorStore.Condition]) in
            guard let store = state.regionStore else { return (nil, []) }
            let dates = state.regionDates
            let conditions = state.regions.values.compactMap { region -> MonitorStore.Condition? in
                guard let circle = region as? CLCircularRegion else { return nil }
                return MonitorStore.Condition(
                    identifier: circle.identifier, latitude: circle.center.latitude,
                    longitude: circle.center.longitude, radius: circle.radius, notifyOnEntry: circle.notifyOnEntry,
                    notifyOnExit: circle.notifyOnExit,
                    state: (state.engine.regionState(circle.identifier) ?? .unknown).rawValue,
                    date: dates[circle.identifier])
            }.sorted { $0.identifier < $1.identifier }
            return (store, conditions)
        }
        guard let store else { return }
        do {
            try store.save(conditions, monitor: MonitorStore.legacyRegions, app: authorizer.appID)
        } catch {
            logOnce(error.description, code: "regionStore")
        }
    }

    private func regionEventsHappened(_ events: [RegionEvent]) {
        let handler = state.withLock { $0.regionHandler }
        if let handler {
            for event in events { handler(event) }
        } else if events.contains(where: { $0.limitation == nil }) {
            state.withLock { state in
                for event in events where event.limitation == nil {
                    state.regionDates[event.identifier] = event.timestamp
                }
            }
            // At most once a second: thousands of regions make a large file.
            regionWriter.write { [weak self] in self?.saveRegions() }
        }
    }

    private func deliverRegionEvent(_ event: RegionEvent, to delegate: (any CLLocationManagerDelegate)?) {
        guard let delegate, let region = state.withLock({ $0.regions[event.identifier] }) else { return }
        if let limitation = event.limitation {
            let app = authorizer.appID
            let message: String
            let reason: CLError.Reason
            switch limitation {
            case .accuracyLimited:
                message =
                    "region monitoring needs full accuracy and \(app) has approximate location: \(region.identifier) is "
                    + "kept and its state stays unknown — `gpsloc auth grant \(app) --always` grants precise Always"
                reason = .reducedAccuracy
            case .alwaysRequired:
                message =
                    "region monitoring needs Always authorization (as on Apple platforms) and \(app) is authorized "
                    + "When In Use: \(region.identifier) is kept and monitored once `gpsloc auth grant \(app) --always`"
                reason = .alwaysRequired
            case .notAuthorized:
                message =
                    "\(app) may not receive locations (\(authorizer.status)): \(region.identifier) is kept and monitored "
                    + "once Always is granted — `gpsloc auth grant \(app) --always`"
                reason = .notAuthorized
            }
            delegate.locationManager(
                self, monitoringDidFailFor: region,
                withError: CLError(.regionMonitoringDenied, message: message, reason: reason))
            return
        }
        switch event.kind {
        case .enter where region.notifyOnEntry: delegate.locationManager(self, didEnterRegion: region)
        case .exit where region.notifyOnExit: delegate.locationManager(self, didExitRegion: region)
        default: break
        }
        delegate.locationManager(self, didDetermineState: CLRegionState(event.state), for: region)
    }

    // MARK: Driving the engine

    /// Runs `step` on the engine under the lock (dropped when `generation` is given and stale),
    /// turns its actions into pending callbacks and effects, and performs the effects outside.
    fileprivate func drive(generation expected: Int? = nil, _ step: (inout LocationEngine) -> [LocationEngine.Action]) {
        let effects = state.withLock { state -> Effects? in
            if let expected, expected != state.generation { return nil }
            let actions = step(&state.engine)
            var effects = Effects(generation: state.generation)
            for action in actions {
                switch action {
                case .deliver(let location):
                    append(.locations([location]), to: &state)
                    effects.delivered = location
                case .fail(let error): append(.failure(error), to: &state)
                case .receiver(let device): append(.receiver(device), to: &state)
                case .sourceEnded: append(.sourceEnded, to: &state)
                case .region(let event):
                    effects.regionEvents.append(event)
                    if state.regionHandler == nil { append(.region(event), to: &state) }
                case .visit(let record): append(.visit(record), to: &state)
                case .reducedAccuracyState(let kept): effects.reducedAccuracy = kept
                case .sky: break
                case .diagnose(let code, let message):
                    effects.diagnostics.append(LocationDiagnostic(code: code, message: message))
                case .arm(let timer, let seconds): effects.arm.append((timer, seconds))
                case .cancel(let timer): effects.cancel.append(timer)
                case .stopSource:
                    if state.sourceRunning {
                        state.sourceRunning = false
                        effects.stopSource = true
                    }
                }
            }
            if state.engine.isRunning && !state.sourceRunning && !effects.stopSource {
                state.sourceRunning = true
                effects.startSource = true
            }
            effects.drain = !state.pending.isEmpty
            return effects
        }
        guard let effects else { return }
        perform(effects)
    }

    private func perform(_ effects: Effects) {
        for timer in effects.cancel { timers.cancel(timer) }
        for (timer, seconds) in effects.arm { timers.arm(timer, after: seconds) }
        if !effects.diagnostics.isEmpty {
            let handler = state.withLock { $0.diagnosticsHandler }
            for diagnostic in effects.diagnostics { handler(diagnostic) }
        }
        if effects.stopSource { source.stop() }
        if effects.startSource {
            let generation = effects.generation
            source.start { [weak self] event in self?.sourceEvent(event, generation: generation) }
        }
        if !effects.regionEvents.isEmpty { regionEventsHappened(effects.regionEvents) }
        if let kept = effects.reducedAccuracy, let store = authorizer.reducedAccuracyStore {
            if !store.save(kept, for: authorizer.appID) {
                logOnce(
                    "reduced accuracy's state could not be kept in \(store.directory.path) (not a private folder of "
                        + "yours?) — a restart of \(authorizer.appID) starts a new offset", code: "reducedAccuracyStore"
                )
            }
        }
        if let location = effects.delivered, let cache = state.withLock({ $0.lastLocationCache }) {
            cache.record(location, for: authorizer.appID)
        }
        if effects.drain { scheduleDrain() }
    }

    /// Source events arrive on the source's own queue.
    private func sourceEvent(_ event: LocationSourceEvent, generation: Int) {
        let uptime = source.isLive ? LocationEngine.uptime() : nil
        drive(generation: generation) { engine in engine.handle(event, now: Date(), uptime: uptime) }
    }

    // MARK: Delivery

    private func append(_ event: Event, to state: inout State) {
        if case .locations(let new) = event, case .locations(let old)? = state.pending.last {
            var merged = old + new
            if merged.count > state.maximumBatch { merged.removeFirst(merged.count - state.maximumBatch) }
            state.pending[state.pending.count - 1] = .locations(merged)
        } else {
            state.pending.append(event)
        }
    }

    private func enqueue(_ event: Event) {
        state.withLock { append(event, to: &$0) }
        scheduleDrain()
    }

    private func scheduleDrain() {
        let queue = state.withLock { state -> DispatchQueue? in
            guard !state.drainScheduled, !state.pending.isEmpty else { return nil }
            state.drainScheduled = true
            return state.queue
        }
        queue?.async { [weak self] in self?.drain() }
    }

    /// Delivers what is pending. `stopUpdatingLocation()` empties `pending` and bumps
    /// `generation` under the lock, so whatever is taken here belongs to the current
    /// generation; a stop that happens while the batch is being delivered ends it.
    private func drain() {
        while true {
            let (events, reference, taken, onEnded) = state.withLock { state in
                guard !state.pending.isEmpty else {
                    state.drainScheduled = false
                    return ([Event](), DelegateReference(), state.generation, state.onSourceEnded)
                }
                defer { state.pending.removeAll() }
                return (state.pending, state.delegate, state.generation, state.onSourceEnded)
            }
            if events.isEmpty { return }
            let delegate = reference.value
            for event in events {
                if state.withLock({ taken != $0.generation }) { break }
                switch event {
                case .locations(let locations): delegate?.locationManager(self, didUpdateLocations: locations)
                case .failure(let error): delegate?.locationManager(self, didFailWithError: error)
                case .authorization:
                    delegate?.locationManagerDidChangeAuthorization(self)
                    delegate?.locationManager(self, didChangeAuthorization: authorizer.status)
                case .sourceEnded:
                    onEnded?()
                case .receiver(let event):
                    delegate?.locationManager(self, didChangeReceiver: event)
                case .region(let event):
                    deliverRegionEvent(event, to: delegate)
                case .regionFailed(let region, let error):
                    delegate?.locationManager(self, monitoringDidFailFor: region, withError: error)
                case .regionStarted(let region):
                    delegate?.locationManager(self, didStartMonitoringFor: region)
                case .regionState(let region, let regionState):
                    delegate?.locationManager(self, didDetermineState: regionState, for: region)
                case .visit(let record):
                    delegate?.locationManager(self, didVisit: CLVisit(record))
                }
            }
        }
    }

    /// Passes `message` to the diagnostics handler the first time this manager meets it.
    private func logOnce(_ message: String, code: String) {
        let (first, handler) = state.withLock { ($0.loggedMessages.insert(message).inserted, $0.diagnosticsHandler) }
        if first { handler(LocationDiagnostic(code: code, message: message)) }
    }
}

/// `CLLocationManager.locations()`'s delegate: locations into the stream, errors that end
/// updates end it, the others are diagnostics.
private final class StreamDelegate: CLLocationManagerDelegate, Sendable {
    let continuation: AsyncThrowingStream<CLLocation, any Error>.Continuation
    let diagnostics: @Sendable () -> DiagnosticsHandler

    init(
        continuation: AsyncThrowingStream<CLLocation, any Error>.Continuation,
        diagnostics: @escaping @Sendable () -> DiagnosticsHandler
    ) {
        self.continuation = continuation
        self.diagnostics = diagnostics
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        for location in locations { continuation.yield(location) }
    }

    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        guard let error = error as? CLError else { return }
        switch error.reason {
        case .notAuthorized?, .restricted?, .sourceEnded?:
            continuation.finish(throwing: error)
        default:
            diagnostics()(
                LocationDiagnostic(code: error.reason?.name ?? error.code.description, message: error.message))
        }
    }
}

/// The manager, weakly, for its timers' handler (made before the manager exists).
private final class WeakManager: @unchecked Sendable {
    // @unchecked Sendable: set once in the manager's init, before any timer can fire.
    weak var manager: CLLocationManager?
}
