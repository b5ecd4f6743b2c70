// iOS 17's CLMonitor, in the async style of Apple's sample code.
// As written for Apple platforms; only the import changed.
import Foundation
import GPSLocation

actor ModernRegionMonitor {
    private(set) var events: [String] = []

    func run(name: String, center: CLLocationCoordinate2D, radius: CLLocationDistance, until count: Int) async {
        let monitor = await CLMonitor(name)
        await monitor.add(CLMonitor.CircularGeographicCondition(center: center, radius: radius), identifier: "home")
        do {
            for try await event in await monitor.events {
                switch event.state {
                case .satisfied: events.append("\(event.identifier) satisfied")
                case .unsatisfied: events.append("\(event.identifier) unsatisfied")
                default: events.append("\(event.identifier) unknown")
                }
                if events.count >= count { break }
            }
        } catch {
            events.append("error")
        }
        await monitor.remove("home")
    }
}
