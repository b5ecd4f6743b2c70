import Foundation
import GPSLocation

#if canImport(GPSLocationTesting)
    import GPSLocationTesting
#endif

/// `gpsloc-bench manager N`: what an app gets end to end — a `CLLocationManager` on a
/// `FixListSource` of N synthetic fixes (as fast as it can), authorized Always, its delegate
/// counting locations, for three distance filters. The same file builds against the code
/// before `LocationEngine`, so the two can be run side by side.
final class CountingDelegate: NSObject, CLLocationManagerDelegate, @unchecked Sendable {
    // @unchecked Sendable: the manager calls its delegate serially on one queue; `done` is a
    // semaphore.
    var count = 0
    let done = DispatchSemaphore(value: 0)

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        count += locations.count
    }

    /// The list's end is the one error expected (matched by its text: the code before the
    /// engine had no `CLError.reason`).
    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        if "\(error)".contains("fixes ended") {
            done.signal()
        } else {
            FileHandle.standardError.write(Data("manager: \(error)\n".utf8))
        }
    }
}

func benchManager(count: Int) {
    let fixes = syntheticDrive(count: count)
    print("manager end to end: \(count) fixes from a FixListSource, delegate counting")
    for filter in [kCLDistanceFilterNone, 5.0, 50.0] {
        var best = Double.infinity
        var delivered = 0
        for _ in 0..<3 {
            let authorizer = LocationAuthorizer(
                appID: "bench", initial: AuthorizationDecision(status: .authorizedAlways), isInUse: true)
            // Its own queue: this thread waits for the delegate below.
            let manager = CLLocationManager(
                source: FixListSource(fixes), authorizer: authorizer, delegateQueue: DispatchQueue(label: "bench"))
            manager.distanceFilter = filter
            manager.maximumLocationAge = 1e12
            manager.maximumBatch = count  // keep every location: the count is the measure
            let delegate = CountingDelegate()
            manager.delegate = delegate
            let start = DispatchTime.now().uptimeNanoseconds
            manager.startUpdatingLocation()
            _ = delegate.done.wait(timeout: .now() + 300)
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            manager.stopUpdatingLocation()
            best = min(best, elapsed)
            delivered = delegate.count
        }
        let label = filter < 0 ? "none" : "\(Int(filter)) m"
        print(String(format: "manager (filter %@): %.0f fixes/s, %d delivered", label, Double(count) / best, delivered))
    }
}
