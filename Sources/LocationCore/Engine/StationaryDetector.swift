import FoundationEssentials
import GNSSCore

/// Decides whether the device is stationary, from the locations themselves, with hysteresis so a
/// still receiver's noise does not flip it:
/// - **Settling**: the device settled at an anchor and has stayed within twice the horizontal
///   accuracy of it, at under 0.5 m/s (or unknown speed), for at least `minimumDuration` of the
///   locations' own time. Any location outside that circle, or faster, moves the anchor to it.
/// - **Stationary** from then on, until it leaves: locations beyond three times the accuracy
///   (at least `minimumDepartureRadius`), or at 1 m/s or more, for `departureConfirmation` of
///   their own time in a row (so at least two). One outlier — a multipath jump, a speed spike —
///   is not a departure; a walker (1.4 m/s) or a car leaves within a second or two.
///
/// The engine's one detector: it marks delivered locations stationary
/// (`CLLocationUpdate.isStationary`), pauses `liveUpdates` while stationary, and times
/// `pausesLocationUpdatesAutomatically`.
struct StationaryDetector: Sendable {
    static let minimumDuration: TimeInterval = 10
    static let maximumSpeed: CLLocationSpeed = 0.5
    /// At or above this speed a location is leaving (twice the settling limit: a still
    /// receiver's speed noise stays well under it).
    static let departureSpeed: CLLocationSpeed = 1
    /// The least distance from the anchor that counts as leaving, whatever the accuracy says.
    static let minimumDepartureRadius: CLLocationDistance = 5
    /// How long (by the locations' own time) leaving must last to end a stop.
    static let departureConfirmation: TimeInterval = 1

    private var anchor: LocationValue?
    /// True once settled, until a confirmed departure.
    private(set) var isStationary = false
    /// The first location of a departure not yet confirmed.
    private var leaving: LocationValue?

    init() {}

    /// Adds a location; returns how long (by the locations' own time) the device has stayed
    /// at its anchor, or nil when this location moved the anchor (it is moving).
    mutating func still(_ location: LocationValue) -> TimeInterval? {
        guard let anchor else {
            self.anchor = location
            return nil
        }
        let accuracy = max(location.horizontalAccuracy, anchor.horizontalAccuracy, 1)
        // The geodesic only where the rule needs it: every fix of a moving receiver passes here.
        if isStationary {
            let departs =
                location.horizontalAccuracy >= 0
                && (location.speed >= Self.departureSpeed
                    || location.distance(from: anchor) > max(3 * accuracy, Self.minimumDepartureRadius))
            guard departs else {
                leaving = nil
                return location.timestamp.timeIntervalSince(anchor.timestamp)
            }
            // A receiver clock that stepped back (the engine follows a resynchronized clock)
            // restarts the confirmation from here, never waits out the step.
            guard let first = leaving, location.timestamp >= first.timestamp else {
                leaving = location
                return location.timestamp.timeIntervalSince(anchor.timestamp)
            }
            guard location.timestamp.timeIntervalSince(first.timestamp) >= Self.departureConfirmation else {
                return location.timestamp.timeIntervalSince(anchor.timestamp)
            }
            // Confirmed: moving again, from here.
            isStationary = false
            leaving = nil
            self.anchor = location
            return nil
        }
        let slow = location.speed < 0 || location.speed < Self.maximumSpeed
        // Settling starts again where a stepped-back clock puts the device before its anchor.
        guard slow, location.horizontalAccuracy >= 0, location.timestamp >= anchor.timestamp,
            location.distance(from: anchor) <= 2 * accuracy
        else {
            self.anchor = location
            return nil
        }
        let stayed = location.timestamp.timeIntervalSince(anchor.timestamp)
        if stayed >= Self.minimumDuration { isStationary = true }
        return stayed
    }

    mutating func reset() {
        anchor = nil
        leaving = nil
        isStationary = false
    }
}
