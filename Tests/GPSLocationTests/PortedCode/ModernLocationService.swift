// Apple's iOS 17–18 style, as written for Apple platforms: a service session declares the
// authorization it needs, `CLLocationUpdate.liveUpdates` gives locations and diagnostics, and
// a background activity session keeps it going. The only change for Linux is the import.
import Foundation
import GPSLocation

final class ModernLocationService {
    private(set) var locations: [CLLocation] = []
    private(set) var stationaryUpdates = 0
    private(set) var problems: [String] = []
    private var session: CLServiceSession?
    private var background: CLBackgroundActivitySession?

    func run(_ updates: CLLocationUpdate.Updates, limit: Int, until last: Date? = nil) async throws {
        session = CLServiceSession(authorization: .whenInUse)
        background = CLBackgroundActivitySession()
        defer {
            background?.invalidate()
            session?.invalidate()
        }
        for try await update in updates {
            if update.authorizationDenied || update.authorizationDeniedGlobally || update.authorizationRestricted {
                problems.append("denied")
                break
            }
            if update.insufficientlyInUse { problems.append("not in use") }
            if update.serviceSessionRequired { problems.append("session required") }
            if update.locationUnavailable { problems.append("unavailable") }
            if update.accuracyLimited { problems.append("approximate") }
            if update.isStationary { stationaryUpdates += 1 }
            if let location = update.location {
                locations.append(location)
                if locations.count >= limit || location.timestamp == last { break }
            }
        }
    }
}
