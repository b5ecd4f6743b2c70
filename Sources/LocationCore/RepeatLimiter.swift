import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// The one rule for a message that would repeat: each key is said at most once a minute. The
/// engine's diagnostics of refused fixes and of values out of physical range, and the gpsd
/// source's `reconnecting` notice, all go through it, so a receiver stuck for an hour is a line
/// a minute in a log or on a broker, not 3,600 (`OneRuleOnePlaceTests` keeps it the one place).
/// Times are the caller's clock (the receiver's time for a recording); a clock that went back
/// says the message again rather than stay silent.
struct RepeatLimiter: Sendable {
    /// At most one message per key in this many seconds.
    static let interval: TimeInterval = 60

    private var lastSaid: [String: Date] = [:]

    init() {}

    /// Whether the message `key` may be said at `clock`; when it may, it counts as said then.
    /// `always` says it whatever the interval (and starts the interval again).
    mutating func allows(_ key: String, at clock: Date, always: Bool = false) -> Bool {
        if !always, let last = lastSaid[key], clock >= last, clock.timeIntervalSince(last) < Self.interval {
            return false
        }
        lastSaid[key] = clock
        return true
    }

    /// Forgets `key` (its next message is said at once).
    mutating func reset(_ key: String) { lastSaid[key] = nil }
}
