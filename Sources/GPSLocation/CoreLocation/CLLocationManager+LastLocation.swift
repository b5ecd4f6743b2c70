import Foundation
import LocationCore

// `CLLocationManager.location`: the last location delivered, else the app's kept one.

extension CLLocationManager {
    /// The last location delivered to this manager; before any, the last one this app received
    /// (the per-user `lastLocationCache`; behind gpslocd, the one gpslocd keeps for the app),
    /// with its own old timestamp — when the app is authorized now, and with reduced accuracy
    /// only if that one was reduced too.
    public var location: CLLocation? {
        guard let value = lastValue else { return nil }
        // The object the delegate was handed, when it is this one: apps compare `location` with
        // what they received (`===`, NSObject's `isEqual`), and a SwiftUI model that publishes
        // it must not see a new object on every read.
        if let shown = state.withLock({ $0.lastShown }), shown.value == value { return shown }
        return CLLocation(value)
    }

    /// `location`'s value.
    fileprivate var lastValue: LocationValue? {
        if let delivered = runner.withEngine({ $0.lastDelivered }) { return delivered }
        let decision = AuthorizationDecision(status: authorizer.status, accuracy: authorizer.accuracy)
        guard decision.status.isAuthorized else { return nil }
        // Behind gpslocd the last location is kept there, and comes with the WELCOME.
        if authorizer.isBrokered {
            return authorizer.brokerLastLocation.flatMap { decision.permits(cached: $0) ? $0 : nil }
        }
        guard let cache = runner.lastLocationCache else { return nil }
        let entry: LocationValue?
        if let cached = state.withLock({ $0.cachedLocation }) {
            entry = cached
        } else {
            entry = cache.location(for: authorizer.appID)
            state.withLock { $0.cachedLocation = .some(entry) }
        }
        guard let entry, decision.permits(cached: entry) else { return nil }
        return entry
    }
}
