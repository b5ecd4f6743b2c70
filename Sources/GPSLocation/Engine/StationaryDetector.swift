import Foundation

/// Decides `CLLocationUpdate.isStationary` from the locations themselves: the device settled
/// at an anchor, and has stayed within twice the horizontal accuracy of it, at under 0.5 m/s
/// (or unknown speed), for at least `minimumDuration` of the locations' own time. Any location
/// outside that circle, or faster, moves the anchor to it.
struct StationaryDetector: Sendable {
    static let minimumDuration: TimeInterval = 10
    static let maximumSpeed: CLLocationSpeed = 0.5
    private var anchor: CLLocation?

    init() {}

    /// Adds a location; returns how long (by the locations' own time) the device has stayed
    /// at its anchor, or nil when this location moved the anchor.
    mutating func still(_ location: CLLocation) -> TimeInterval? {
        guard let anchor else {
            self.anchor = location
            return nil
        }
        let accuracy = max(location.horizontalAccuracy, anchor.horizontalAccuracy, 1)
        let slow = location.speed < 0 || location.speed < Self.maximumSpeed
        guard slow, location.horizontalAccuracy >= 0, location.distance(from: anchor) <= 2 * accuracy else {
            self.anchor = location
            return nil
        }
        return location.timestamp.timeIntervalSince(anchor.timestamp)
    }

    mutating func reset() { anchor = nil }
}
