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

/// A source of gpsd's reports through gpslocd's one connection: each GeoClue client's engine
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

/// One GeoClue client's engine: the library's driver (`EngineRunner`) over gpsd's shared
/// connection, with the client's authorization, its thresholds as the distance filter and
/// minimum interval, and the box's fuzzer for reduced accuracy. The rules are the engine's —
/// validity, the accuracy estimate, staleness, the gate, the fudger; the face only carries the
/// latest location it delivers to the bus thread (one waiting at most: a slow bus never piles
/// up locations).
final class GeoClueEngine: Sendable {
    let runner: EngineRunner
    private let pending = Locked<LocationValue?>(nil)

    /// - Parameters:
    ///   - deliver: called (on gpsd's thread) when a location waits and none did before; the
    ///     face then takes it with `take()` on its own thread.
    ///   - ended: an error that ended updates (the gate refused, the fuzzer's state cannot be kept).
    init(
        service: BrokerService, authorization: AuthorizationState, distance: UInt32, interval: UInt32,
        deliver: @escaping @Sendable () -> Void, problem: @escaping @Sendable (CLError) -> Void
    ) {
        var configuration = LocationEngine.Configuration()
        Self.apply(distance: distance, interval: interval, to: &configuration)
        runner = EngineRunner(
            source: BrokerHubSource(service: service), configuration: configuration, authorization: authorization,
            fuzzer: LocationFuzzer(store: service.reducedStore, appID: "reduced", live: true), lastLocationCache: nil,
            queue: nil)
        let pending = pending
        runner.setConsumer { output in
            switch output {
            case .locations(let locations):
                guard let latest = locations.last else { return }
                let first = pending.withLock { waiting -> Bool in
                    defer { waiting = latest }
                    return waiting == nil
                }
                if first { deliver() }
            case .failure(let error):
                problem(error)
            default:
                break
            }
        }
    }

    /// GeoClue's thresholds as the engine's settings: metres (0: every location) and seconds.
    static func apply(distance: UInt32, interval: UInt32, to configuration: inout LocationEngine.Configuration) {
        configuration.distanceFilter = distance == 0 ? kCLDistanceFilterNone : Double(distance)
        configuration.minimumUpdateInterval = Double(interval)
    }

    /// Starts continuous updates; false when the engine refused at once (its gate said why).
    func start() -> Bool {
        runner.drive { $0.start(.continuous, now: Date()) }
        return runner.isRunning
    }

    func stop() {
        runner.stop()
        pending.withLock { $0 = nil }
    }

    /// The location waiting for the bus, if any.
    func take() -> LocationValue? {
        pending.withLock { waiting in
            defer { waiting = nil }
            return waiting
        }
    }

    func authorize(_ state: AuthorizationState) {
        runner.drive { $0.setAuthorization(state, now: Date()) }
    }

    func configure(distance: UInt32, interval: UInt32) {
        runner.withEngine { Self.apply(distance: distance, interval: interval, to: &$0.configuration) }
    }
}
