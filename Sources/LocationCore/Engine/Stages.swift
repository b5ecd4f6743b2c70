import FoundationEssentials
import GNSSCore
import Glibc

// The pipeline's stages: small synchronous values with typed input and output. None does I/O,
// touches a queue or reads a clock: "now" is always passed in.

/// Why a fix did not become a location.
public enum FixRejection: Sendable, Hashable {
    /// Mode below 2D (no fix yet, or lost).
    case noFix(FixMode)
    /// Mode 2D/3D but a coordinate is missing.
    case missingCoordinate
    /// A coordinate outside [−90, 90] × [−180, 180].
    case outOfRange(latitude: Double, longitude: Double)
    /// The fix has no time, so its age cannot be known.
    case missingTime
    /// Older than the staleness bound, in seconds.
    case stale(age: TimeInterval)
    /// Dated implausibly far in the future (seconds ahead of now) — e.g. a receiver's
    /// week-rollover bug, or gpsd 3.22's 1024-week shift of old dates.
    case future(ahead: TimeInterval)
    /// Older than the last location that passed: time went backwards (seconds back).
    case backwards(by: TimeInterval)
    /// Live: dated further ahead of the last location than the time that has passed since it
    /// (seconds too far ahead) — a wrongly dated fix.
    case jumped(ahead: TimeInterval)
    /// The same time as the last location that passed: a repeat.
    case duplicate

    /// A short stable name (the NDJSON diagnostic `code`).
    public var code: String {
        switch self {
        case .noFix: "noFix"
        case .missingCoordinate, .outOfRange: "invalidFix"
        case .missingTime: "noTime"
        case .stale: "stale"
        case .future: "future"
        case .backwards: "timeWentBack"
        case .jumped: "timeJumped"
        case .duplicate: "duplicate"
        }
    }
}

/// Stage 1: only real positions pass — mode ≥ 2, finite in-range coordinates, a time, and not
/// older than `maximumAge` relative to the `now` the caller passes (wall clock live, the
/// recording's clock in a replay). Fixes dated in the future are not stale.
public struct ValidityStage: Sendable {
    /// The staleness bound in seconds (default 10).
    var maximumAge: TimeInterval
    /// How far ahead of now a fix may be dated (default one day).
    var maximumFutureSkew: TimeInterval

    /// A validity rule with these bounds (seconds).
    public init(maximumAge: TimeInterval = 10, maximumFutureSkew: TimeInterval = 86_400) {
        self.maximumAge = maximumAge
        self.maximumFutureSkew = maximumFutureSkew
    }

    /// Why `fix` cannot be delivered at `now` (nil: it can).
    public func check(_ fix: Fix, now: Date) -> FixRejection? {
        guard fix.mode >= .twoDimensional else { return .noFix(fix.mode) }
        guard let latitude = fix.latitude, let longitude = fix.longitude else { return .missingCoordinate }
        guard CLLocationCoordinate2DIsValid(CLLocationCoordinate2D(latitude: latitude, longitude: longitude)) else {
            return .outOfRange(latitude: latitude, longitude: longitude)
        }
        guard let time = fix.time else { return .missingTime }
        let age = now.timeIntervalSince(time)
        if age > maximumAge { return .stale(age: age) }
        if -age > maximumFutureSkew { return .future(ahead: -age) }
        return nil
    }
}

/// Keeps delivery in time order and rejects implausible time jumps.
///
/// - A location older than the last one that passed is dropped (`backwards`: after a
///   reconnect, or a confused receiver), and one with the same time is a repeat (`duplicate`):
///   gpsd reports an epoch more than once while it learns a receiver's cycle (after every
///   (re)connection), and only the first report of each epoch is delivered.
/// - Live (when the caller passes `arrival`, a monotonic clock in seconds), a location dated
///   further ahead of the last one than the time that has passed since that one arrived, plus
///   `jumpTolerance`, is dropped (`jumped`): one wrongly dated fix must not be delivered, nor
///   hold back every correct fix after it.
/// - A receiver whose clock really did step (set after a cold start, a corrected week
///   rollover, a recording that loops) is followed again after `confirmations` consecutive
///   fixes that agree with each other on the new time; `resynchronized` then says by how much
///   time stepped, for the caller to report.
struct TimeOrderStage: Sendable {
    /// Seconds a live fix may run ahead of the elapsed time since the last one (default 5).
    var jumpTolerance: TimeInterval
    /// Consistent fixes that confirm a stepped clock (default 3).
    var confirmations: Int
    /// Set by the `check` that accepted a new timeline: the step in seconds (negative: back).
    private(set) var resynchronized: TimeInterval?

    var last: Date?
    private var lastArrival: Double?
    private var candidate: (time: Date, arrival: Double?, count: Int)?

    init(jumpTolerance: TimeInterval = 5, confirmations: Int = 3) {
        self.jumpTolerance = jumpTolerance
        self.confirmations = confirmations
    }

    /// Checks `location`; `arrival` is when it arrived by a monotonic clock (live), or nil
    /// (a replay, whose gaps are the recording's own).
    mutating func check(_ location: LocationValue, arrival: Double? = nil) -> FixRejection? {
        resynchronized = nil
        let time = location.timestamp
        guard let last else {
            accept(time, arrival)
            return nil
        }
        let step = time.timeIntervalSince(last)
        if step == 0 { return .duplicate }
        var rejection: FixRejection?
        if step < 0 {
            rejection = .backwards(by: -step)
        } else if let arrival, let lastArrival, step > arrival - lastArrival + jumpTolerance {
            rejection = .jumped(ahead: step - (arrival - lastArrival))
        }
        guard let rejection else {
            candidate = nil
            accept(time, arrival)
            return nil
        }
        // Does this fix continue the timeline of the rejected ones before it?
        if let previous = candidate, time > previous.time,
            arrival == nil || previous.arrival == nil
                || time.timeIntervalSince(previous.time) <= arrival! - previous.arrival! + jumpTolerance
        {
            candidate = (time, arrival, previous.count + 1)
        } else {
            candidate = (time, arrival, 1)
        }
        if let confirmed = candidate, confirmed.count >= confirmations {
            candidate = nil
            accept(time, arrival)
            resynchronized = step
            return nil
        }
        return rejection
    }

    private mutating func accept(_ time: Date, _ arrival: Double?) {
        last = time
        lastArrival = arrival
    }

    mutating func reset() {
        last = nil
        lastArrival = nil
        candidate = nil
        resynchronized = nil
    }

    /// A monotonic clock in seconds, for `arrival`.
    static func monotonicNow() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}

/// Stage 2: gpsd's error estimates become CoreLocation accuracies, and each location gets its tier.
///
/// gpsd reports `epx`, `epy`, `epv`, `eps`, `epd` at about 95 % confidence (per axis), and
/// `eph` as a 95 % horizontal radius. Apple's accuracies mean about one standard deviation
/// (68 %). So, with k = 1.96 (the two-sided 95 % point of a normal distribution):
/// - `horizontalAccuracy` = √(epx² + epy²) / k — the 1σ per-axis errors combined as a distance
///   RMS; when epx/epy are missing, `eph / 2` (eph read as a 2DRMS, ≈ 95 %);
/// - `verticalAccuracy` = epv / k, only for 3D fixes with an altitude (2D: −1, altitude
///   invalid). A receiver's altitude is never hidden: with no vertical estimate at all (no epv,
///   no VDOP), `horizontalAccuracy` × 23/15 — gpsd's vertical over horizontal UERE, the ratio
///   its model would give for equal dilutions — and with no horizontal one either,
///   `CLLocationDistanceMax` (altitude valid, its accuracy unknown; `null` in NDJSON);
/// - `speedAccuracy` = eps / k, `courseAccuracy` = epd / k.
/// A fix with no horizontal estimate at all gets `horizontalAccuracy` = `CLLocationDistanceMax`
/// (valid coordinate, unbounded uncertainty; `null` in NDJSON) and the tier `coarse`.
public struct AccuracyStage: Sendable {
    /// gpsd's vertical over horizontal UERE (23 m / 15 m): a vertical accuracy where the
    /// receiver gives no vertical estimate.
    static let verticalOverHorizontal = 23.0 / 15.0

    /// The stage (it keeps nothing).
    public init() {}

    /// The horizontal accuracy (68 %, metres) of a fix, or nil when gpsd gave no estimate.
    static func horizontalAccuracy(_ errors: FixErrors) -> Double? {
        if let x = errors.longitude, let y = errors.latitude {
            return (x * x + y * y).squareRoot() / ReceiverErrorEstimate.confidenceScale
        }
        if let h = errors.horizontal { return h / 2 }
        return nil
    }

    static func classify(horizontalAccuracy: Double?, mode: FixMode) -> AccuracyClass {
        AccuracyClass(horizontalAccuracy: horizontalAccuracy, mode: mode)
    }

    /// Builds the location for a fix that passed validity (coordinates and time present).
    public func location(from fix: Fix, source: LocationOrigin? = nil) -> LocationValue {
        let horizontal = Self.horizontalAccuracy(fix.errors)
        let is3D = fix.mode == .threeDimensional
        let vertical: Double =
            if !is3D || (fix.altitudeMSL == nil && fix.altitudeHAE == nil) {
                -1
            } else if let epv = fix.errors.vertical {
                max(epv / ReceiverErrorEstimate.confidenceScale, .leastNonzeroMagnitude)
            } else if let horizontal {
                max(horizontal * Self.verticalOverHorizontal, .leastNonzeroMagnitude)
            } else {
                CLLocationDistanceMax
            }
        let altitudeMSL = fix.altitudeMSL ?? fix.altitudeHAE.map { $0 - (fix.geoidSeparation ?? 0) } ?? 0
        let altitudeHAE = fix.altitudeHAE ?? fix.altitudeMSL.map { $0 + (fix.geoidSeparation ?? 0) } ?? 0
        return LocationValue(
            coordinate: CLLocationCoordinate2D(latitude: fix.latitude ?? 0, longitude: fix.longitude ?? 0),
            altitude: vertical > 0 ? altitudeMSL : 0,
            ellipsoidalAltitude: vertical > 0 ? altitudeHAE : 0,
            horizontalAccuracy: horizontal ?? CLLocationDistanceMax,
            verticalAccuracy: vertical,
            course: fix.course ?? -1,
            courseAccuracy: fix.course != nil
                ? (fix.errors.course.map { $0 / ReceiverErrorEstimate.confidenceScale } ?? -1) : -1,
            speed: fix.speed ?? -1,
            speedAccuracy: fix.speed != nil
                ? (fix.errors.speed.map { $0 / ReceiverErrorEstimate.confidenceScale } ?? -1) : -1,
            timestamp: fix.time ?? Date(timeIntervalSince1970: 0),
            gnss: GNSSDetails(
                fixMode: fix.mode, quality: fix.quality,
                accuracyClass: Self.classify(horizontalAccuracy: horizontal, mode: fix.mode),
                deviceNumber: fix.deviceNumber),
            origin: source)
    }

    /// True when `location` satisfies `desiredAccuracy` (a `kCLLocationAccuracy*` value or metres).
    static func meets(_ location: LocationValue, desiredAccuracy: CLLocationAccuracy) -> Bool {
        let tier =
            location.gnss?.accuracyClass
            ?? classify(horizontalAccuracy: location.horizontalAccuracy, mode: .threeDimensional)
        if desiredAccuracy < 0 { return tier <= AccuracyClass(desiredAccuracy: desiredAccuracy) }
        return location.horizontalAccuracy >= 0 && location.horizontalAccuracy <= desiredAccuracy
    }
}

/// Stage 3: Apple's two rules for which location of continuous updates is delivered, measured
/// from the last *delivered* one — the engine's, and every face's that delivers one stream of
/// locations to several clients (gpslocd's GeoClue clients, each with its own thresholds).
///
/// - The distance filter: with `distanceFilter` ≤ 0 (`kCLDistanceFilterNone`) every location
///   passes. Otherwise a location passes when there is no delivered location yet, or when its
///   WGS 84 geodesic distance from the last delivered one is ≥ `distanceFilter`, or when its
///   accuracy has improved: its `horizontalAccuracy` is at most half that of the last delivered one.
/// - The minimum interval: with `minimumInterval` > 0 a location passes only when it is at least
///   that long after the last delivered one, by the locations' own timestamps (1 ms of slack for
///   receiver rounding).
///
/// Both must pass. Call `delivered(_:)` only for locations that actually reached the app (after
/// the gate). The thresholds are passed at each location (the engine's configuration may change
/// between them): the filter keeps only what it measures from.
public struct DeliveryFilter: Sendable {
    /// The last location delivered (nil: none since the start or `reset()`).
    public private(set) var lastDelivered: LocationValue?

    /// A filter with no location delivered yet.
    public init() {}

    /// Whether `location` may be delivered under these thresholds.
    public func admits(
        _ location: LocationValue, distanceFilter: CLLocationDistance, minimumInterval: TimeInterval = 0
    ) -> Bool {
        guard let last = lastDelivered else { return true }
        if minimumInterval > 0 && location.timestamp.timeIntervalSince(last.timestamp) < minimumInterval - 0.001 {
            return false
        }
        guard distanceFilter > 0 else { return true }
        if location.horizontalAccuracy >= 0 && last.horizontalAccuracy > 0
            && location.horizontalAccuracy <= last.horizontalAccuracy / 2
        {
            return true
        }
        return Geodesic.wgs84.isDistance(
            latitude1: last.coordinate.latitude, longitude1: last.coordinate.longitude,
            latitude2: location.coordinate.latitude, longitude2: location.coordinate.longitude, atLeast: distanceFilter)
    }

    /// `location` reached the app: the next ones are measured from it.
    public mutating func delivered(_ location: LocationValue) { lastDelivered = location }

    /// Forgets the last delivered location (after `stopUpdatingLocation()`: the next start
    /// delivers at once).
    public mutating func reset() { lastDelivered = nil }
}

/// A fix that came with no error estimate at all (gpsd reports the RMC of a cycle before its GGA
/// and GSA, with no `eph` or `epx`) gets gpsd's own model — DOP × UERE at 95 %: epx = XDOP ×
/// 15 m, epy = YDOP × 15 m, eph = HDOP × 19 m, epv = VDOP × 23 m, or 3.75 / 4.75 / 5.75 m for
/// a DGPS fix (`gpsd_error_model`) — from the newest satellite report's DOPs, when that report is
/// at most `maximumAge` seconds from the fix. So a receiver that reports DOPs never gives a
/// location whose `horizontalAccuracy` is `CLLocationDistanceMax`, except for a fix that comes
/// before its first satellite report. Estimates the fix has are never replaced.
struct DilutionFallbackStage: Sendable {
    static let maximumAge: TimeInterval = 10
    private var latest: SkyView?

    /// A stage with no satellite report yet.
    init() {}

    mutating func remember(_ sky: SkyView) {
        let dop = sky.dilution
        guard dop.horizontal != nil || (dop.x != nil && dop.y != nil) else { return }
        latest = sky
    }

    /// Fills `fix`'s missing estimates, in place (a fix is not copied on its way through the stages).
    func fill(_ fix: inout Fix) {
        guard AccuracyStage.horizontalAccuracy(fix.errors) == nil, let sky = latest else { return }
        if let skyTime = sky.time, let fixTime = fix.time, abs(fixTime.timeIntervalSince(skyTime)) > Self.maximumAge {
            return
        }
        let dgps = fix.quality == .dgps
        let (h, v, p) = dgps ? (3.75, 5.75, 4.75) : (15.0, 23.0, 19.0)
        let dop = sky.dilution
        if let x = dop.x, let y = dop.y {
            fix.errors.longitude = x * h
            fix.errors.latitude = y * h
        }
        if let hdop = dop.horizontal { fix.errors.horizontal = hdop * p }
        if fix.mode == .threeDimensional, fix.errors.vertical == nil, let vdop = dop.vertical {
            fix.errors.vertical = vdop * v
        }
    }
}
