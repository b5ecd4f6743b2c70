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
    private let seed: UInt64
    /// The last reduced location given (kept for a restarted live app).
    private var lastReduced: CLLocation?
    /// Restored from an earlier run within the rate limit: given once, instead of a fresher one.
    private var restored: CLLocation?
    /// True when `lastOutput` is the wall clock (a live source), so it may be kept.
    private var live = false

    package init(appID: String, gridSize: Double = 2000, minimumInterval: TimeInterval = 900, seed: UInt64? = nil) {
        self.gridSize = gridSize
        self.minimumInterval = minimumInterval
        let seed = seed ?? Self.secretSeed(appID)
        self.seed = seed
        var random = SplitMix64(seed: seed)
        offsetNorth = random.unit() * gridSize
        offsetEast = random.unit() * gridSize
        self.random = random
    }

    /// The fuzzer an earlier run left (`ReducedAccuracyStore`): the same offset, and for a live
    /// source (`live`) the same rate limit — within it, the last reduced location once more,
    /// never a fresher one.
    package init(
        restoring state: ReducedAccuracyState, live: Bool, gridSize: Double = 2000, minimumInterval: TimeInterval = 900
    ) {
        self.gridSize = gridSize
        self.minimumInterval = minimumInterval
        seed = state.seed
        random = SplitMix64(state: state.generator)
        offsetNorth = state.offsetNorth
        offsetEast = state.offsetEast
        lastDrift = state.lastDrift
        self.live = live
        if live, let output = state.lastOutput {
            lastOutput = output
            if let latitude = state.lastLatitude, let longitude = state.lastLongitude, let time = state.lastTimestamp {
                let accuracy = state.lastAccuracy ?? gridSize
                restored = Self.reducedLocation(
                    latitude: latitude, longitude: longitude, accuracy: accuracy, timestamp: time, source: nil)
                lastReduced = restored
            }
        }
    }

    /// What to keep for the next run (the rate limit only when the clock is the wall clock).
    package var persistentState: ReducedAccuracyState {
        ReducedAccuracyState(
            seed: seed, generator: random.state, offsetNorth: offsetNorth, offsetEast: offsetEast, lastDrift: lastDrift,
            lastOutput: live ? lastOutput : nil, lastLatitude: live ? lastReduced?.coordinate.latitude : nil,
            lastLongitude: live ? lastReduced?.coordinate.longitude : nil,
            lastAccuracy: live ? lastReduced?.horizontalAccuracy : nil,
            lastTimestamp: live ? lastReduced?.timestamp : nil)
    }

    /// Marks the clock as the wall clock (a live source): the rate limit is then kept.
    package mutating func setLive(_ isLive: Bool) { live = isLive }

    /// A fresh random seed for `appID`'s offset.
    package static func secretSeed(_ appID: String) -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return generator.next() ^ UInt64(truncatingIfNeeded: appID.hashValue)
    }

    /// The reduced form of `location`, or nil while the rate limit holds.
    package mutating func reduce(_ location: CLLocation, now: Date) -> CLLocation? {
        if let lastOutput, now.timeIntervalSince(lastOutput) < minimumInterval {
            // Within the limit an earlier run set: what it gave, once, not a fresher location.
            defer { restored = nil }
            return restored
        }
        restored = nil
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
        let reduced = Self.reducedLocation(
            latitude: latitude, longitude: longitude, accuracy: accuracy,
            timestamp: Date(timeIntervalSince1970: minute),
            source: location.sourceInformation)
        lastReduced = reduced
        return reduced
    }

    private static func reducedLocation(
        latitude: Double, longitude: Double, accuracy: Double, timestamp: Date, source: CLLocationSourceInformation?
    ) -> CLLocation {
        CLLocation(
            coordinate: CLLocationCoordinate2D(latitude: latitude, longitude: longitude), altitude: 0,
            ellipsoidalAltitude: 0, horizontalAccuracy: accuracy, verticalAccuracy: -1, course: -1, courseAccuracy: -1,
            speed: -1, speedAccuracy: -1, timestamp: timestamp,
            gnss: GNSSDetails(
                fixMode: .twoDimensional, quality: .unknown,
                accuracyClass: AccuracyStage.classify(horizontalAccuracy: accuracy, mode: .twoDimensional),
                reduced: true, device: nil),
            sourceInformation: source)
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
