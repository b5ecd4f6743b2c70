import Dispatch
import GNSSCore

/// Holds the factory behind `CLLocationManager.defaultSource()`.
private let defaultSourceFactory = Locked<@Sendable () -> any LocationSource>({
    // Where a broker is in force, gpslocd (it alone reads gpsd); else gpsd directly. A manager
    // has no use for SKY reports: they are left undecoded.
    if let socket = BrokerProtocol.socketPath() {
        return BrokerLocationSource(socketPath: socket, appID: CLLocationManager.sharedAuthorizer.appID)
    }
    return GPSDLocationSource(endpoint: .fromEnvironment(), sky: false)
})

extension CLLocationManager {
    /// What `CLLocationManager()` and `CLLocationUpdate.liveUpdates()` read from: by default a
    /// new `GPSDLocationSource(sky: false)` each time, or a `BrokerLocationSource` where gpslocd is in force. Programs (and tests) can point them elsewhere —
    /// another gpsd endpoint, a replay — without changing CoreLocation-style code.
    public static func setDefaultSource(_ factory: @escaping @Sendable () -> any LocationSource) {
        defaultSourceFactory.withLock { $0 = factory }
    }

    /// A new source from the factory `setDefaultSource(_:)` set (default: gpsd, `GPSLOCATION_GPSD`).
    public static func defaultSource() -> any LocationSource { defaultSourceFactory.withLock { $0 }() }

    /// The one driver behind a manager: its configuration, the authorizer's state and kept
    /// fuzzer, the user's last-location cache, and where its delegate is called: `delegateQueue`
    /// when given, else the creating thread's run loop (`EngineRunner.Delivery.creatingThread`).
    /// `usesFallback`: no run loop could serve, the private queue does.
    static func makeRunner(
        _ source: any LocationSource, _ authorizer: LocationAuthorizer, _ delegateQueue: DispatchQueue?,
        _ clock: any EngineClock
    ) -> (EngineRunner, usesFallback: Bool) {
        let (delivery, usesFallback) =
            delegateQueue.map { (EngineRunner.Delivery.queue($0), false) }
            ?? EngineRunner.Delivery.creatingThread(fallback: DispatchQueue(label: "gpslocation.delegate"))
        var configuration = LocationEngine.Configuration()
        configuration.regionsRequireAlways = true
        configuration.pausesAutomatically = true
        let runner = EngineRunner(
            source: source, configuration: configuration, authorization: authorizer.state,
            fuzzer: authorizer.makeFuzzer(live: source.isLive),
            // Behind gpslocd the app's last location is kept there, not in the user's files.
            lastLocationCache: authorizer.isBrokered ? nil : .user, queue: nil, clock: clock
        )
        runner.delivery = delivery
        return (runner, usesFallback)
    }

    /// Said once a process: a manager made where no run loop runs calls its delegate on a
    /// private queue (Apple's would never call it).
    static let fallbackExplained = Locked(false)
    static let fallbackMessage =
        "CLLocationManager: made on a thread that runs no run loop (a dispatch queue or a Swift concurrency "
        + "thread), so its delegate is called on a private serial queue; make it on the main thread (with "
        + "dispatchMain() or RunLoop.main.run()) to be called there, or pass delegateQueue: to choose"
}

extension CLLocationManager {
    /// Blocks until the steps of the timers fired so far have run and the delegate has had what
    /// they produced (see `EngineRunner.settle`). For tests that move a `ManualEngineClock`.
    package func settle() { runner.settle() }
}
