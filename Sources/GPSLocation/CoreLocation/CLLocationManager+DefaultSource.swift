import Dispatch
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

    /// A new source from the factory `setDefaultSource(_:)` set (default: gpsd, `GPSLOCATION_GPSD`).
    public static func defaultSource() -> any LocationSource { defaultSourceFactory.withLock { $0 }() }

    /// The one driver behind a manager: its configuration, the authorizer's state and kept
    /// fuzzer, the user's last-location cache, the delegate queue.
    static func makeRunner(
        _ source: any LocationSource, _ authorizer: LocationAuthorizer, _ delegateQueue: DispatchQueue?,
        _ clock: any EngineClock
    ) -> EngineRunner {
        var configuration = LocationEngine.Configuration()
        configuration.regionsRequireAlways = true
        configuration.pausesAutomatically = true
        return EngineRunner(
            source: source, configuration: configuration, authorization: authorizer.state,
            fuzzer: authorizer.makeFuzzer(live: source.isLive), reducedAccuracyStore: authorizer.reducedAccuracyStore,
            lastLocationCache: .user, queue: delegateQueue ?? DispatchQueue(label: "gpslocation.delegate"), clock: clock
        )
    }
}

extension CLLocationManager {
    /// Blocks until the steps of the timers fired so far have run and the delegate has had what
    /// they produced (see `EngineRunner.settle`). For tests that move a `ManualEngineClock`.
    package func settle() { runner.settle() }
}
