// A geofence watcher as apps write it for region monitoring: a circle, its entry, exit and state.
// As written for Apple platforms; only the import changed.
import Foundation
import GPSLocation

final class GeofenceWatcher: NSObject, CLLocationManagerDelegate {
    private let manager = CLLocationManager()
    private(set) var log: [String] = []

    func watch(latitude: Double, longitude: Double, radius: CLLocationDistance, name: String) {
        manager.delegate = self
        manager.requestAlwaysAuthorization()
        guard CLLocationManager.isMonitoringAvailable(for: CLCircularRegion.self) else {
            log.append("unavailable")
            return
        }
        let region = CLCircularRegion(
            center: CLLocationCoordinate2D(latitude: latitude, longitude: longitude), radius: radius, identifier: name)
        region.notifyOnEntry = true
        region.notifyOnExit = true
        manager.startMonitoring(for: region)
    }

    func stop() {
        for region in manager.monitoredRegions { manager.stopMonitoring(for: region) }
    }

    func locationManager(_ manager: CLLocationManager, didDetermineState state: CLRegionState, for region: CLRegion) {
        log.append("\(region.identifier) \(state == .inside ? "inside" : state == .outside ? "outside" : "unknown")")
    }

    func locationManager(_ manager: CLLocationManager, didEnterRegion region: CLRegion) {
        log.append("entered \(region.identifier)")
    }

    func locationManager(_ manager: CLLocationManager, didExitRegion region: CLRegion) {
        log.append("left \(region.identifier)")
    }

    func locationManager(_ manager: CLLocationManager, monitoringDidFailFor region: CLRegion?, withError error: Error) {
        log.append("failed \(region?.identifier ?? "?"): \(error.localizedDescription)")
    }
}
