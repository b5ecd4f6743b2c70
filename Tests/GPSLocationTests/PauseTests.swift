import Foundation
import GPSLocationTesting
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #23: live updates pause while the device stays put and resume when it moves
/// (`pausesLocationUpdatesAutomatically`, true by default as on Apple platforms).
@Suite("automatic pause and resume", .timeLimit(.minutes(5)))
struct PauseTests {
    static let start = LocationEngineTests.start

    /// A parked receiver at second `seconds` (speed 0, 3 m accuracy); `moved` metres east.
    static func parked(at seconds: Double, moved: Double = 0) -> Fix {
        Fix(
            mode: .threeDimensional, time: start.addingTimeInterval(seconds), latitude: 51.45,
            longitude: -2.58 + moved / 69_600, altitudeHAE: 90, altitudeMSL: 40,
            errors: FixErrors(longitude: 4, latitude: 4, vertical: 8, speed: 1, course: 5), speed: 0, course: 0)
    }

    /// Parked for `parked` seconds at 1 Hz, then 30 s driving away: what the engine does.
    static func run(
        parked: Int, configure: (inout LocationEngine.Configuration) -> Void
    ) -> (delivered: [Double], pauses: [(Double, Bool)]) {
        var engine = LocationEngineTests.engine(isLive: false) {
            $0.maximumLocationAge = 1e9
            configure(&$0)
        }
        _ = engine.start(.continuous, now: start)
        var delivered: [Double] = []
        var pauses: [(Double, Bool)] = []
        let still: [Fix] = (0..<parked).map { Self.parked(at: Double($0)) }
        let moving: [Fix] = (0..<30).map { Self.parked(at: Double(parked + $0), moved: Double($0 + 1) * 15) }
        let fixes = still + moving
        for fix in fixes {
            let second = fix.time!.timeIntervalSince(start)
            for action in engine.handle(.fix(fix), now: start) {
                switch action {
                case .emit(.locations(let locations)):
                    // By the location's own time: an epoch goes when it is complete (`EpochStage`).
                    delivered += locations.map { $0.timestamp.timeIntervalSince(start) }
                case .emit(.paused(let paused)): pauses.append((second, paused))
                default: break
                }
            }
        }
        return (delivered, pauses)
    }

    @Test("parked for 10 minutes: paused once, nothing while paused, resumed once the move is confirmed")
    func pauseAndResume() {
        let (delivered, pauses) = Self.run(parked: 700) { $0.pausesAutomatically = true }
        // The move starts at 700 s; a second later it is a move, not an outlier (`StationaryDetector`).
        #expect(pauses.map(\.0) == [600, 701] && pauses.map(\.1) == [true, false])
        #expect(delivered.filter { $0 < 700 } == (0..<600).map(Double.init), "every location up to the pause")
        #expect(delivered.filter { $0 >= 700 } == (701..<730).map(Double.init), "every location once moving")
    }

    @Test("the activity type sets the delay: 5 minutes for a vehicle or a walker, never for an aircraft")
    func activityTypes() {
        for (activity, pauseAt) in [
            (CLActivityType.automotiveNavigation, 300.0), (.otherNavigation, 300), (.fitness, 300), (.other, 600),
        ] {
            let (_, pauses) = Self.run(parked: 700) {
                $0.pausesAutomatically = true
                $0.activityType = activity
            }
            #expect(pauses.first?.0 == pauseAt, "\(activity)")
        }
        let (airborne, none) = Self.run(parked: 700) {
            $0.pausesAutomatically = true
            $0.activityType = .airborne
        }
        #expect(none.isEmpty && airborne.count == 730)
        let (off, neither) = Self.run(parked: 700) { $0.pausesAutomatically = false }
        #expect(neither.isEmpty && off.count == 730, "gpsloc's engine: every location")
    }

    final class PauseDelegate: CLLocationManagerDelegate, Sendable {
        let events = Watched<[String]>([])
        func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
            events.withLock { $0 += locations.map { _ in "location" } }
        }
        func locationManagerDidPauseLocationUpdates(_ manager: CLLocationManager) {
            events.withLock { $0.append("pause") }
        }
        func locationManagerDidResumeLocationUpdates(_ manager: CLLocationManager) {
            events.withLock { $0.append("resume") }
        }
        func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
            events.withLock { $0.append("error") }
        }
    }

    @Test("a manager: on by default; the delegate hears the pause and the resume, in order")
    func manager() async throws {
        let still: [Fix] = (0..<400).map { Self.parked(at: Double($0)) }
        let moving: [Fix] = (0..<10).map { Self.parked(at: Double(400 + $0), moved: Double($0 + 1) * 15) }
        let fixes = still + moving
        for pauses in [true, false] {
            let manager = CLLocationManager(
                source: FixListSource(fixes), authorizer: grantedAuthorizer(.authorizedAlways))
            manager.lastLocationCache = nil
            manager.diagnosticsHandler = Diagnostics.discard
            #expect(manager.pausesLocationUpdatesAutomatically, "Apple's default")
            manager.activityType = CLActivityType.fitness
            if !pauses { manager.pausesLocationUpdatesAutomatically = false }
            let delegate = PauseDelegate()
            manager.delegate = delegate
            manager.startUpdatingLocation()
            #expect(await delegate.events.wait(timeout: 60) { $0.last == "error" })
            manager.stopUpdatingLocation()
            let all: [String] = delegate.events.withLock { $0 }
            let events = all.filter { $0 != "error" }
            if pauses {
                // 300 s of locations, the pause, the resume, 9 moving (the first is the move's start).
                #expect(events.count == 311)
                #expect(events[300] == "pause" && events[301] == "resume")
            } else {
                #expect(events.count == 410 && !events.contains("pause"))
            }
        }
    }

    @Test("startUpdatingLocation() while paused resumes at once")
    func restartResumes() {
        var engine = LocationEngineTests.engine(isLive: false) {
            $0.maximumLocationAge = 1e9
            $0.pausesAutomatically = true
            $0.activityType = .fitness
        }
        _ = engine.start(.continuous, now: Self.start)
        var paused = false
        for second in 0...300 {
            for case .emit(.paused(let state)) in engine.handle(.fix(Self.parked(at: Double(second))), now: Self.start)
            {
                paused = state
            }
        }
        #expect(paused)
        let restarted = engine.start(.continuous, now: Self.start)
        #expect(restarted.contains { if case .emit(.paused(false)) = $0 { true } else { false } })
        #expect(LocationEngineTests.delivered(engine.handle(.fix(Self.parked(at: 301)), now: Self.start)).count == 1)
    }
}
