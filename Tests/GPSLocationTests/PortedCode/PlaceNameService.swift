// "You are in …": the first location, reverse geocoded, as apps show it.
// As written for Apple platforms; only the import changed.
import Foundation
import GPSLocation

final class PlaceNameService: NSObject, CLLocationManagerDelegate, @unchecked Sendable {
    private let manager = CLLocationManager()
    private let geocoder = CLGeocoder()
    private(set) var text: String?
    private(set) var error: Error?

    func start() {
        manager.delegate = self
        manager.desiredAccuracy = kCLLocationAccuracyKilometer
        manager.requestWhenInUseAuthorization()
        manager.startUpdatingLocation()
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        guard let location = locations.last, !geocoder.isGeocoding, text == nil else { return }
        manager.stopUpdatingLocation()
        geocoder.reverseGeocodeLocation(location) { [weak self] placemarks, error in
            guard let self else { return }
            if let place = placemarks?.first {
                self.text = "You are in \(place.locality ?? "?"), \(place.country ?? "?")"
            } else {
                self.error = error
            }
        }
    }
}
