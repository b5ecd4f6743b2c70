import FoundationEssentials
import GNSSCore

// The fuzzer's rule (`LocationFuzzer.reducePoint`) applied to a delivered location: what the
// gate lets out, and the error an app is given when its state cannot be kept.

extension LocationFuzzer {
    /// What the gate may let out for one precise location.
    public enum Outcome: Sendable {
        /// The reduced location to let out.
        case location(LocationValue)
        /// Nothing now: the rate limit holds.
        case hold
        /// Nothing until the state can be kept: why, and what to do.
        case unavailable(FileProblem)
    }

    /// The last reduced location given, as the app got it.
    public var lastGiven: LocationValue? { lastPoint.map { Self.reducedLocation($0, source: nil) } }

    /// The reduced form of `location` at `now` (the clock the engine checks times by): the
    /// engine's gate asks here; the rule itself is `reducePoint`.
    public mutating func reduce(_ location: LocationValue, now: Date) -> Outcome {
        switch reducePoint(
            latitude: location.coordinate.latitude, longitude: location.coordinate.longitude,
            horizontalAccuracy: location.horizontalAccuracy, now: now)
        {
        case .point(let point): .location(Self.reducedLocation(point, source: location.origin))
        case .hold: .hold
        case .unavailable(let problem): .unavailable(problem)
        }
    }

    /// What an app with reduced accuracy is told when its fuzzer's secret or state cannot be
    /// kept (the gate's words, and gpslocd's for a program it serves).
    public static func unavailableError(appID: String, _ problem: FileProblem) -> CLError {
        CLError(
            .locationUnknown, .reducedAccuracyUnavailable(app: appID, problem: problem), reason: .reducedAccuracyState)
    }

    /// A grid point as the app gets it: every field but the point's own invalid.
    static func reducedLocation(_ point: ReducedPoint, source: LocationOrigin?) -> LocationValue {
        let accuracy = point.accuracy
        return LocationValue(
            coordinate: CLLocationCoordinate2D(latitude: point.latitude, longitude: point.longitude), altitude: 0,
            ellipsoidalAltitude: 0, horizontalAccuracy: accuracy, verticalAccuracy: -1, course: -1,
            courseAccuracy: -1, speed: -1, speedAccuracy: -1, timestamp: point.timestamp,
            gnss: GNSSDetails(
                fixMode: .twoDimensional, quality: .unknown,
                accuracyClass: AccuracyStage.classify(horizontalAccuracy: accuracy, mode: .twoDimensional),
                reduced: true, device: nil),
            origin: source)
    }
}
