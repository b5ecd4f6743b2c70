import Foundation
import GPSLocation

/// `gpsloc watch --once`: one location through `CLLocationManager.requestLocation()`.
enum OnceCommand {
    /// Runs a one-shot request against gpsd; exit 0 with one location, 1 without.
    static func run(
        endpoint: GPSDEndpoint, options: PipelineOptions, authorizer: LocationAuthorizer, sink: UpdateSink,
        timeout: Double
    ) -> Int32 {
        let manager = CLLocationManager(
            source: GPSDLocationSource(endpoint: endpoint, noDataTimeout: .seconds(Int64(max(1, timeout))), sky: false),
            authorizer: authorizer, delegateQueue: DispatchQueue(label: "gpsloc.once"))
        manager.desiredAccuracy = options.desiredAccuracy
        manager.maximumLocationAge = options.maximumAge
        manager.requestLocationTimeout = timeout
        let delegate = OnceDelegate(sink: sink)
        manager.delegate = delegate
        manager.requestLocation()
        let signals = SignalTrap { delegate.done.signal() }
        delegate.done.wait()
        signals.cancel()
        manager.stopUpdatingLocation()
        sink.finish()
        return delegate.status.value
    }

    /// Prints the location or the errors; signals `done` at the one-shot's end.
    final class OnceDelegate: CLLocationManagerDelegate, @unchecked Sendable {
        // @unchecked Sendable: callbacks arrive serially on the manager's delegate queue.
        let sink: UpdateSink
        let done = DispatchSemaphore(value: 0)
        let status = ExitStatus()
        private var finished = false

        init(sink: UpdateSink) { self.sink = sink }

        func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
            guard !finished, let location = locations.last else { return }
            finished = true
            sink.location(location)
            done.signal()
        }

        func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
            guard !finished, let error = error as? CLError else { return }
            sink.error(error)
            // gpsd's own troubles are reported while the request keeps waiting; the request's
            // own end, or a denial, ends it (`endsUpdates`), and so does a request for
            // authorization that cannot be asked here.
            if error.endsUpdates || error.reason == .authorizationRequest || error.reason == .notDetermined {
                finished = true
                status.value = 1
                done.signal()
            }
        }
    }
}
