// Keeping the last location across launches with NSKeyedArchiver, the widget-tutorial pattern.
// As written for Apple platforms; only the import changed.
import Foundation
import GPSLocation

final class LastLocationStore: NSObject, CLLocationManagerDelegate {
    private let manager = CLLocationManager()
    private let file: URL
    private(set) var saved = 0

    init(file: URL) {
        self.file = file
        super.init()
        manager.delegate = self
    }

    func start() {
        manager.requestWhenInUseAuthorization()
        manager.startUpdatingLocation()
    }

    func stop() { manager.stopUpdatingLocation() }

    var restored: CLLocation? {
        guard let data = try? Data(contentsOf: file) else { return nil }
        return try? NSKeyedUnarchiver.unarchivedObject(ofClass: CLLocation.self, from: data)
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        guard let location = locations.last,
            let data = try? NSKeyedArchiver.archivedData(withRootObject: location, requiringSecureCoding: true)
        else { return }
        try? data.write(to: file, options: .atomic)
        saved += 1
    }
}
