// Everyday CoreLocation code, as written for Apple platforms. The only change for Linux is
// the import (`import CoreLocation` → `import GPSLocation`). It must compile unchanged.
import Foundation
import GPSLocation
import GPSLocationTesting
import TestSupport

final class LocationService: NSObject, CLLocationManagerDelegate {
    private let manager = CLLocationManager()
    private(set) var latest: CLLocation?
    private(set) var received = 0
    private(set) var failures: [Error] = []
    private(set) var statusLog: [String] = []
    var onUpdate: ((CLLocationCoordinate2D) -> Void)?

    override init() {
        super.init()
        manager.delegate = self
        manager.desiredAccuracy = kCLLocationAccuracyKilometer
        manager.distanceFilter = 5
        manager.activityType = .automotiveNavigation
        manager.pausesLocationUpdatesAutomatically = false
    }

    func start() {
        guard CLLocationManager.locationServicesEnabled() else {
            statusLog.append("services off")
            return
        }
        manager.requestWhenInUseAuthorization()
    }

    func stop() { manager.stopUpdatingLocation() }

    var currentCoordinate: CLLocationCoordinate2D? { manager.location?.coordinate }

    func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
        switch manager.authorizationStatus {
        case .notDetermined:
            statusLog.append("notDetermined")
        case .restricted, .denied:
            statusLog.append("denied")
        case .authorizedAlways, .authorizedWhenInUse:
            switch manager.accuracyAuthorization {
            case .fullAccuracy: statusLog.append("full")
            case .reducedAccuracy: statusLog.append("reduced")
            @unknown default: break
            }
            manager.startUpdatingLocation()
        @unknown default:
            break
        }
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        guard let location = locations.last else { return }
        if location.horizontalAccuracy < 0 { return }
        received += locations.count
        if let previous = latest, location.distance(from: previous) < 1 { return }
        latest = location
        onUpdate?(location.coordinate)
    }

    func locationManager(_ manager: CLLocationManager, didFailWithError error: Error) {
        if let error = error as? CLError, error.code == .denied {
            manager.stopUpdatingLocation()
        }
        failures.append(error)
    }
}
