import Foundation

/// The shared path from a `Fix` to what an app receives:
/// validity → accuracy (CLLocation + tier) → time order → authorization gate → distance filter.
///
/// The distance filter runs on what the gate lets through, so for a reduced-accuracy app it
/// only ever compares grid-snapped positions and cannot leak movement below the grid.
public struct LocationPipeline: Sendable {
    public var validity: ValidityStage
    public var accuracy: AccuracyStage
    public var gate: any LocationGate
    public var distanceFilter: DistanceFilterStage
    public var timeOrder = TimeOrderStage()

    public enum Outcome: Sendable {
        /// The app receives this location.
        case delivered(CLLocation)
        /// The fix is not a usable position.
        case rejected(FixRejection)
        /// The gate withheld it; `error` is set when the app must be told.
        case withheld(CLError?)
        /// Closer than the distance filter to the last delivered location.
        case filtered(CLLocation)
    }

    public init(
        validity: ValidityStage = ValidityStage(), accuracy: AccuracyStage = AccuracyStage(),
        gate: any LocationGate = AlwaysAllowGate(), distanceFilter: DistanceFilterStage = DistanceFilterStage()
    ) {
        self.validity = validity
        self.accuracy = accuracy
        self.gate = gate
        self.distanceFilter = distanceFilter
    }

    /// `arrival`: when the fix arrived by a monotonic clock, live (see `TimeOrderStage`); nil in a replay.
    public mutating func process(_ fix: Fix, now: Date, arrival: Double? = nil) -> Outcome {
        if let rejection = validity.check(fix, now: now) { return .rejected(rejection) }
        let location = accuracy.location(from: fix)
        if let rejection = timeOrder.check(location, arrival: arrival) { return .rejected(rejection) }
        switch gate.decide(location, now: now) {
        case .withhold(let error):
            return .withheld(error)
        case .deliver(let allowed):
            guard distanceFilter.admits(allowed) else { return .filtered(allowed) }
            distanceFilter.delivered(allowed)
            return .delivered(allowed)
        }
    }
}
