import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// `gpsloc watch --once`: the engine's one-shot (`requestLocation()`'s rule: the first location
/// meeting `--desired-accuracy`, else the best of the last receiver cycle at the timeout),
/// driven by the runner like every other face. It decides nothing itself: the run is over when
/// the engine has stopped (a location settled the request) or an error ended it.
enum OnceCommand {
    /// Runs a one-shot request against gpsd (or gpslocd); exit 0 with one location, 1 without.
    static func run(
        source: any LocationSource, options: PipelineOptions, authorizer: LocationAuthorizer, sink: UpdateSink,
        timeout: Double
    ) -> Int32 {
        let finished = DispatchSemaphore(value: 0)
        // gpsd's own troubles are told while the request waits for gpsd to come back; the
        // request's end, or an app that cannot be asked or is not in use, ends it.
        let session = EngineSession(
            sink: sink, options: options, gate: .following(authorizer), source: source,
            endingReasons: [.notDetermined, .notInUse, .gpsdRefused]
        ) { _ in finished.signal() }
        let signals = SignalTrap { finished.signal() }
        session.startOneShot(timeout: timeout)
        finished.wait()
        signals.cancel()
        session.stop()
        sink.finish()
        return session.delivered > 0 ? 0 : 1
    }
}
