import Dispatch
import FoundationEssentials
import GNSSCore

/// One stream of locations for many clients, in one pass: the core's driver (`EngineRunner`) over
/// one source turns its reports into locations — validity, whole epochs, the accuracy estimate,
/// staleness — once per fix, whatever the number of clients; one fuzzer (a service's, shared by
/// every reduced client) reduces each location once; then each client gets what its thresholds
/// let through, by the core's own rule (`DeliveryFilter`). The driver runs while a client is
/// added. Authorization is the caller's to check, before a client is added and again when its
/// location is taken (`AuthorizationDecision.permits`); the feed decides only which location
/// each client is offered. A service whose clients have no engine of their own (gpslocd's
/// GeoClue face: Firefox, GNOME) uses it; a program with the library's engine needs none.
///
/// Each client holds the latest location waiting for its consumer's thread (one at most: a slow
/// consumer never piles up locations).
public final class SharedLocationFeed: Sendable {
    private struct Client {
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
        var reducedProblem: FileProblem?
    }

    /// A location this recent (seconds, by the monotonic clock) is given to a client that starts.
    static let current: Double = 2.5

    private let source: any LocationSource
    private let clientName: String
    private let state: Locked<State>

    /// A feed reading `source` while it has clients, reducing with the fuzzer kept in `store`
    /// (one secret and one kept cell for every reduced client); `clientName` names a client in
    /// the errors it is told (e.g. "GeoClue client").
    public init(source: any LocationSource, reducedStore store: ReducedAccuracyStore, clientName: String) {
        self.source = source
        self.clientName = clientName
        state = Locked(State(fuzzer: LocationFuzzer(store: store, appID: "reduced", live: true)))
    }

    /// Adds a started client (its id, its accuracy, and its thresholds: metres, 0 for every
    /// location, and seconds); the driver starts with the first. `deliver` is called (on the
    /// source's thread) when a location waits and none did before: the caller takes it with
    /// `take(_:)` on its own thread. `problem`: an error of the driver's or the fuzzer's.
    public func add(
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

    /// Removes a client; the driver stops with the last.
    public func remove(_ id: Int) {
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
    public func update(_ id: Int, reduced: Bool) {
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

    /// A client's thresholds: metres (0: every location) and seconds.
    public func configure(_ id: Int, distance: UInt32, interval: UInt32) {
        state.withLock { state in
            state.clients[id]?.distance = distance
            state.clients[id]?.interval = interval
        }
    }

    /// The location waiting for client `id`'s bus, if any.
    public func take(_ id: Int) -> LocationValue? {
        state.withLock { state in
            defer { state.clients[id]?.pending = nil }
            return state.clients[id]?.pending
        }
    }

    /// The driver: every location the source's reports give, with nothing held back for anyone
    /// (each client's authorization is the caller's to check), no distance filter.
    private func makeRunner() -> EngineRunner {
        let runner = EngineRunner(
            source: source, configuration: LocationEngine.Configuration(),
            authorization: AuthorizationState(
                appID: "shared-feed", status: .authorizedAlways, accuracy: .fullAccuracy, isInUse: true),
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
            var problem: FileProblem?
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
                    problems.append((client.problem, LocationFuzzer.unavailableError(appID: clientName, problem)))
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

    /// An error of the driver, to every client. One that ends updates ends the driver: the
    /// clients are stopped by the caller, and the next client begins a new one.
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
