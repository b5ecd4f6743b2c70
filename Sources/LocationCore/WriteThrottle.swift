import FoundationEssentials

/// The rule for how often a kept last location is written: at most once per `interval` for each
/// key (an app; in gpslocd a uid and an app) while locations keep coming — a last location is a
/// hint, and a 10 Hz receiver must not wear the disk — and at once when forced (updates stop, a
/// program leaves). A clock that went back makes a write due. The last-location cache and
/// gpslocd's store both ask here.
///
/// The latest key is kept apart, so the usual case (one app, ten locations a second) compares one
/// key instead of hashing.
public struct WriteThrottle<Key: Hashable & Sendable>: Sendable {
    /// Seconds between writes for one key.
    public let interval: TimeInterval
    private var latest: (key: Key, time: Date)?
    private var others: [Key: Date] = [:]

    /// A throttle that lets one write through per `interval` for each key.
    public init(interval: TimeInterval = LastLocationCache.defaultWriteInterval) { self.interval = interval }

    /// Whether a write for `key` is due at `now` (`force`: always); a due write is recorded as made.
    public mutating func due(_ key: Key, now: Date, force: Bool = false) -> Bool {
        if !force, let last = self[key], now.timeIntervalSince(last) < interval, now >= last { return false }
        self[key] = now
        return true
    }

    /// Forgets `key` (its entry was removed): its next write is due at once.
    public mutating func forget(_ key: Key) { self[key] = nil }

    private subscript(key: Key) -> Date? {
        get { latest?.key == key ? latest?.time : others[key] }
        set {
            if let current = latest, current.key != key {
                others[current.key] = current.time
                others[key] = nil
            }
            latest = newValue.map { (key, $0) }
        }
    }
}
