// A compass model as heading apps write it: the heading as a cardinal direction.
// As written for Apple platforms; only the import changed.
import Foundation
import GPSLocation

final class CompassModel: NSObject, CLLocationManagerDelegate {
    private let manager = CLLocationManager()
    private(set) var directions: [String] = []
    private(set) var headings: [CLLocationDirection] = []
    private(set) var failed: Error?

    func start() {
        manager.delegate = self
        manager.headingFilter = 5
        manager.requestWhenInUseAuthorization()
        manager.startUpdatingHeading()
    }

    func stop() { manager.stopUpdatingHeading() }

    static func cardinal(_ degrees: CLLocationDirection) -> String {
        let names = ["N", "NE", "E", "SE", "S", "SW", "W", "NW"]
        return names[Int((degrees + 22.5) / 45) % 8]
    }

    func locationManager(_ manager: CLLocationManager, didUpdateHeading newHeading: CLHeading) {
        guard newHeading.headingAccuracy >= 0 else { return }
        let heading = newHeading.trueHeading >= 0 ? newHeading.trueHeading : newHeading.magneticHeading
        headings.append(heading)
        directions.append(Self.cardinal(heading))
    }

    func locationManagerShouldDisplayHeadingCalibration(_ manager: CLLocationManager) -> Bool { false }

    func locationManager(_ manager: CLLocationManager, didFailWithError error: Error) { failed = error }
}
