import Foundation
import GNSSCore

/// The manager's registered regions and where they are kept.
struct RegionRegistry {
    /// By identifier (for the delegate calls).
    var regions: [String: CLRegion] = [:]
    var store: MonitorStore? = MonitorStore()
    /// Keeps them in `store` (made when first needed).
    var keeper: RegionKeeper?
    /// The kept regions have been read (once).
    var loaded = false
    /// When each region's state last changed (kept with it).
    var dates: [String: Date] = [:]
    /// Set by `CLMonitor`: region events go here instead of to the delegate.
    var handler: (@Sendable (RegionEvent) -> Void)?
}

/// Region monitoring, visits and significant changes: `CLLocationManager`'s monitoring API, and
/// the regions it keeps between runs.
extension CLLocationManager {
    /// The largest radius `startMonitoring(for:)` accepts: 100 km (Apple documents no value;
    /// −1 would mean monitoring is unavailable).
    public var maximumRegionMonitoringDistance: CLLocationDistance { 100_000 }

    /// True for `CLCircularRegion` (and its subclasses): the only kind a GNSS receiver can monitor.
    public class func isMonitoringAvailable(for regionClass: AnyClass) -> Bool {
        regionClass is CLCircularRegion.Type
    }

    /// Always available: a receiver's fixes are all it takes.
    public class func significantLocationChangeMonitoringAvailable() -> Bool { true }

    /// The regions this app monitors, including those kept from earlier runs (`regionStore`).
    public var monitoredRegions: Set<CLRegion> {
        loadPersistedRegions()
        return Set(state.withLock { $0.regions.regions.values })
    }

    /// Where monitored regions are kept between runs (default: the user's
    /// `$XDG_STATE_HOME/gpslocation/monitors/APP/regions.json`); nil keeps nothing. Set it before
    /// the delegate: kept regions are monitored again as soon as a delegate is set.
    public var regionStore: MonitorStore? {
        get { state.withLock { $0.regions.store } }
        set {
            state.withLock {
                $0.regions.store = newValue
                $0.regions.keeper = nil
            }
        }
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
    public func startMonitoring(for region: CLRegion) {
        loadPersistedRegions()
        guard let circle = region as? CLCircularRegion else {
            runner.enqueue(
                .adapter(
                    ManagerEvent.regionFailed(
                        region,
                        CLError(
                            .regionMonitoringFailure,
                            message: "only CLCircularRegion can be monitored (\(type(of: region)) cannot)",
                            reason: .invalidRegion))))
            return
        }
        if let problem = circle.problem(maximumDistance: maximumRegionMonitoringDistance) {
            runner.enqueue(
                .adapter(
                    ManagerEvent.regionFailed(
                        region, CLError(.regionMonitoringFailure, message: problem, reason: .invalidRegion))))
            return
        }
        guard preflight() else { return }
        state.withLock { $0.regions.regions[circle.identifier] = circle }
        runner.enqueue(.adapter(ManagerEvent.regionStarted(circle)))
        runner.drive { engine in engine.startMonitoring(circle.geofence, now: runner.clock.now) }
        saveRegions()
    }

    /// Stops monitoring `region` (by identifier) and forgets it, also across restarts.
    public func stopMonitoring(for region: CLRegion) {
        loadPersistedRegions()
        let removed = state.withLock { $0.regions.regions.removeValue(forKey: region.identifier) != nil }
        guard removed else { return }
        runner.drive { engine in engine.stopMonitoring(region.identifier) }
        saveRegions()
    }

    /// The region's current state, asynchronously through `didDetermineState` (unknown when it
    /// is not known yet, or the region is not monitored).
    public func requestState(for region: CLRegion) {
        loadPersistedRegions()
        let known = state.withLock { state -> CLRegion in
            state.regions.regions[region.identifier] ?? region
        }
        let regionState = runner.withEngine { $0.regionState(region.identifier) }.map(CLRegionState.init) ?? .unknown
        runner.enqueue(.adapter(ManagerEvent.regionState(known, regionState)))
    }

    /// Visits (`didVisit`): a stop of at least 3 minutes within 50 m is an arrival (reported
    /// then, dated with the first location of the stop), leaving it a departure (dated with the
    /// last location there); see `VisitStage` for the exact rule. A tunnel or outage is not a
    /// visit. Works with When In Use (while in use) and Always; with reduced accuracy visits are
    /// as coarse, and as late, as the reduced locations.
    public func startMonitoringVisits() {
        guard preflight() else { return }
        runner.drive { engine in engine.startVisits() }
    }

    /// Stops visit monitoring.
    public func stopMonitoringVisits() { runner.drive { engine in engine.stopVisits() } }

    /// The significant-change service: the first location at once, then one whenever the device
    /// is at least 500 m from the last one and at least 5 minutes after it (Apple's documented
    /// behaviour), through `didUpdateLocations`, unaffected by `desiredAccuracy` and
    /// `distanceFilter`. While standard updates run they already deliver every location.
    public func startMonitoringSignificantLocationChanges() {
        guard preflight() else { return }
        runner.drive { engine in engine.startSignificantChanges() }
    }

    /// Stops the significant-change service.
    public func stopMonitoringSignificantLocationChanges() {
        runner.drive { engine in engine.stopSignificantChanges() }
    }

    /// `CLMonitor` drives region monitoring through its own manager: When In Use is enough,
    /// nothing is persisted here, and region events go to `handler` instead of the delegate.
    func adoptForMonitor(handler: @escaping @Sendable (RegionEvent) -> Void) {
        state.withLock {
            $0.regions.handler = handler
            $0.regions.store = nil
            $0.regions.keeper = nil
            $0.regions.loaded = true
        }
        runner.withEngine { $0.configuration.regionsRequireAlways = false }
    }

    /// `CLMonitor`'s conditions.
    func monitor(_ fence: Geofence, assuming: RegionPresence) { monitor(contentsOf: [(fence, assuming)]) }

    /// Many at once: one preflight (it reads the policy file) and one engine step.
    func monitor(contentsOf fences: [(fence: Geofence, assuming: RegionPresence)]) {
        guard !fences.isEmpty else { return }
        _ = preflight()
        let now = runner.clock.now
        runner.drive { engine in
            fences.flatMap { engine.startMonitoring($0.fence, assuming: $0.assuming, now: now) }
        }
    }

    func unmonitor(_ identifier: String) { runner.drive { engine in engine.stopMonitoring(identifier) } }

    /// Every region at once, in one engine step (a monitor of 100,000 circles going away).
    func unmonitorAll() { runner.drive { engine in engine.stopMonitoringAllRegions() } }

    /// Where the legacy regions are kept (`RegionKeeper`, the one place), nil: nowhere.
    func regionKeeper() -> RegionKeeper? {
        let app = authorizer.appID
        let this = WeakReference(self)
        return state.withLock { state in
            guard let store = state.regions.store else { return nil }
            if let keeper = state.regions.keeper { return keeper }
            let keeper = RegionKeeper(store: store, monitor: MonitorStore.legacyRegions, app: app) { problem in
                this.value?.logOnce(problem.description, code: "regionStore")
            }
            state.regions.keeper = keeper
            return keeper
        }
    }

    /// The regions kept from earlier runs are registered once, with their last known states.
    func loadPersistedRegions() {
        let first = state.withLock { state in
            defer { state.regions.loaded = true }
            return !state.regions.loaded
        }
        guard first, let keeper = regionKeeper() else { return }
        let kept: [RegionKeeper.Kept]
        do {
            kept = try keeper.load()
        } catch {
            logOnce(error.description, code: "regionStore")
            runner.enqueue(
                .adapter(
                    ManagerEvent.regionFailed(
                        nil, CLError(.regionMonitoringFailure, message: error.description, reason: .persistence))))
            return
        }
        state.withLock { state in
            for region in kept {
                let circle = CLCircularRegion(
                    center: CLLocationCoordinate2D(latitude: region.fence.latitude, longitude: region.fence.longitude),
                    radius: region.fence.radius, identifier: region.fence.identifier)
                circle.notifyOnEntry = region.notifyOnEntry
                circle.notifyOnExit = region.notifyOnExit
                state.regions.regions[region.fence.identifier] = circle
            }
        }
    }

    /// Kept regions resume when the first delegate is set, as a relaunched app's do on Apple platforms.
    func resumePersistedRegions() {
        loadPersistedRegions()
        guard let keeper = regionKeeper() else { return }
        let kept = (try? keeper.load()) ?? []
        guard !kept.isEmpty else { return }
        guard preflight() else { return }
        runner.drive { engine in
            var actions: [LocationEngine.Action] = []
            for region in kept where engine.region(region.fence.identifier) == nil {
                actions += engine.startMonitoring(region.fence, assuming: region.presence, now: runner.clock.now)
            }
            return actions
        }
    }

    /// The registered regions and their states, as kept.
    func keptRegions() -> [RegionKeeper.Kept] {
        let regions = state.withLock { $0.regions }
        return runner.withEngine { engine in
            regions.regions.values.compactMap { region -> RegionKeeper.Kept? in
                guard let circle = region as? CLCircularRegion else { return nil }
                return RegionKeeper.Kept(
                    fence: Geofence(
                        identifier: circle.identifier, latitude: circle.center.latitude,
                        longitude: circle.center.longitude, radius: circle.radius),
                    presence: engine.regionState(circle.identifier) ?? .unknown,
                    date: regions.dates[circle.identifier], notifyOnEntry: circle.notifyOnEntry,
                    notifyOnExit: circle.notifyOnExit)
            }
        }
    }

    /// Writes the registered regions and their states.
    func saveRegions() { regionKeeper()?.save(keptRegions()) }

    /// A region event from the runner: to `CLMonitor` when it drives this manager; otherwise kept
    /// (its date, written at most once a second) and told to the delegate.
    func regionEventHappened(_ event: RegionEvent, delegate: (any CLLocationManagerDelegate)?) {
        if let handler = state.withLock({ $0.regions.handler }) { return handler(event) }
        if event.limitation == nil {
            state.withLock { $0.regions.dates[event.identifier] = event.timestamp }
            // At most once a second: thousands of regions make a large file.
            let this = WeakReference(self)
            regionKeeper()?.saveSoon { this.value?.keptRegions() }
        }
        guard let delegate, let region = state.withLock({ $0.regions.regions[event.identifier] }) else { return }
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
}
