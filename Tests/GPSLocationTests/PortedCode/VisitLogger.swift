// A visit logger: the places a user stopped at, with arrival and departure.
// As written for Apple platforms; only the import changed.
import Foundation
import GPSLocation

final class VisitLogger: NSObject, CLLocationManagerDelegate {
    private let manager = CLLocationManager()
    private(set) var visits: [(arrival: Date, departure: Date?, place: CLLocationCoordinate2D)] = []

    func start() {
        manager.delegate = self
        manager.requestAlwaysAuthorization()
        manager.startMonitoringVisits()
    }

    func stop() { manager.stopMonitoringVisits() }

    func locationManager(_ manager: CLLocationManager, didVisit visit: CLVisit) {
        let departure = visit.departureDate == Date.distantFuture ? nil : visit.departureDate
        visits.append((visit.arrivalDate, departure, visit.coordinate))
    }
}
