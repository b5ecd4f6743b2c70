// A low-power tracker on significant location changes, adding up the distance.
// As written for Apple platforms; only the import changed.
import Foundation
import GPSLocation

final class SignificantChangeTracker: NSObject, CLLocationManagerDelegate {
    private let manager = CLLocationManager()
    private(set) var points: [CLLocation] = []
    private(set) var distance: CLLocationDistance = 0

    func start() {
        manager.delegate = self
        guard CLLocationManager.significantLocationChangeMonitoringAvailable() else { return }
        manager.requestAlwaysAuthorization()
        manager.startMonitoringSignificantLocationChanges()
    }

    func stop() { manager.stopMonitoringSignificantLocationChanges() }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        for location in locations {
            if let last = points.last { distance += location.distance(from: last) }
            points.append(location)
        }
    }
}
