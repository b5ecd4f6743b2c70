// Everyday CoreLocation daemon code, as written for Apple platforms; the only change for Linux
// is the import. It uses the plain `CLLocationManager()`: the app is this executable's name,
// authorization comes from the administrator's policy or `gpsloc auth grant ported-daemon
// --always`, the receiver from gpsd (`GPSLOCATION_GPSD`, default 127.0.0.1:2947). Each
// location and each error is one line on stdout; SIGTERM stops it. The test suite runs it
// against a real gpsd before and after a grant.
import Foundation
import GPSLocation

final class Tracker: NSObject, CLLocationManagerDelegate {
    let manager = CLLocationManager()

    override init() {
        super.init()
        manager.delegate = self
        manager.desiredAccuracy = kCLLocationAccuracyBest
        manager.requestAlwaysAuthorization()
        manager.startUpdatingLocation()
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        for location in locations {
            let simulated = location.sourceInformation?.isSimulatedBySoftware == true ? " (simulated)" : ""
            say(
                String(
                    format: "location %.6f %.6f ±%.0f m%@", location.coordinate.latitude,
                    location.coordinate.longitude, location.horizontalAccuracy, simulated))
        }
    }

    func locationManager(_ manager: CLLocationManager, didFailWithError error: Error) {
        let nsError = error as NSError
        switch error {
        case CLError.denied:
            say("denied \(nsError.domain) \(nsError.code): \(error.localizedDescription)")
        default:
            say("error \(nsError.domain) \(nsError.code): \(error.localizedDescription)")
        }
    }

    func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
        say("authorization \(manager.authorizationStatus.rawValue)")
    }

    func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }
}

let tracker = Tracker()
signal(SIGTERM, SIG_IGN)
let termination = DispatchSource.makeSignalSource(signal: SIGTERM, queue: .main)
termination.setEventHandler {
    tracker.manager.stopUpdatingLocation()
    exit(0)
}
termination.resume()
dispatchMain()
