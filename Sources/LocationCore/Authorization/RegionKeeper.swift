import FoundationEssentials
import GNSSCore
import Glibc

/// The one place monitored regions are kept between runs: `CLLocationManager`'s legacy regions
/// and each `CLMonitor`'s conditions both go through it. It turns the regions and their last
/// states into the store's records and back, writes region events at most once a second
/// (`CoalescedWriter`: thousands of regions make a large file, and an SD card wears) and changes
/// of the set at once, and says each distinct problem once (`report`).
public final class RegionKeeper: Sendable {
    /// One kept region: its circle, last known state and when that was learnt.
    public struct Kept: Sendable, Equatable {
        /// The region's circle.
        public var fence: Geofence
        /// Its state when last known.
        public var presence: RegionPresence
        /// When that state was learnt (nil: never).
        public var date: Date?
        /// `CLRegion.notifyOnEntry`.
        public var notifyOnEntry = true
        /// `CLRegion.notifyOnExit`.
        public var notifyOnExit = true

        /// One kept region.
        public init(
            fence: Geofence, presence: RegionPresence, date: Date?, notifyOnEntry: Bool = true,
            notifyOnExit: Bool = true
        ) {
            self.fence = fence
            self.presence = presence
            self.date = date
            self.notifyOnEntry = notifyOnEntry
            self.notifyOnExit = notifyOnExit
        }
    }

    let store: MonitorStore
    let monitor: String
    let app: String
    private let writer = CoalescedWriter()
    private let lastProblem = Locked<FileProblem?>(nil)
    private let report: @Sendable (FileProblem) -> Void

    /// A keeper of `monitor`'s regions for `app` in `store`; `report` hears each new problem.
    public init(
        store: MonitorStore, monitor: String, app: String, report: @escaping @Sendable (FileProblem) -> Void = { _ in }
    ) {
        self.store = store
        self.monitor = monitor
        self.app = app
        self.report = report
    }

    /// The regions kept by an earlier run (empty when none).
    public func load() throws(MonitorStore.Failure) -> [Kept] {
        try store.conditions(monitor: monitor, app: app).map { condition in
            Kept(
                fence: Geofence(
                    identifier: condition.identifier, latitude: condition.latitude, longitude: condition.longitude,
                    radius: condition.radius),
                presence: RegionPresence(rawValue: condition.state) ?? .unknown, date: condition.date,
                notifyOnEntry: condition.notifyOnEntry, notifyOnExit: condition.notifyOnExit)
        }
    }

    /// Replaces what is kept with `regions`, now (a region added or removed); a problem is
    /// told to `report` (once), and the regions stay monitored.
    public func save(_ regions: [Kept]) {
        do {
            try write(regions)
            lastProblem.withLock { $0 = nil }
        } catch {
            said(error)
        }
    }

    /// Replaces what is kept with `regions`, now, or throws why it cannot (`gpsloc monitor`).
    public func write(_ regions: [Kept]) throws(MonitorStore.Failure) {
        let conditions = regions.map { kept in
            MonitorStore.Condition(
                identifier: kept.fence.identifier, latitude: kept.fence.latitude, longitude: kept.fence.longitude,
                radius: kept.fence.radius, notifyOnEntry: kept.notifyOnEntry, notifyOnExit: kept.notifyOnExit,
                state: kept.presence.rawValue, date: kept.date)
        }.sorted { $0.identifier < $1.identifier }
        try store.save(conditions, monitor: monitor, app: app)
    }

    /// Saves what `snapshot` gives, at most once a second (region events); nil: nothing to
    /// save (its owner is gone).
    public func saveSoon(_ snapshot: @escaping @Sendable () -> [Kept]?) {
        writer.write { [weak self] in
            if let regions = snapshot() { self?.save(regions) }
        }
    }

    /// Whether `saveSoon` still holds a save (forgotten: the owner going away saves itself).
    public func takePending() -> Bool { writer.takePending() }

    /// Tells `report` about `problem`, unless it was the last one told.
    public func said(_ problem: FileProblem) {
        let first = lastProblem.withLock { last in
            defer { last = problem }
            return last != problem
        }
        if first { report(problem) }
    }
}
