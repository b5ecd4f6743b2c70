import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// Reduced ("approximate") accuracy, after Android's `LocationFudger`
/// (frameworks/base/services/core/java/com/android/server/location/fudger/LocationFudger.java):
/// the position plus a secret offset is snapped to a fixed grid of `gridSize` metres (default
/// 2 km), and the **grid point itself** is reported — the offset is never taken back out, so no
/// output moves with it. Every field of a reduced location is a function of the grid cell alone:
/// - the coordinate: the cell's centre on a public lattice (rows `gridSize` metres tall from the
///   equator; in each row, columns `gridSize` metres wide at the row's centre latitude);
/// - `horizontalAccuracy`: a constant, `accuracyFactor × gridSize` (3.2 km for 2 km cells),
///   which bounds the distance to the true position in every case (half a cell, the hysteresis
///   margin and the offset, on both axes) — never the receiver's own estimate;
/// - altitude, speed, course invalid; the timestamp the minute of the clock that let it out;
/// - at most one location per `minimumInterval` (default 15 minutes).
///
/// **The offset** (`ReducedAccuracySecret`) is a fraction of a cell on each axis, drawn once per
/// user and kept (`ReducedAccuracyStore.secret()`, created under a file lock so simultaneous first
/// runs agree): every app id of the user shares it, as Android keeps one fudger for all apps.
/// Unlike Android's, it does not drift: a drifting offset with a mean of zero dithers the grid,
/// and averaging a stationary device's outputs over weeks would then close in on its position;
/// a drifting one that is taken back out (this library's first design) jumps by a cell whose
/// midpoint is the true position. A fixed offset gives a stationary device one output forever.
///
/// **Hysteresis**: once in a cell, a position stays in it until it is more than
/// `hysteresis × gridSize` past its edge, so a device parked near a cell edge does not flip
/// between two points (the flipping would say it is near the edge). The cell is kept per app.
///
/// A live app's state (its cell, when it was last given a location and which) is kept between
/// runs (`ReducedAccuracyStore`), saved *before* a location is let out: when it cannot be kept,
/// or the secret cannot be read or created, `reduce` answers `.unavailable` and the gate delivers
/// nothing — a fresh secret or rate limit per start would let restarts give the position away.
public struct LocationFuzzer: Sendable {
    /// `Outcome` as a value: the grid point itself.
    public enum PointOutcome: Sendable, Equatable {
        /// A grid point to give the app.
        case point(ReducedPoint)
        /// Keep giving the point given before.
        case hold
        /// The secret or the kept state cannot be kept: nothing may be given (why).
        case unavailable(FileProblem)
    }

    let gridSize: Double
    let minimumInterval: TimeInterval
    let appID: String
    /// The fraction of a cell a position may pass its cell's edge by and stay in it.
    static let hysteresis = 0.1
    /// `horizontalAccuracy` in cells: ≥ (0.5 + hysteresis + 0.5) × √2 ≈ 1.56.
    static let accuracyFactor = 1.6
    private static let metresPerDegree = 111_320.0

    private let store: ReducedAccuracyStore?
    /// Live: the clock is the wall clock, so the rate limit and the cell are kept between runs.
    private(set) var live: Bool
    private var secret: ReducedAccuracySecret?
    var state = ReducedAccuracyState()
    private var stateLoaded = false
    /// A live restart within the rate limit: the point given before it, given once more.
    private var restored: ReducedPoint?
    /// The last grid point given (heading takes its declination from here).
    private(set) var lastPoint: ReducedPoint?
    /// Behind gpslocd: locations with reduced accuracy's `horizontalAccuracy` are grid points
    /// gpslocd's fuzzer already chose (with the user's secret, out of the app's reach), kept as
    /// they are; the rate limit and the fields still follow the rules here. A precise location
    /// (an app with full accuracy that asked for reduced) is fuzzed with the process's secret.
    private(set) var upstream = false

    /// The fuzzer of an app behind gpslocd (see `upstream`).
    static func behindBroker(appID: String, secret: ReducedAccuracySecret) -> LocationFuzzer {
        var fuzzer = LocationFuzzer(appID: appID, secret: secret)
        fuzzer.upstream = true
        return fuzzer
    }

    /// A fuzzer with a known secret that keeps nothing (tests; the default secret is this
    /// process's, shared by every app id in it).
    public init(
        appID: String, secret: ReducedAccuracySecret = .process, gridSize: Double = 2000,
        minimumInterval: TimeInterval = 900
    ) {
        self.appID = appID
        self.secret = secret
        self.gridSize = gridSize
        self.minimumInterval = minimumInterval
        store = nil
        live = false
        stateLoaded = true
    }

    /// The app's fuzzer: the user's secret from `store` (nil: this process's) and, for a live
    /// source, the app's kept state. Nothing is read until the first location to reduce, so
    /// apps with full accuracy touch no file.
    public init(
        store: ReducedAccuracyStore?, appID: String, live: Bool, gridSize: Double = 2000,
        minimumInterval: TimeInterval = 900
    ) {
        self.appID = appID
        self.store = store
        self.live = live
        self.gridSize = gridSize
        self.minimumInterval = minimumInterval
        if store == nil {
            secret = .process
            stateLoaded = true
        }
    }

    /// Marks the clock as the wall clock (a live source) or not. Only before the first `reduce`.
    mutating func setLive(_ isLive: Bool) {
        if !stateLoaded || store == nil { live = isLive }
    }

    /// What the fuzzer lets out for a precise position at `now`, as a value: the one rule,
    /// which the engine's gate (through `reduce`) and gpslocd (on gpsd's fixes, with no engine
    /// of its own) both call. `horizontalAccuracy` matters only `upstream`: a position already
    /// as coarse as a grid point is one, and is kept.
    public mutating func reducePoint(latitude: Double, longitude: Double, horizontalAccuracy: Double, now: Date)
        -> PointOutcome
    {
        if let problem = prepare(now: now) { return .unavailable(problem) }
        guard let secret else { return .unavailable(.secretMissing) }
        if let last = state.lastOutput {
            // A clock that went back is never time that passed: the limit runs from now.
            let elapsed = now.timeIntervalSince(last)
            if elapsed < minimumInterval {
                if let restored {
                    self.restored = nil
                    lastPoint = restored
                    return .point(restored)
                }
                if elapsed < 0 { state.lastOutput = now }
                return .hold
            }
        }
        restored = nil
        var (row, column, coordinate) = (0, 0, CLLocationCoordinate2D(latitude: latitude, longitude: longitude))
        if !upstream || horizontalAccuracy < Self.accuracyFactor * gridSize {
            (row, column, coordinate) = cell(of: coordinate, secret: secret)
        }
        let minute = (now.timeIntervalSince1970 / 60).rounded(.down) * 60
        let point = ReducedPoint(
            latitude: coordinate.latitude, longitude: coordinate.longitude, accuracy: Self.accuracyFactor * gridSize,
            timestamp: Date(timeIntervalSince1970: minute))
        var next = state
        next.cellNorth = row
        next.cellEast = column
        next.lastOutput = now
        next.lastLatitude = point.latitude
        next.lastLongitude = point.longitude
        next.lastTimestamp = point.timestamp
        if live, let store, let problem = store.save(next, for: appID) { return .unavailable(problem) }
        state = next
        lastPoint = point
        return .point(point)
    }

    /// Reads the secret (and a live app's state) on first use; the problem when it cannot.
    private mutating func prepare(now: Date) -> FileProblem? {
        guard let store else { return nil }
        if secret == nil {
            switch store.secret() {
            case .success(let kept): secret = kept
            case .failure(let failure): return failure
            }
        }
        guard !stateLoaded else { return nil }
        stateLoaded = true
        guard live, let kept = store.load(appID) else { return nil }
        state = kept
        if let last = kept.lastOutput, now.timeIntervalSince(last) >= 0, now.timeIntervalSince(last) < minimumInterval,
            let latitude = kept.lastLatitude, let longitude = kept.lastLongitude, let time = kept.lastTimestamp
        {
            restored = ReducedPoint(
                latitude: latitude, longitude: longitude, accuracy: Self.accuracyFactor * gridSize, timestamp: time)
        }
        return nil
    }

    /// The cell (row, column) of `coordinate` + the secret, kept at the previous one within
    /// the hysteresis margin, and its grid point.
    private func cell(of coordinate: CLLocationCoordinate2D, secret: ReducedAccuracySecret) -> (
        Int, Int, CLLocationCoordinate2D
    ) {
        func index(_ position: Double, previous: Int?) -> Int {
            if let previous, position >= Double(previous) - Self.hysteresis,
                position < Double(previous + 1) + Self.hysteresis
            {
                return previous
            }
            return Int((position).rounded(.down))
        }
        let rowPosition = coordinate.latitude * Self.metresPerDegree / gridSize + secret.north
        let row = index(rowPosition, previous: state.cellNorth)
        let latitude = max(-89.9, min(89.9, (Double(row) + 0.5) * gridSize / Self.metresPerDegree))
        // The row's column width in degrees, from the row's centre latitude (public, not the
        // position's): nothing finer than the row enters the longitude.
        let step = gridSize / (Self.metresPerDegree * max(0.01, cos(latitude * .pi / 180)))
        let columnPosition = coordinate.longitude / step + secret.east
        let column = index(columnPosition, previous: row == state.cellNorth ? state.cellEast : nil)
        let longitude = remainder((Double(column) + 0.5) * step, 360)
        return (row, column, CLLocationCoordinate2D(latitude: latitude, longitude: longitude))
    }
}

/// A grid point the fuzzer let out. Every field is a function of the cell alone: its centre, the
/// constant accuracy (`accuracyFactor × gridSize`) and the minute of the clock that let it out.
public struct ReducedPoint: Sendable, Equatable {
    let latitude: Double
    let longitude: Double
    /// Metres: bounds the distance to the true position.
    let accuracy: Double
    let timestamp: Date

    /// A grid point.
    public init(latitude: Double, longitude: Double, accuracy: Double, timestamp: Date) {
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.timestamp = timestamp
    }
}
