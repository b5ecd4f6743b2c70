// A heading provider as apps write it from Apple's documentation: check headingAvailable()
// "before asking the location manager to deliver heading-related events", and say so when not.
// As written for Apple platforms; only the import changed.
import Foundation
import GPSLocation

final class HeadingProvider: NSObject, CLLocationManagerDelegate {
    private let manager = CLLocationManager()
    private(set) var headings: [CLLocationDirection] = []
    private(set) var unavailable = false

    func start() {
        guard CLLocationManager.headingAvailable() else {
            unavailable = true
            return
        }
        manager.delegate = self
        manager.requestWhenInUseAuthorization()
        manager.startUpdatingHeading()
    }

    func stop() { manager.stopUpdatingHeading() }

    func locationManager(_ manager: CLLocationManager, didUpdateHeading newHeading: CLHeading) {
        if newHeading.trueHeading >= 0 { headings.append(newHeading.trueHeading) }
    }

    private(set) var failed: Error?

    func locationManager(_ manager: CLLocationManager, didFailWithError error: Error) { failed = error }
}
