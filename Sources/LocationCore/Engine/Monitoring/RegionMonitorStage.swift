import FoundationEssentials
import GNSSCore
import Glibc

/// A circle on the WGS 84 ellipsoid: the geometry of `CLCircularRegion` and
/// `CLMonitor.CircularGeographicCondition` (degrees, metres).
public struct Geofence: Sendable, Equatable, Codable {
    /// The app's name for the region.
    public var identifier: String
    /// The centre's latitude (degrees).
    public var latitude: Double
    /// The centre's longitude (degrees).
    public var longitude: Double
    /// The radius (metres).
    public var radius: Double

    /// A circle.
    public init(identifier: String, latitude: Double, longitude: Double, radius: Double) {
        self.identifier = identifier
        self.latitude = latitude
        self.longitude = longitude
        self.radius = radius
    }
}

/// Where the device is relative to one region, as far as the engine knows.
public enum RegionPresence: String, Sendable, Equatable, Codable {
    /// Not known, inside the circle, or outside it.
    case unknown, inside, outside
}

/// A change in what is known about one region: the region stage's output.
public struct RegionEvent: Sendable, Equatable {
    /// What changed.
    public enum Kind: String, Sendable {
        /// The state became known (the first time, or again after a gap) without a crossing
        /// being seen, or it became unknown.
        case determined
        /// The device crossed into the region.
        case enter
        /// The device crossed out of the region.
        case exit
    }

    /// Why the region cannot be evaluated (its state is `unknown`).
    public enum Limitation: String, Sendable {
        /// The app has reduced accuracy: no region is evaluated (nothing finer than the
        /// reduced location could be learned from a crossing).
        case accuracyLimited
        /// Legacy region monitoring needs Always authorization, as on Apple platforms.
        case alwaysRequired
        /// The app may not receive locations at all (denied, restricted, not determined, or
        /// When In Use and not in use).
        case notAuthorized
    }

    /// The region's identifier.
    public var identifier: String
    /// What changed.
    public var kind: Kind
    /// The region's state now.
    public var state: RegionPresence
    /// The time of the fix that decided it (for a gap: the moment the gap became too long).
    public var timestamp: Date
    /// Why the region cannot be evaluated, if it cannot.
    public var limitation: Limitation?
}

/// Stage: region monitoring (geofences), fed only with locations that passed the gate.
///
/// **The boundary rule.** A location is *inside* a circle when its whole circle of uncertainty
/// is inside (distance to the centre + `horizontalAccuracy` ≤ radius), *outside* when wholly
/// outside (distance − `horizontalAccuracy` > radius), and *undecided* otherwise (also when its
/// accuracy is unknown). Distances are geodesics on WGS 84 (`Geodesic.wgs84`).
/// - The first decided location determines the initial state at once (`determined`).
/// - A crossing needs the new state on consecutive locations for at least `dwell` seconds (by
///   their timestamps) and at least `minimumLocations` of them; an undecided location or one in
///   the old state starts the count again. The event's time is the location that completed it,
///   so it comes at most one receiver cycle after the `dwell`. A receiver sitting on a boundary
///   therefore produces no events, however its fixes scatter.
/// - No location for `gapTimeout` seconds (by the source's clock): every known state becomes
///   `unknown` (`determined`), without an entry or exit. The next decided location determines
///   it again at once: `determined` when it is the state from before the gap, `enter`/`exit`
///   when it differs (the crossing happened during the gap).
///
/// **Scale.** Circles are indexed in a grid of `cellDegrees` cells, each circle in every cell
/// its box (grown by `indexMargin`) touches. A location with `horizontalAccuracy` ≤
/// `indexMargin` is checked only against the circles of its cell, the circles whose state is
/// not a settled `outside`, and the few that do not fit the grid (near a pole, across the
/// antimeridian, huge); any circle left out is then certainly, and already, outside.
public struct RegionMonitorStage: Sendable {
    static let dwell: TimeInterval = 4
    static let minimumLocations = 3
    static let gapTimeout: TimeInterval = 60
    static let indexMargin: Double = 1_000
    static let cellDegrees: Double = 0.01

    private struct Tracked {
        var fence: Geofence
        var state: RegionPresence = .unknown
        /// The state before the last gap (nil: never determined).
        var lastKnown: RegionPresence?
        var candidate: RegionPresence?
        var candidateSince = Date.distantPast
        var candidateCount = 0
        /// The limitation the app was told of for this region.
        var told: RegionEvent.Limitation?
        var cells: [Int64] = []
        var global = false
    }

    private var slots: [Tracked?] = []
    private var free: [Int] = []
    private var slotByID: [String: Int] = [:]
    private var cells: [Int64: [Int]] = [:]
    private var global: Set<Int> = []
    /// Slots that must be checked wherever the location is: not a settled `outside`.
    private var active: Set<Int> = []
    /// The source's clock at the last location evaluated.
    private(set) var lastLocationClock: Date?
    /// Scratch for one location's candidate slots.
    private var seen: Set<Int> = []

    /// No region monitored.
    public init() {}

    var isEmpty: Bool { slotByID.isEmpty }

    func state(of identifier: String) -> RegionPresence? {
        slotByID[identifier].flatMap { slots[$0]?.state }
    }

    func fence(_ identifier: String) -> Geofence? {
        slotByID[identifier].flatMap { slots[$0]?.fence }
    }

    /// Adds (or replaces) a circle. `assuming`: the state to start from (a persisted one, or
    /// `CLMonitor.add(_:identifier:assuming:)`); `unknown` is determined by the next location.
    /// With `limitation`, the region is told at once (at `time`) that it cannot be evaluated.
    public mutating func add(
        _ fence: Geofence, assuming: RegionPresence = .unknown, limitation: RegionEvent.Limitation? = nil,
        at time: Date = Date(), into events: inout [RegionEvent]
    ) {
        remove(fence.identifier)
        var tracked = Tracked(fence: fence, state: assuming, lastKnown: assuming == .unknown ? nil : assuming)
        let slot: Int
        if let reused = free.popLast() {
            slot = reused
        } else {
            slot = slots.count
            slots.append(nil)
        }
        if let keys = Self.cellKeys(for: fence) {
            tracked.cells = keys
            for key in keys { cells[key, default: []].append(slot) }
        } else {
            tracked.global = true
            global.insert(slot)
        }
        slots[slot] = tracked
        slotByID[fence.identifier] = slot
        if assuming != .outside { active.insert(slot) }
        if let limitation { limit(slot, limitation, at: time, into: &events) }
    }

    mutating func remove(_ identifier: String) {
        guard let slot = slotByID.removeValue(forKey: identifier), let tracked = slots[slot] else { return }
        for key in tracked.cells {
            cells[key]?.removeAll { $0 == slot }
            if cells[key]?.isEmpty == true { cells[key] = nil }
        }
        global.remove(slot)
        active.remove(slot)
        slots[slot] = nil
        free.append(slot)
    }

    /// Forgets the clock (monitoring stopped and restarted): states are kept.
    mutating func resetClock() { lastLocationClock = nil }

    /// A location that passed the gate, at the source's clock `clock`. `limitation`: when set,
    /// no region is evaluated; each is told once that its state is unknown, and why.
    public mutating func observe(
        _ location: LocationValue, clock: Date, limitation: RegionEvent.Limitation?, into events: inout [RegionEvent]
    ) {
        expireIfSilent(clock: clock, into: &events)
        lastLocationClock = clock
        if let limitation {
            for slot in slots.indices { limit(slot, limitation, at: location.timestamp, into: &events) }
            return
        }
        let latitude = location.coordinate.latitude
        let longitude = location.coordinate.longitude
        // Unknown accuracy (negative, NaN): no circle of uncertainty, so nothing is decided.
        guard location.horizontalAccuracy >= 0 else { return }
        let accuracy = location.horizontalAccuracy
        if accuracy > Self.indexMargin || abs(latitude) >= 89 {
            for slot in slots.indices where slots[slot] != nil {
                evaluate(slot, latitude, longitude, accuracy, location.timestamp, into: &events)
            }
            return
        }
        seen.removeAll(keepingCapacity: true)
        if let near = cells[Self.cellKey(latitude: latitude, longitude: longitude)] { seen.formUnion(near) }
        seen.formUnion(active)
        seen.formUnion(global)
        // Evaluated in slot order, so events of one location come in a stable order.
        for slot in seen.sorted() {
            evaluate(slot, latitude, longitude, accuracy, location.timestamp, into: &events)
        }
    }

    /// The source's clock passed `clock` with no location: after `gapTimeout`, every known
    /// state becomes unknown.
    mutating func expireIfSilent(clock: Date, into events: inout [RegionEvent]) {
        guard let last = lastLocationClock, clock.timeIntervalSince(last) >= Self.gapTimeout else { return }
        let when = last.addingTimeInterval(Self.gapTimeout)
        for slot in slots.indices {
            guard var tracked = slots[slot] else { continue }
            tracked.candidate = nil
            if tracked.state != .unknown {
                tracked.lastKnown = tracked.state
                tracked.state = .unknown
                events.append(
                    RegionEvent(
                        identifier: tracked.fence.identifier, kind: .determined, state: .unknown, timestamp: when))
            }
            slots[slot] = tracked
            active.insert(slot)
        }
        lastLocationClock = nil
    }

    private mutating func limit(
        _ slot: Int, _ limitation: RegionEvent.Limitation, at time: Date, into events: inout [RegionEvent]
    ) {
        guard var tracked = slots[slot], tracked.told != limitation else { return }
        tracked.told = limitation
        if tracked.state != .unknown { tracked.lastKnown = tracked.state }
        tracked.state = .unknown
        tracked.candidate = nil
        slots[slot] = tracked
        active.insert(slot)
        events.append(
            RegionEvent(
                identifier: tracked.fence.identifier, kind: .determined, state: .unknown, timestamp: time,
                limitation: limitation))
    }

    private mutating func evaluate(
        _ slot: Int, _ latitude: Double, _ longitude: Double, _ accuracy: Double, _ time: Date,
        into events: inout [RegionEvent]
    ) {
        guard var tracked = slots[slot] else { return }
        tracked.told = nil
        let fence = tracked.fence
        let distance = Geodesic.wgs84.distance(
            latitude1: fence.latitude, longitude1: fence.longitude, latitude2: latitude, longitude2: longitude)
        let decided: RegionPresence? =
            distance + accuracy <= fence.radius ? .inside : (distance - accuracy > fence.radius ? .outside : nil)
        defer {
            slots[slot] = tracked
            if tracked.state == .outside && tracked.candidate == nil {
                active.remove(slot)
            } else {
                active.insert(slot)
            }
        }
        guard let decided else {
            tracked.candidate = nil
            return
        }
        if tracked.state == .unknown {
            // Known at once: the first time, or again after a gap or a limitation.
            let kind: RegionEvent.Kind =
                switch (tracked.lastKnown, decided) {
                case (.outside?, .inside): .enter
                case (.inside?, .outside): .exit
                default: .determined
                }
            tracked.state = decided
            tracked.lastKnown = decided
            tracked.candidate = nil
            events.append(RegionEvent(identifier: fence.identifier, kind: kind, state: decided, timestamp: time))
            return
        }
        guard decided != tracked.state else {
            tracked.candidate = nil
            return
        }
        if tracked.candidate != decided || time < tracked.candidateSince {
            tracked.candidate = decided
            tracked.candidateSince = time
            tracked.candidateCount = 1
            return
        }
        tracked.candidateCount += 1
        guard tracked.candidateCount >= Self.minimumLocations,
            time.timeIntervalSince(tracked.candidateSince) >= Self.dwell
        else { return }
        tracked.state = decided
        tracked.lastKnown = decided
        tracked.candidate = nil
        events.append(
            RegionEvent(
                identifier: fence.identifier, kind: decided == .inside ? .enter : .exit, state: decided, timestamp: time
            ))
    }

    // MARK: The grid

    private static func cellKey(latitude: Double, longitude: Double) -> Int64 {
        let row = Int64((latitude / cellDegrees).rounded(.down))
        let column = Int64((longitude / cellDegrees).rounded(.down))
        return row << 32 | (column & 0xFFFF_FFFF)
    }

    /// The cells a circle's box (grown by `indexMargin`) touches; nil when it does not fit the
    /// grid (near a pole, across the antimeridian, or more than 400 cells).
    private static func cellKeys(for fence: Geofence) -> [Int64]? {
        let reach = fence.radius + indexMargin
        // Degrees of latitude are at least 110.5 km; of longitude at least 111.3 km × cos(latitude).
        let latitudeReach = reach / 110_500
        let south = fence.latitude - latitudeReach
        let north = fence.latitude + latitudeReach
        guard south > -88, north < 88 else { return nil }
        let widest = max(abs(south), abs(north))
        let longitudeReach = reach / (111_000 * cos(widest * .pi / 180))
        let west = fence.longitude - longitudeReach
        let east = fence.longitude + longitudeReach
        guard west > -180, east < 180 else { return nil }
        let rows = Int64((south / cellDegrees).rounded(.down))...Int64((north / cellDegrees).rounded(.down))
        let columns = Int64((west / cellDegrees).rounded(.down))...Int64((east / cellDegrees).rounded(.down))
        guard rows.count * columns.count <= 400 else { return nil }
        var keys: [Int64] = []
        keys.reserveCapacity(rows.count * columns.count)
        for row in rows { for column in columns { keys.append(row << 32 | (column & 0xFFFF_FFFF)) } }
        return keys
    }
}
