import Foundation

/// What the authorization gate did with a location.
public enum GateDecision: Sendable {
    /// Deliver this location (the original, or its reduced form).
    case deliver(CLLocation)
    /// Deliver nothing; `error` is set when the app must be told (e.g. `.denied`).
    case withhold(error: CLError?)
}

/// Stage 4: nothing reaches an app without passing here. The real gate (decision store,
/// prompts, in-use state) and the simulated one used by `gpsloc replay` both conform.
public protocol LocationGate: Sendable {
    /// The app's current authorization, as the manager reports it.
    var authorizationStatus: CLAuthorizationStatus { get }
    var accuracyAuthorization: CLAccuracyAuthorization { get }
    /// Decides on one location; `now` is the pipeline's clock.
    mutating func decide(_ location: CLLocation, now: Date) -> GateDecision
}

/// A gate that delivers everything at full accuracy — for tests and for code that does its
/// own authorization. Never use it to serve locations to untrusted apps.
public struct AlwaysAllowGate: LocationGate {
    public init() {}
    public var authorizationStatus: CLAuthorizationStatus { .authorizedAlways }
    public var accuracyAuthorization: CLAccuracyAuthorization { .fullAccuracy }
    public func decide(_ location: CLLocation, now: Date) -> GateDecision { .deliver(location) }
}

/// A fixed authorization state, as `gpsloc replay --authorization … --accuracy …` simulates it:
/// shows exactly what an app in that state would receive.
///
/// - `notDetermined`: nothing is delivered; the first location attempt reports
///   `CLError.locationUnknown` with a message naming the command that grants access.
/// - `denied`, `restricted`: nothing is delivered; one `CLError.denied`.
/// - authorized with reduced accuracy: locations pass through `LocationFuzzer`.
public struct SimulatedGate: LocationGate {
    public let authorizationStatus: CLAuthorizationStatus
    public let accuracyAuthorization: CLAccuracyAuthorization
    public var fuzzer: LocationFuzzer
    private var reported = false
    private let appID: String

    public init(
        status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization, appID: String = "gpsloc",
        fuzzer: LocationFuzzer? = nil
    ) {
        authorizationStatus = status
        accuracyAuthorization = accuracy
        self.appID = appID
        self.fuzzer = fuzzer ?? LocationFuzzer(appID: appID)
    }

    public mutating func decide(_ location: CLLocation, now: Date) -> GateDecision {
        switch authorizationStatus {
        case .authorizedAlways, .authorizedWhenInUse:
            if accuracyAuthorization == .fullAccuracy { return .deliver(location) }
            guard let reduced = fuzzer.reduce(location, now: now) else { return .withhold(error: nil) }
            return .deliver(reduced)
        case .notDetermined:
            defer { reported = true }
            return .withhold(
                error: reported
                    ? nil
                    : CLError(
                        .locationUnknown,
                        message:
                            "location authorization for \(appID) is not determined: no location is delivered until it is granted — "
                            + "`gpsloc auth grant \(appID) --when-in-use` (or `--always`)"))
        case .denied, .restricted:
            defer { reported = true }
            let why = authorizationStatus == .denied ? "denied" : "restricted by the administrator"
            return .withhold(
                error: reported
                    ? nil
                    : CLError(
                        .denied,
                        message: "location access for \(appID) is \(why) — no location is delivered; "
                            + (authorizationStatus == .denied
                                ? "`gpsloc auth grant \(appID) --when-in-use` allows it" : "ask the administrator")))
        }
    }
}

/// Reduced ("approximate") accuracy, after Android's LocationFudger: a per-app secret offset
/// that drifts slowly, then snapping to a grid of `gridSize` metres (default 2 km), with
/// `horizontalAccuracy` = the grid size, altitude/speed/course invalid, and at most one
/// location per `minimumInterval` (default 15 minutes).
///
/// The snapped point depends only on the grid cell the offset position falls in, so no field
/// carries sub-grid information. Deterministic for a given seed.
public struct LocationFuzzer: Sendable {
    public var gridSize: Double
    public var minimumInterval: TimeInterval
    /// Current secret offset in metres (north, east); drifts by a bounded random walk.
    private var offsetNorth: Double
    private var offsetEast: Double
    private var random: SplitMix64
    private var lastOutput: Date?
    private var lastDrift: Date?

    public init(appID: String, gridSize: Double = 2000, minimumInterval: TimeInterval = 900, seed: UInt64? = nil) {
        self.gridSize = gridSize
        self.minimumInterval = minimumInterval
        var random = SplitMix64(seed: seed ?? Self.secretSeed(appID))
        offsetNorth = random.unit() * gridSize
        offsetEast = random.unit() * gridSize
        self.random = random
    }

    private static func secretSeed(_ appID: String) -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return generator.next() ^ UInt64(truncatingIfNeeded: appID.hashValue)
    }

    /// The reduced form of `location`, or nil while the rate limit holds.
    public mutating func reduce(_ location: CLLocation, now: Date) -> CLLocation? {
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
                reduced: true, device: nil))
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
