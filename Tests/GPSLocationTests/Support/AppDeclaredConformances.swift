import GPSLocation

// #31: conformances apps declare themselves, because Apple's CoreLocation does not. Before, the
// library declared them too, and an app (a third module) that did found `==` and `.description`
// ambiguous, or its declaration refused. This test target is such an app: it declares them as
// public code from Apple platforms does (there with `@retroactive`, which a module of the same
// package may not write), and the tests use them.

extension CLLocationCoordinate2D: Equatable, Hashable {
    public static func == (lhs: CLLocationCoordinate2D, rhs: CLLocationCoordinate2D) -> Bool {
        lhs.latitude == rhs.latitude && lhs.longitude == rhs.longitude
    }
    public func hash(into hasher: inout Hasher) {
        hasher.combine(latitude)
        hasher.combine(longitude)
    }
}

extension CLAuthorizationStatus: CustomStringConvertible {
    public var description: String {
        switch self {
        case .notDetermined: "not determined"
        case .restricted: "restricted"
        case .denied: "denied"
        case .authorizedAlways: "always"
        case .authorizedWhenInUse: "when in use"
        @unknown default: "unknown"
        }
    }
}

extension CLAccuracyAuthorization: CustomStringConvertible {
    public var description: String { self == .fullAccuracy ? "precise" : "approximate" }
}

// #54: Apple's CLRegionState is not CustomStringConvertible either.
extension CLRegionState: CustomStringConvertible {
    public var description: String { name }
}
