import Dispatch
import FoundationEssentials
import GNSSCore
import LocationCore
import LocationWords

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

/// A source of gpsd's reports through gpslocd's one connection: the GeoClue face's feed
/// (`SharedLocationFeed`) subscribes while it has clients. gpsd is read once, whatever the number of clients.
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
