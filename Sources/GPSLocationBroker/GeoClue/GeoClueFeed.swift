import Dispatch
import FoundationEssentials
import GNSSCore
import LocationCore

/// GeoClue's accuracy levels (`GClueAccuracyLevel`, geoclue's gclue-enums.h).
enum GeoClueLevel {
    static let none: UInt32 = 0
    static let country: UInt32 = 1
    static let city: UInt32 = 4
    static let neighborhood: UInt32 = 5
    static let street: UInt32 = 6
    static let exact: UInt32 = 8
    /// What a client that never sets `RequestedAccuracyLevel` asks for (gammastep; observed
    /// with GeoClue 2.6.0).
    static let unset = city

    /// The accuracy a client gets: exact positions only at street level or finer, and only
    /// with a full grant; city, neighbourhood and coarser get gpslocd's reduced location.
    static func accuracy(level: UInt32, granted: CLAccuracyAuthorization) -> CLAccuracyAuthorization {
        level >= street ? granted : .reducedAccuracy
    }

    /// The level a GeoClue agent's answer allows, as a grant's accuracy.
    static func granted(level: UInt32) -> CLAccuracyAuthorization {
        level >= street ? .fullAccuracy : .reducedAccuracy
    }
}

/// A source of gpsd's reports through gpslocd's one connection: the GeoClue face's engine
/// subscribes while it runs. gpsd is read once, whatever the number of clients.
final class BrokerHubSource: LocationSource {
    private let service: BrokerService
    private let token = Locked<Int?>(nil)

    init(service: BrokerService) { self.service = service }

    func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) {
        let subscribed = service.subscribe(handler)
        token.withLock { $0 = subscribed }
    }

    func stop() {
        if let subscribed = token.withLock({ token -> Int? in
            defer { token = nil }
            return token
        }) {
            service.unsubscribe(subscribed)
        }
    }
}

/// The GeoClue face's locations, in one pass for every client: one engine (the library's
/// driver, `EngineRunner`) over gpsd's shared connection turns gpsd's reports into locations —
/// validity, whole epochs, the accuracy estimate, staleness — once per fix, whatever the number
/// of clients; the box's fuzzer reduces each location once for every reduced client; then each
/// client gets what its thresholds let through, by the core's own rule (`DeliveryFilter`). The
/// engine runs while a client is started. A client's authorization is the endpoint's to check,
/// before it is added and again when a location is sent (`AuthorizationDecision.permits`).
///
/// Each client holds the latest location waiting for the bus thread (one at most: a slow bus
/// never piles up locations).
final class GeoClueFeed: Sendable {
    struct Client {
        var reduced: Bool
        var distance: UInt32
        var interval: UInt32
        var filter = DeliveryFilter()
        var pending: LocationValue?
        let deliver: @Sendable () -> Void
        let problem: @Sendable (CLError) -> Void
    }

    private struct State {
        var clients: [Int: Client] = [:]
        var runner: EngineRunner?
        /// The engine's latest location, and when it came (the monotonic clock): a client
        /// started meanwhile gets it at once.
        var latest: (value: LocationValue, arrived: Double)?
        /// The box's fuzzer (one secret and kept cell for every app of every uid) and what it
        /// last let out.
        var fuzzer: LocationFuzzer
        var reducedLatest: LocationValue?
        var reducedProblem: String?
    }

    /// A location this recent (seconds, by the monotonic clock) is given to a client that starts.
    static let current: Double = 2.5

    private let service: BrokerService
    private let state: Locked<State>

    init(service: BrokerService) {
        self.service = service
        state = Locked(State(fuzzer: LocationFuzzer(store: service.reducedStore, appID: "reduced", live: true)))
    }

    /// Adds a started client (its id, its accuracy and thresholds); the engine starts with the
    /// first. `deliver` is called (on gpsd's thread) when a location waits and none did before:
    /// the face takes it with `take(_:)` on its own thread. `problem`: an error of the engine's.
    func add(
        _ id: Int, reduced: Bool, distance: UInt32, interval: UInt32, deliver: @escaping @Sendable () -> Void,
        problem: @escaping @Sendable (CLError) -> Void
    ) {
        let now = MonotonicReplayClock().now()
        let (start, offer) = state.withLock { state -> (EngineRunner?, Bool) in
            var client = Client(
                reduced: reduced, distance: distance, interval: interval, deliver: deliver, problem: problem)
            let offered = Self.offer(&client, state: state, now: now)
            state.clients[id] = client
            guard state.runner == nil else { return (nil, offered) }
            let runner = makeRunner()
            state.runner = runner
            return (runner, offered)
        }
        if offer { deliver() }
        if let start { start.drive { $0.start(.continuous, now: Date()) } }
    }

    /// Gives `client` the current location for its accuracy, if there is one: a client that
    /// starts while others run does not wait for the next fix.
    private static func offer(_ client: inout Client, state: State, now: Double) -> Bool {
        let value: LocationValue?
        if client.reduced {
            value = state.runner == nil ? nil : state.reducedLatest
        } else if let latest = state.latest, now - latest.arrived <= current {
            value = latest.value
        } else {
            value = nil
        }
        guard let value else { return false }
        client.filter.delivered(value)
        client.pending = value
        return true
    }

    /// Removes a client; the engine stops with the last.
    func remove(_ id: Int) {
        let stopping = state.withLock { state -> EngineRunner? in
            state.clients[id] = nil
            guard state.clients.isEmpty, let runner = state.runner else { return nil }
            state.runner = nil
            state.latest = nil
            state.reducedLatest = nil
            return runner
        }
        stopping?.stop()
    }

    /// The client's accuracy changed (a new decision): what it was measured from is forgotten,
    /// and the current location for its new accuracy offered.
    func update(_ id: Int, reduced: Bool) {
        let now = MonotonicReplayClock().now()
        let (offered, deliver) = state.withLock { state -> (Bool, (@Sendable () -> Void)?) in
            guard var client = state.clients[id], client.reduced != reduced else { return (false, nil) }
            client.reduced = reduced
            client.filter.reset()
            client.pending = nil
            let offered = Self.offer(&client, state: state, now: now)
            state.clients[id] = client
            return (offered, client.deliver)
        }
        if offered { deliver?() }
    }

    /// GeoClue's thresholds: metres (0: every location) and seconds.
    func configure(_ id: Int, distance: UInt32, interval: UInt32) {
        state.withLock { state in
            state.clients[id]?.distance = distance
            state.clients[id]?.interval = interval
        }
    }

    /// The location waiting for client `id`'s bus, if any.
    func take(_ id: Int) -> LocationValue? {
        state.withLock { state in
            defer { state.clients[id]?.pending = nil }
            return state.clients[id]?.pending
        }
    }

    /// The engine for the box: every location gpsd's reports give, with nothing held back for
    /// anyone (each client's authorization is checked by the endpoint), no distance filter.
    private func makeRunner() -> EngineRunner {
        let runner = EngineRunner(
            source: BrokerHubSource(service: service), configuration: LocationEngine.Configuration(),
            authorization: AuthorizationState(
                appID: "gpslocd-geoclue", status: .authorizedAlways, accuracy: .fullAccuracy, isInUse: true),
            fuzzer: nil, lastLocationCache: nil, queue: nil)
        runner.setConsumer { [weak self] output in
            switch output {
            case .locations(let locations):
                if let latest = locations.last { self?.fan(latest) }
            case .failure(let error):
                self?.fail(error)
            default:
                break
            }
        }
        return runner
    }

    /// One location, to every client: the precise one, or the box's reduced one — computed
    /// once — each through its own thresholds.
    private func fan(_ location: LocationValue) {
        let now = MonotonicReplayClock().now()
        let (wake, problems) = state.withLock {
            state -> ([@Sendable () -> Void], [(@Sendable (CLError) -> Void, CLError)]) in
            state.latest = (location, now)
            var reduced: LocationValue?
            var problem: String?
            if state.clients.values.contains(where: \.reduced) {
                switch state.fuzzer.reduce(location, now: Date()) {
                case .location(let value):
                    reduced = value
                    state.reducedLatest = value
                    state.reducedProblem = nil
                case .hold:
                    break
                case .unavailable(let why):
                    // Fails closed: no reduced location until the state can be kept.
                    state.reducedLatest = nil
                    problem = state.reducedProblem == nil ? why : nil
                    state.reducedProblem = why
                }
            }
            var wake: [@Sendable () -> Void] = []
            var problems: [(@Sendable (CLError) -> Void, CLError)] = []
            for (id, var client) in state.clients {
                if client.reduced, let problem {
                    problems.append((client.problem, LocationFuzzer.unavailableError(appID: "GeoClue client", problem)))
                }
                // A reduced client that has had nothing yet gets the point the box gives now (the
                // fuzzer holds it up to 15 minutes), dated by this fix, as a program on the socket does.
                var held: LocationValue?
                if client.reduced, reduced == nil, problem == nil, client.filter.lastDelivered == nil,
                    state.reducedProblem == nil, var given = state.fuzzer.lastGiven
                {
                    given.timestamp = location.timestamp
                    held = given
                }
                guard let value = client.reduced ? reduced ?? held : location,
                    client.filter.admits(
                        value, distanceFilter: client.distance == 0 ? kCLDistanceFilterNone : Double(client.distance),
                        minimumInterval: Double(client.interval))
                else { continue }
                client.filter.delivered(value)
                if client.pending == nil { wake.append(client.deliver) }
                client.pending = value
                state.clients[id] = client
            }
            return (wake, problems)
        }
        for (tell, error) in problems { tell(error) }
        for deliver in wake { deliver() }
    }

    /// An error of the engine, to every client. One that ends updates ends the engine: the
    /// clients are stopped by the face, and the next start begins a new engine.
    private func fail(_ error: CLError) {
        let (tell, ended) = state.withLock { state -> ([@Sendable (CLError) -> Void], EngineRunner?) in
            var ended: EngineRunner?
            if error.endsUpdates {
                ended = state.runner
                state.runner = nil
                state.latest = nil
            }
            return (state.clients.values.map(\.problem), ended)
        }
        // Not on the runner's own queue, which is delivering this error.
        if let ended { DispatchQueue.global().async { ended.stop() } }
        for problem in tell { problem(error) }
    }
}
