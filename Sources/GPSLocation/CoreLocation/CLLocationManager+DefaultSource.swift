import GNSSCore

/// Holds the factory behind `CLLocationManager.defaultSource()`.
private let defaultSourceFactory = Locked<@Sendable () -> any LocationSource>({
    // A manager has no use for SKY reports: they are left undecoded.
    GPSDLocationSource(endpoint: .fromEnvironment(), sky: false)
})

extension CLLocationManager {
    /// What `CLLocationManager()` and `CLLocationUpdate.liveUpdates()` read from: by default a
    /// new `GPSDLocationSource(sky: false)` each time. Programs (and tests) can point them elsewhere —
    /// another gpsd endpoint, a replay — without changing CoreLocation-style code.
    public static func setDefaultSource(_ factory: @escaping @Sendable () -> any LocationSource) {
        defaultSourceFactory.withLock { $0 = factory }
    }

    public static func defaultSource() -> any LocationSource { defaultSourceFactory.withLock { $0 }() }
}
