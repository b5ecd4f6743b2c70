import Foundation

/// Reduced ("approximate") accuracy, after Android's LocationFudger: a per-app secret offset
/// that drifts slowly, then snapping to a grid of `gridSize` metres (default 2 km), with
/// `horizontalAccuracy` = the grid size, altitude/speed/course invalid, and at most one
/// location per `minimumInterval` (default 15 minutes).
///
/// The snapped point depends only on the grid cell the offset position falls in, so no field
/// carries sub-grid information. Deterministic for a given seed.
package struct LocationFuzzer: Sendable {
    package var gridSize: Double
    package var minimumInterval: TimeInterval
    /// Current secret offset in metres (north, east); drifts by a bounded random walk.
    private var offsetNorth: Double
    private var offsetEast: Double
    private var random: SplitMix64
    private var lastOutput: Date?
    private var lastDrift: Date?

    package init(appID: String, gridSize: Double = 2000, minimumInterval: TimeInterval = 900, seed: UInt64? = nil) {
        self.gridSize = gridSize
        self.minimumInterval = minimumInterval
        var random = SplitMix64(seed: seed ?? Self.secretSeed(appID))
        offsetNorth = random.unit() * gridSize
        offsetEast = random.unit() * gridSize
        self.random = random
    }

    /// A fresh random seed for `appID`'s offset.
    package static func secretSeed(_ appID: String) -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return generator.next() ^ UInt64(truncatingIfNeeded: appID.hashValue)
    }

    /// The reduced form of `location`, or nil while the rate limit holds.
    package mutating func reduce(_ location: CLLocation, now: Date) -> CLLocation? {
        if let lastOutput, now.timeIntervalSince(lastOutput) < minimumInterval { return nil }
        drift(now: now)
        lastOutput = now
        let metresPerDegreeLatitude = 111_320.0
        // Snap latitude first; the longitude grid uses the snapped latitude's scale so it leaks nothing finer.
        let northMetres = location.coordinate.latitude * metresPerDegreeLatitude + offsetNorth
        let snappedNorth = ((northMetres / gridSize).rounded(.down) + 0.5) * gridSize - offsetNorth
        let latitude = max(-89.9, min(89.9, snappedNorth / metresPerDegreeLatitude))
        let metresPerDegreeLongitude = max(1, metresPerDegreeLatitude * cos(latitude * .pi / 180))
        let eastMetres = location.coordinate.longitude * metresPerDegreeLongitude + offsetEast
        let snappedEast = ((eastMetres / gridSize).rounded(.down) + 0.5) * gridSize - offsetEast
        var longitude = snappedEast / metresPerDegreeLongitude
        longitude = remainder(longitude, 360)
        let accuracy = max(
            gridSize, location.horizontalAccuracy < CLLocationDistanceMax ? location.horizontalAccuracy : gridSize)
        // The timestamp is coarsened to the minute so it does not pin the precise fix.
        let minute = (now.timeIntervalSince1970 / 60).rounded(.down) * 60
        return CLLocation(
            coordinate: CLLocationCoordinate2D(latitude: latitude, longitude: longitude), altitude: 0,
            ellipsoidalAltitude: 0, horizontalAccuracy: accuracy, verticalAccuracy: -1, course: -1, courseAccuracy: -1,
            speed: -1, speedAccuracy: -1, timestamp: Date(timeIntervalSince1970: minute),
            gnss: GNSSDetails(
                fixMode: .twoDimensional, quality: .unknown,
                accuracyClass: AccuracyStage.classify(horizontalAccuracy: accuracy, mode: .twoDimensional),
                reduced: true, device: nil),
            sourceInformation: location.sourceInformation)
    }

    /// The offset moves by at most 5 % of the grid per hour of elapsed time, within one cell.
    private mutating func drift(now: Date) {
        defer { lastDrift = now }
        guard let lastDrift else { return }
        let hours = max(0, now.timeIntervalSince(lastDrift)) / 3600
        let step = 0.05 * gridSize * min(1, hours)
        offsetNorth = (offsetNorth + (random.unit() * 2 - 1) * step).truncatingRemainder(dividingBy: gridSize)
        offsetEast = (offsetEast + (random.unit() * 2 - 1) * step).truncatingRemainder(dividingBy: gridSize)
    }
}
