import Foundation
import GNSSCore
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// The iOS 17–18 surface against recordings: update diagnostics, stationarity, live
/// configurations, service sessions.
@Suite("CoreLocation iOS 17–18: liveUpdates diagnostics, configurations, sessions", .timeLimit(.minutes(5)))
struct ModernAPITests {
    static func firstUpdate(
        _ authorizer: LocationAuthorizer, source: any LocationSource = FixListSource([], reportsEnd: false)
    ) async throws -> CLLocationUpdate? {
        for try await update in CLLocationUpdate.liveUpdates(source: source, authorizer: authorizer) {
            return update
        }
        return nil
    }

    @Test("each authorization problem has its own diagnostic")
    func diagnostics() async throws {
        let denied = try #require(try await Self.firstUpdate(grantedAuthorizer(.denied)))
        #expect(denied.authorizationDenied && !denied.locationUnavailable && denied.location == nil)
        let restricted = try #require(try await Self.firstUpdate(grantedAuthorizer(.restricted)))
        #expect(restricted.authorizationRestricted && !restricted.authorizationDenied)
        let notInUse = LocationAuthorizer(
            appID: "t", initial: AuthorizationDecision(status: .authorizedWhenInUse), isInUse: false)
        let fixes = try FixtureFixes.load("drive-1hz-gp")
        let idle = try #require(try await Self.firstUpdate(notInUse, source: FixListSource(fixes, reportsEnd: false)))
        #expect(idle.insufficientlyInUse && !idle.locationUnavailable, "\(idle.message ?? "")")
        let ended = try #require(try await Self.firstUpdate(grantedAuthorizer(), source: FixListSource([])))
        #expect(ended.locationUnavailable && ended.reason == .sourceEnded)
        #expect(!ended.serviceSessionRequired)
        var reduced: CLLocationUpdate?
        for try await update in CLLocationUpdate.liveUpdates(
            source: FixListSource(try FixtureFixes.load("clean-1hz-multi"), reportsEnd: false),
            authorizer: grantedAuthorizer(.authorizedAlways, accuracy: .reducedAccuracy))
        where update.location != nil {
            reduced = update
            break
        }
        #expect(reduced?.accuracyLimited == true)
    }

    @Test("isStationary: a receiver standing still for 10 s is stationary until a confirmed move, a moving one never")
    func stationary() async throws {
        let moving = try FixtureFixes.load("clean-1hz-multi")
        // A receiver standing at the recording's first position for 400 s, with a little noise
        // and no speed. Long enough that a consumer slowed by a loaded machine still meets
        // stationary updates: the sequence keeps only the newest waiting update (Apple's
        // latest-wins), and the end-of-recording update replaces whatever was not yet read.
        var random = SplitMix64(seed: 9)
        let anchor = try #require(moving.first { $0.hasPosition })
        let still = (0..<400).map { second -> Fix in
            var fix = anchor
            fix.time = anchor.time.map { $0.addingTimeInterval(Double(second)) }
            fix.latitude = anchor.latitude.map { $0 + (Double(random.next() % 100) - 50) * 1e-7 }
            fix.speed = 0.1
            return fix
        }
        func flags(_ fixes: [Fix], interval: Double) async throws -> [Bool] {
            var result: [Bool] = []
            for try await update in CLLocationUpdate.liveUpdates(
                .automotiveNavigation, source: FixListSource(fixes, interval: interval),
                authorizer: grantedAuthorizer(.authorizedAlways))
            where update.location != nil {
                result.append(update.isStationary)
            }
            return result
        }
        let movingFlags = try await flags(moving, interval: 0.002)
        #expect(!movingFlags.isEmpty && !movingFlags.contains(true))
        let stillFlags = try await flags(still, interval: 0.005)
        #expect(stillFlags.contains(true), "standing still is noticed")
        // The engine's one detector, alone.
        var detector = StationaryDetector()
        func add(_ location: LocationValue) -> Bool {
            (detector.still(location) ?? 0) >= StationaryDetector.minimumDuration
        }
        let start = Date(timeIntervalSince1970: 1_781_510_400)
        func at(_ seconds: Double, metresNorth: Double, speed: Double = 0) -> LocationValue {
            CLLocation(
                coordinate: CLLocationCoordinate2D(latitude: 51 + metresNorth / 111_200, longitude: -2), altitude: 0,
                horizontalAccuracy: 3, verticalAccuracy: -1, course: -1, speed: speed, timestamp: start + seconds
            ).value
        }
        let answers = [
            add(at(0, metresNorth: 0)),
            add(at(9, metresNorth: 4)),  // within 6 m, but not 10 s yet
            add(at(10, metresNorth: -3)),
            add(at(11, metresNorth: 30)),  // one outlier: not a departure (hysteresis)
            add(at(12, metresNorth: 1)),
            add(at(13, metresNorth: 1, speed: 2)),  // moving fast: leaving, not yet confirmed
            add(at(14, metresNorth: 40)),  // a second later still leaving: moving; re-anchors
            add(at(15, metresNorth: 41)),
        ]
        #expect(answers == [false, false, true, true, true, true, false, false])
        // A receiver clock that steps back: a move is still confirmed a second (of the new
        // clock) after it begins, not after the step is made up; settling starts again.
        detector = StationaryDetector()
        let settled = (0...10).map { add(at(Double($0), metresNorth: 0)) }
        #expect(settled.last == true)
        func stationaryAfter(_ location: LocationValue) -> Bool {
            _ = detector.still(location)
            return detector.isStationary
        }
        let moved = [
            stationaryAfter(at(11, metresNorth: 30)),  // leaving
            stationaryAfter(at(-100, metresNorth: 60)),  // the clock stepped back 111 s: leaving again, from here
            stationaryAfter(at(-99, metresNorth: 90)),  // a second later: moving
            stationaryAfter(at(-98, metresNorth: 90)),
        ]
        #expect(moved == [true, true, false, false])
    }

    @Test("LiveConfiguration: .default thins to one a second; navigation gives every location")
    func configurations() async throws {
        let fixes = Array(try FixtureFixes.load("drive-10hz-multi").prefix(400))
        func timestamps(_ configuration: CLLocationUpdate.LiveConfiguration) async -> [Date] {
            // The manager liveUpdates makes, configured as it configures it; a recording delegate
            // (no latest-wins buffer) sees every location.
            let manager = CLLocationManager(
                source: FixListSource(fixes), authorizer: grantedAuthorizer(.authorizedAlways))
            configuration.configure(manager)
            manager.maximumBatch = fixes.count
            let delegate = RecordingDelegate()
            manager.delegate = delegate
            manager.startUpdatingLocation()
            _ = await delegate.waitForError(.sourceEnded)
            manager.stopUpdatingLocation()
            return delegate.locations.map(\.timestamp)
        }
        let thinned = await timestamps(.default)
        let gaps = zip(thinned.dropFirst(), thinned).map { $0.timeIntervalSince($1) }
        #expect(gaps.count > 20 && gaps.allSatisfy { $0 >= 0.999 }, "\(gaps.prefix(5))")
        let every = await timestamps(.automotiveNavigation)
        #expect(every.count > thinned.count * 5)
        let manager = CLLocationManager(source: FixListSource([]), authorizer: grantedAuthorizer())
        CLLocationUpdate.LiveConfiguration.fitness.configure(manager)
        #expect(manager.minimumUpdateInterval == 1 && manager.distanceFilter == 2 && manager.activityType == .fitness)
    }

    @Test("CLServiceSession: asks, then reports the situation at every change; invalidate ends it")
    func serviceSession() async throws {
        let authorizer = LocationAuthorizer(appID: "session-test", isInUse: false)
        let session = CLServiceSession(
            authorization: .always, fullAccuracyPurposeKey: "Navigation", authorizer: authorizer)
        var iterator = session.diagnostics.makeAsyncIterator()
        let first = try #require(try await iterator.next())
        #expect(first.authorizationRequestInProgress && !first.serviceSessionRequired)
        #expect(
            first.message?.contains("`gpsloc auth grant session-test --always`") == true,
            "nobody could be asked: the diagnostic says what to run")
        authorizer.set(AuthorizationDecision(status: .authorizedWhenInUse, accuracy: .reducedAccuracy))
        let second = try #require(try await iterator.next())
        #expect(second.insufficientlyInUse && second.fullAccuracyDenied && second.alwaysAuthorizationDenied)
        authorizer.set(AuthorizationDecision(status: .denied))
        let third = try #require(try await iterator.next())
        #expect(third.authorizationDenied)
        session.invalidate()
        #expect(try await iterator.next() == nil)
        CLBackgroundActivitySession().invalidate()
    }

    @Test("ported iOS 18 code (service session, liveUpdates, background session) runs unchanged")
    func portedModernCode() async throws {
        let fixes = try FixtureFixes.load("drive-1hz-gp")
        let service = ModernLocationService()
        let final = try #require(fixes.last { $0.mode >= .twoDimensional }?.time)
        // Latest wins: a consumer starved of CPU may see fewer than 20, but always the newest.
        try await service.run(
            CLLocationUpdate.liveUpdates(
                .fitness, source: FixListSource(fixes, interval: 0.003, reportsEnd: false),
                authorizer: grantedAuthorizer(.authorizedAlways)),
            limit: 20, until: final)
        #expect(service.locations.count == 20 || service.locations.last?.timestamp == final, "\(service.problems)")
        #expect(service.locations.map(\.timestamp) == service.locations.map(\.timestamp).sorted())
        #expect(!service.problems.contains("session required") && !service.problems.contains("denied"))
    }
}
