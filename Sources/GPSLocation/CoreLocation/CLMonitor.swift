import Foundation
import GNSSCore

/// A condition `CLMonitor` can watch (Apple's `CLCondition`). GPSLocation monitors
/// `CLMonitor.CircularGeographicCondition`; others are reported `conditionUnsupported`.
/// `Codable`, as Apple's is: an app may keep its conditions itself.
public protocol CLCondition: Codable, Sendable {}

/// Apple's `CLMonitor` (iOS 17): named sets of conditions whose state changes arrive on
/// `events`. On Linux a monitor runs on the same `LocationEngine` as `CLLocationManager` (its
/// region stage — see `RegionMonitorStage` for the boundary rule), fed by the gated locations of
/// its source. Conditions and their last events persist per app and monitor name
/// (`MonitorStore`, `$XDG_STATE_HOME/gpslocation/monitors/APP/`), so a daemon restarted by
/// systemd gets its geofences back, and their states, by opening the monitor again.
///
/// Authorization: Always, or When In Use while in use. With reduced accuracy no condition is
/// evaluated: each gets one event with state `unknown` and `accuracyLimited` (a crossing would
/// reveal a finer position than the app may have). Without authorization, one `unknown` event
/// per condition with `authorizationDenied`/`authorizationRestricted`/`insufficientlyInUse`.
///
/// ```swift
/// let monitor = await CLMonitor("depots")
/// let depot = CLLocationCoordinate2D(latitude: 51.4545, longitude: -2.5879)
/// await monitor.add(CLMonitor.CircularGeographicCondition(center: depot, radius: 150), identifier: "depot")
/// for try await event in await monitor.events { print(event.identifier, event.state, event.date) }
/// ```
public actor CLMonitor {
    /// Apple's name for a condition type.
    public typealias Condition = CLCondition

    /// Apple's circular geographic condition.
    public struct CircularGeographicCondition: CLCondition, Equatable {
        /// The circle's centre.
        public let center: CLLocationCoordinate2D
        /// The circle's radius in metres (more than 0, at most 100 km).
        public let radius: CLLocationDistance
        /// A circle; checked when it is added (an invalid one is refused with a diagnostic).
        public init(center: CLLocationCoordinate2D, radius: CLLocationDistance) {
            self.center = center
            self.radius = radius
        }

        /// The same centre and radius.
        public static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.center.isSame(as: rhs.center) && lhs.radius == rhs.radius
        }

        private enum Keys: String, CodingKey { case latitude, longitude, radius }

        /// The centre's latitude and longitude and the radius, by name.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(center.latitude, forKey: .latitude)
            try container.encode(center.longitude, forKey: .longitude)
            try container.encode(radius, forKey: .radius)
        }

        /// What `encode(to:)` wrote.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Keys.self)
            self.init(
                center: CLLocationCoordinate2D(
                    latitude: try container.decode(Double.self, forKey: .latitude),
                    longitude: try container.decode(Double.self, forKey: .longitude)),
                radius: try container.decode(Double.self, forKey: .radius))
        }
    }

    /// One change of a condition's state, with Apple's flags saying what limits it.
    public struct Event: Sendable {
        /// A condition's state (Apple's raw values).
        public enum State: Int, Sendable, CustomStringConvertible {
            /// Not known yet: no location decides it, or reduced accuracy cannot.
            case unknown = 0
            /// Inside the circle.
            case satisfied = 1
            /// Outside the circle.
            case unsatisfied = 2
            /// Removed from the monitor.
            case unmonitored = 3

            /// The state's name.
            public var description: String {
                switch self {
                case .unknown: "unknown"
                case .satisfied: "satisfied"
                case .unsatisfied: "unsatisfied"
                case .unmonitored: "unmonitored"
                }
            }
        }

        /// The condition's identifier.
        public let identifier: String
        /// The new state.
        public let state: State
        /// The time of the location that decided it.
        public let date: Date
        /// Always nil: no condition is refined on Linux.
        public let refinement: (any CLCondition)?
        /// The app has reduced accuracy: states stay unknown rather than reveal a crossing.
        public let accuracyLimited: Bool
        /// The user denied location to this app.
        public let authorizationDenied: Bool
        /// Location services are off for the machine.
        public let authorizationDeniedGlobally: Bool
        /// The administrator's policy restricts this app.
        public let authorizationRestricted: Bool
        /// When In Use, and the app is not in use (no terminal): monitoring needs Always.
        public let insufficientlyInUse: Bool
        /// The condition cannot be monitored here (beacons).
        public let conditionUnsupported: Bool
        /// Always false: no condition limit on Linux.
        public let conditionLimitExceeded: Bool
        /// The monitor's conditions could not be saved (they last only this run).
        public let persistenceUnavailable: Bool
        /// Always false: no service session is required on Linux.
        public let serviceSessionRequired: Bool
        /// Not determined yet: the app has not been asked, or the answer is pending.
        public let authorizationRequestInProgress: Bool

        init(
            identifier: String, state: State, date: Date, accuracyLimited: Bool = false,
            flags: AuthorizationFlags = AuthorizationFlags(), conditionUnsupported: Bool = false,
            persistenceUnavailable: Bool = false
        ) {
            self.identifier = identifier
            self.state = state
            self.date = date
            refinement = nil
            self.accuracyLimited = accuracyLimited
            authorizationDenied = flags.denied
            authorizationDeniedGlobally = flags.deniedGlobally
            authorizationRestricted = flags.restricted
            insufficientlyInUse = flags.insufficientlyInUse
            self.conditionUnsupported = conditionUnsupported
            conditionLimitExceeded = false
            self.persistenceUnavailable = persistenceUnavailable
            serviceSessionRequired = false
            authorizationRequestInProgress = flags.requestInProgress
        }
    }

    /// A monitored condition and the last event about it.
    public struct Record: Sendable {
        /// The condition.
        public let condition: any CLCondition
        /// Its last event (state `.unknown` until a location decides it).
        public let lastEvent: Event
    }

    /// The monitor's events, oldest first. `for try await event in await monitor.events`.
    public struct Events: AsyncSequence, Sendable {
        /// An event.
        public typealias Element = Event
        let stream: AsyncStream<Event>

        /// Takes one event at a time.
        public struct AsyncIterator: AsyncIteratorProtocol {
            var base: AsyncStream<Event>.AsyncIterator
            /// The next event; nil once the monitor is gone.
            public mutating func next() async throws -> Event? { await base.next() }
        }

        /// An iterator over the events from now on.
        public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }
    }

    /// The monitor's name: its conditions are kept under it.
    public let name: String
    /// The monitor's own manager (Sendable through its reference: its state is behind locks).
    private let managerReference: ManagerReference
    private nonisolated var manager: CLLocationManager { managerReference.value }
    /// Where the conditions are kept (`RegionKeeper`, the one place); nil: nowhere.
    private let keeper: RegionKeeper?
    /// Behind a lock, not the actor: region events arrive from the engine's driver, in order.
    private let records = Locked<[String: Record]>([:])
    private let stream: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation

    /// Apple's initializer: the default source and the shared authorizer, kept in the user's
    /// monitor store. Conditions stored under `name` are monitored again at once.
    public init(_ name: String) async {
        await self.init(name, source: CLLocationManager.defaultSource())
    }

    /// A monitor over `source`, authorized by `authorizer`, kept in `store` (nil: nothing kept).
    public init(
        _ name: String, source: any LocationSource, authorizer: LocationAuthorizer = CLLocationManager.sharedAuthorizer,
        store: MonitorStore? = MonitorStore()
    ) async {
        self.name = name
        (stream, continuation) = AsyncStream.makeStream(of: Event.self)
        let managerReference = ManagerReference(
            value: CLLocationManager(
                source: source, authorizer: authorizer, delegateQueue: DispatchQueue(label: "gpslocation.monitor")))
        self.managerReference = managerReference
        keeper = store.map { store in
            RegionKeeper(store: store, monitor: name, app: authorizer.appID) { problem in
                managerReference.value.diagnosticsHandler(
                    LocationDiagnostic(
                        code: "monitorStore",
                        message: "CLMonitor \(name): \(problem) — conditions are monitored but not kept"))
            }
        }
        manager.lastLocationCache = nil
        let forward = MonitorReference()
        manager.adoptForMonitor { event in forward.monitor?.handle(event) }
        forward.monitor = self
        manager.delegate = problems
        problems.name = name
        problems.handler = manager.diagnosticsHandler
        restore()
    }

    /// Forwards the manager's errors (gpsd down, no fix, not authorized) to the diagnostics
    /// handler, so a monitor that gets no locations says why.
    private let problems = MonitorProblems()

    /// Where notes and errors go (default: one line on stderr).
    nonisolated public var diagnosticsHandler: DiagnosticsHandler {
        get { manager.diagnosticsHandler }
        set {
            manager.diagnosticsHandler = newValue
            problems.handler = newValue
        }
    }

    deinit {
        if let keeper, keeper.takePending() { save() }
        continuation.finish()
        // The manager is this monitor's own: all its regions go at once.
        manager.unmonitorAll()
    }

    /// Every event from now on, oldest first.
    public var events: Events { Events(stream: stream) }

    /// The monitored conditions' identifiers, sorted.
    public var identifiers: [String] { records.withLock { $0.keys.sorted() } }

    /// The condition monitored as `identifier` and its last event; nil when none.
    public func record(for identifier: String) -> Record? { records.withLock { $0[identifier] } }

    /// Monitors `condition` as `identifier` (replacing one with that identifier), starting from
    /// `assuming`: an event comes when the state is found to differ. Saved at once.
    public func add(_ condition: some CLCondition, identifier: String, assuming state: Event.State = .unknown) {
        guard let circle = validated(condition, identifier: identifier) else { return }
        commit([(identifier, circle, state)])
    }

    /// Adds many circles at once (a GPSLocation addition): the same as `add` for each, with one
    /// engine step and one save at the end — adding N conditions one by one saves N times (each
    /// time the whole set), so a daemon loading 100,000 circles would write for minutes. Each
    /// starts from the state last seen for its identifier (`keepingLastState`, e.g. the one
    /// restored from the previous run) or unknown. Checks for cancellation while it checks the
    /// conditions (a SIGTERM while loading ends the load at once): then nothing is recorded,
    /// monitored or saved.
    public func add(
        contentsOf conditions: [(identifier: String, condition: CircularGeographicCondition)],
        keepingLastState: Bool = true
    ) throws(CancellationError) {
        var accepted: [(identifier: String, circle: CircularGeographicCondition, state: Event.State)] = []
        accepted.reserveCapacity(conditions.count)
        for (index, entry) in conditions.enumerated() {
            if index % 1024 == 0 && Task.isCancelled { throw CancellationError() }
            guard let circle = validated(entry.condition, identifier: entry.identifier) else { continue }
            let state =
                keepingLastState ? records.withLock { $0[entry.identifier]?.lastEvent.state } ?? .unknown : .unknown
            accepted.append((entry.identifier, circle, state))
        }
        commit(accepted)
    }

    /// The circle when `condition` can be monitored; otherwise nil, and the app is told why.
    private func validated(_ condition: some CLCondition, identifier: String) -> CircularGeographicCondition? {
        let now = Date()
        guard let circle = condition as? CircularGeographicCondition else {
            emit(Event(identifier: identifier, state: .unknown, date: now, conditionUnsupported: true), condition)
            return nil
        }
        let region = CLCircularRegion(center: circle.center, radius: circle.radius, identifier: identifier)
        if let problem = region.problem(maximumDistance: manager.maximumRegionMonitoringDistance) {
            diagnosticsHandler(LocationDiagnostic(code: "invalidRegion", message: problem))
            emit(Event(identifier: identifier, state: .unknown, date: now, conditionUnsupported: true), condition)
            return nil
        }
        return circle
    }

    /// Records, monitors (one engine step) and saves (once) checked conditions.
    private func commit(_ accepted: [(identifier: String, circle: CircularGeographicCondition, state: Event.State)]) {
        guard !accepted.isEmpty else { return }
        let now = Date()
        records.withLock { records in
            for entry in accepted {
                records[entry.identifier] = Record(
                    condition: entry.circle,
                    lastEvent: Event(identifier: entry.identifier, state: entry.state, date: now))
            }
        }
        manager.monitor(
            contentsOf: accepted.map { entry in
                (
                    Geofence(
                        identifier: entry.identifier, latitude: entry.circle.center.latitude,
                        longitude: entry.circle.center.longitude, radius: entry.circle.radius),
                    entry.state.presence
                )
            })
        save()
    }

    /// Stops monitoring `identifier` and forgets it (also in the kept store).
    public func remove(_ identifier: String) {
        guard records.withLock({ $0.removeValue(forKey: identifier) }) != nil else { return }
        manager.unmonitor(identifier)
        save()
    }

    // MARK: Inside

    nonisolated fileprivate func handle(_ event: RegionEvent) {
        guard let record = records.withLock({ $0[event.identifier] }) else { return }
        let state = Event.State(event.state)
        let flags = event.limitation == .notAuthorized ? currentFlags() : AuthorizationFlags()
        let next = Event(
            identifier: event.identifier, state: state, date: event.timestamp,
            accuracyLimited: event.limitation == .accuracyLimited, flags: flags)
        emit(next, record.condition, persist: event.limitation == nil)
    }

    /// Records the event, saves the conditions (so a consumer that reacts to the event finds it
    /// kept), then yields it — all in one critical section, so events leave in order.
    nonisolated private func emit(_ event: Event, _ condition: any CLCondition, persist: Bool = false) {
        emitting.withLock { _ in
            records.withLock {
                if $0[event.identifier] != nil { $0[event.identifier] = Record(condition: condition, lastEvent: event) }
            }
            if persist { saveSoon() }
            continuation.yield(event)
        }
    }

    /// Apple's authorization flags now, read at most once a second: the policy behind
    /// `locationServicesEnabled()` is a file, and 100,000 regions learning at once that the app
    /// is not authorized must not read it 100,000 times.
    nonisolated private func currentFlags() -> AuthorizationFlags {
        let now = ContinuousClock.now
        if let cached = flagsCache.withLock({ $0 }), now - cached.at < .seconds(1) { return cached.flags }
        let flags = AuthorizationFlags(
            manager.authorizer.state, servicesEnabled: CLLocationManager.locationServicesEnabled())
        flagsCache.withLock { $0 = (now, flags) }
        return flags
    }
    private let flagsCache = Locked<(at: ContinuousClock.Instant, flags: AuthorizationFlags)?>(nil)

    /// Serializes `emit`.
    private let emitting = Locked(())

    private func restore() {
        guard let keeper else { return }
        let kept: [RegionKeeper.Kept]
        do {
            kept = try keeper.load()
        } catch {
            keeper.said(error)
            return
        }
        for region in kept {
            let circle = CircularGeographicCondition(
                center: CLLocationCoordinate2D(latitude: region.fence.latitude, longitude: region.fence.longitude),
                radius: region.fence.radius)
            records.withLock {
                $0[region.fence.identifier] = Record(
                    condition: circle,
                    lastEvent: Event(
                        identifier: region.fence.identifier, state: Event.State(region.presence),
                        date: region.date ?? Date()))
            }
            manager.monitor(region.fence, assuming: region.presence)
        }
    }

    /// Region events save at most once a second; adding and removing conditions save at once.
    nonisolated private func saveSoon() { keeper?.saveSoon { [weak self] in self?.kept() } }

    nonisolated private func save() { keeper?.save(kept()) }

    /// The circular conditions and their last states, as kept.
    nonisolated private func kept() -> [RegionKeeper.Kept] {
        records.withLock { $0 }.compactMap { identifier, record -> RegionKeeper.Kept? in
            guard let circle = record.condition as? CircularGeographicCondition else { return nil }
            return RegionKeeper.Kept(
                fence: Geofence(
                    identifier: identifier, latitude: circle.center.latitude, longitude: circle.center.longitude,
                    radius: circle.radius),
                presence: record.lastEvent.state.presence, date: record.lastEvent.date)
        }
    }
}

extension CLMonitor.Event.State {
    init(_ presence: RegionPresence) {
        switch presence {
        case .unknown: self = .unknown
        case .inside: self = .satisfied
        case .outside: self = .unsatisfied
        }
    }

    var presence: RegionPresence {
        switch self {
        case .satisfied: .inside
        case .unsatisfied: .outside
        case .unknown, .unmonitored: .unknown
        }
    }
}

/// The monitor, weakly, for the manager's region handler (set once, right after the manager).
private final class MonitorReference: @unchecked Sendable {
    // @unchecked Sendable: written once in CLMonitor's init before any location can arrive.
    weak var monitor: CLMonitor?
}

/// The monitor's manager's delegate: errors become diagnostics, once per reason. Its name and
/// handler are set from the monitor (any thread) and read on the delegate queue: one lock.
private final class MonitorProblems: CLLocationManagerDelegate, Sendable {
    private struct State {
        package var name = ""
        var handler: DiagnosticsHandler = Diagnostics.standardError
        var said: Set<String> = []
    }
    private let state = Locked(State())

    package var name: String {
        get { state.withLock { $0.name } }
        set { state.withLock { $0.name = newValue } }
    }
    var handler: DiagnosticsHandler {
        get { state.withLock { $0.handler } }
        set { state.withLock { $0.handler = newValue } }
    }

    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        guard let error = error as? CLError else { return }
        let key = error.reason?.name ?? error.message
        let (first, name, handler) = state.withLock { ($0.said.insert(key).inserted, $0.name, $0.handler) }
        guard first else { return }
        handler(LocationDiagnostic(code: key, message: "CLMonitor \(name): \(error.message)"))
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        state.withLock { $0.said.removeAll() }
    }
}
