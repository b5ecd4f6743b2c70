import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// Randomised sequences of status, accuracy and in-use changes interleaved with fixes, checked
/// against an independent model of what may be delivered.
@Suite("authorization gate against a model", .timeLimit(.minutes(5)))
struct AuthorizationModelTests {
    static let statuses: [CLAuthorizationStatus] = [
        .notDetermined, .restricted, .denied, .authorizedWhenInUse, .authorizedAlways,
    ]

    @Test("nothing without authorization, nothing precise under reduced accuracy", arguments: 0..<20)
    func randomisedSequences(seed: UInt64) {
        var random = TestRandom(seed: 1000 + seed)
        let interval = 60.0
        var engine = LocationEngine(
            authorization: AuthorizationState(appID: "model", status: .authorizedAlways), isLive: false,
            fuzzer: LocationFuzzer(appID: "model", secret: .seeded(seed), gridSize: 2000, minimumInterval: interval))
        var status = CLAuthorizationStatus.authorizedAlways
        var accuracy = CLAccuracyAuthorization.fullAccuracy
        var inUse = true
        var time = Date(timeIntervalSince1970: 1_781_510_400)
        var lastReduced: Date?
        var delivered = 0
        var reducedDelivered = 0
        _ = engine.start(.continuous, now: time)
        // The receiver's cycle (one report an epoch) is learnt from a first epoch, which goes when
        // the next begins (`EpochStage`); from then on each fix is its epoch's last and goes at once.
        // Fixes come every 7 s (a steady receiver: an irregular one may wait an epoch more).
        for warmUp in [-7.0, 0] {
            let fix = Fix(
                mode: .threeDimensional, time: time + warmUp, latitude: 51, longitude: -2.5, altitudeHAE: 90,
                altitudeMSL: 40, errors: FixErrors(longitude: 3, latitude: 3, vertical: 6, speed: 1, course: 5))
            _ = engine.handle(.fix(fix), now: time)
        }
        for _ in 0..<500 {
            switch random.next() % 10 {
            case 0:
                status = Self.statuses[Int(random.next() % 5)]
                accuracy = random.next() % 2 == 0 ? .fullAccuracy : .reducedAccuracy
                let state = AuthorizationState(appID: "model", status: status, accuracy: accuracy, isInUse: inUse)
                _ = engine.setAuthorization(state, now: time)
            case 1:
                inUse.toggle()
                let state = AuthorizationState(appID: "model", status: status, accuracy: accuracy, isInUse: inUse)
                _ = engine.setAuthorization(state, now: time)
            default:
                // An app restarts updates after a denial stopped them (as CoreLocation apps do
                // when authorization changes back).
                if engine.mode == .stopped { _ = engine.start(.continuous, now: time) }
                time += 7
                let fix = Fix(
                    mode: .threeDimensional, time: time, latitude: 51 + random.unit() * 0.5,
                    longitude: -2.5 + random.unit() * 0.5,
                    altitudeHAE: 90, altitudeMSL: 40,
                    errors: FixErrors(longitude: 3, latitude: 3, vertical: 6, speed: 1, course: 5),
                    speed: 10, course: 45)
                let precise = AccuracyStage().location(from: fix)
                let allowed = status == .authorizedAlways || (status == .authorizedWhenInUse && inUse)
                let locations = engine.handle(.fix(fix), now: time).compactMap { action -> LocationValue? in
                    action.delivered
                }
                #expect(locations.count <= 1)
                guard let location = locations.first else {
                    if allowed && accuracy == .fullAccuracy {
                        Issue.record("withheld an authorized full-accuracy location (\(status), in use \(inUse))")
                    }
                    if allowed && accuracy == .reducedAccuracy,
                        lastReduced == nil || time.timeIntervalSince(lastReduced!) >= interval
                    {
                        Issue.record("withheld a reduced location although the interval had passed")
                    }
                    continue
                }
                delivered += 1
                #expect(allowed, "delivered while \(status), in use \(inUse)")
                if accuracy == .fullAccuracy {
                    #expect(location.coordinate == precise.coordinate && location.timestamp == precise.timestamp)
                } else {
                    reducedDelivered += 1
                    if let last = lastReduced {
                        #expect(time.timeIntervalSince(last) >= interval, "rate limit broken")
                    }
                    lastReduced = time
                    Self.expectNothingPrecise(location, precise: precise)
                }
            }
        }
        #expect(delivered > 0)
        _ = reducedDelivered
    }

    static func expectNothingPrecise(
        _ location: LocationValue, precise: LocationValue, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(location.gnss?.reduced == true, sourceLocation: sourceLocation)
        #expect(location.coordinate.latitude != precise.coordinate.latitude, sourceLocation: sourceLocation)
        #expect(location.coordinate.longitude != precise.coordinate.longitude, sourceLocation: sourceLocation)
        #expect(location.horizontalAccuracy >= 2000, sourceLocation: sourceLocation)
        #expect(
            location.verticalAccuracy < 0 && location.altitude == 0 && location.ellipsoidalAltitude == 0,
            sourceLocation: sourceLocation)
        #expect(
            location.speed < 0 && location.course < 0 && location.speedAccuracy < 0 && location.courseAccuracy < 0,
            sourceLocation: sourceLocation)
        #expect(
            location.timestamp.timeIntervalSince1970.truncatingRemainder(dividingBy: 60) == 0,
            sourceLocation: sourceLocation)
        #expect(
            location.distance(from: precise) <= location.horizontalAccuracy,
            "the true position is always within the reduced location's accuracy",
            sourceLocation: sourceLocation)
    }

    @Test("a reduced location depends only on the grid cell, not on where in it the device is")
    func snappedToCells() {
        var random = TestRandom(seed: 77)
        var same = 0
        let trials = 400
        for trial in 0..<trials {
            var fuzzer = LocationFuzzer(appID: "cells", secret: .seeded(5), gridSize: 2000, minimumInterval: 0)
            let latitude = 50 + random.unit() * 5
            let longitude = -3 + random.unit() * 5
            let time = Date(timeIntervalSince1970: 1_781_510_400 + Double(trial))
            let a = fuzzer.reduced(CLLocation(latitude: latitude, longitude: longitude).value, now: time)!
            // The same cell most of the time: 20 m apart in a 2 km grid crosses a border ~2 % of the time.
            let b = fuzzer.reduced(
                CLLocation(latitude: latitude + 0.0001, longitude: longitude + 0.0001).value, now: time)!
            if a.coordinate == b.coordinate { same += 1 }
        }
        #expect(Double(same) / Double(trials) > 0.95, "\(same) of \(trials)")
    }

    @Test("with reduced accuracy the distance filter only ever sees grid points")
    func filterOnReducedPositions() throws {
        let fixes = try FixtureFixes.load("drive-10hz-multi")
        var configuration = LocationEngine.Configuration()
        configuration.distanceFilter = 5
        var engine = LocationEngine(
            configuration: configuration,
            authorization: AuthorizationState(appID: "filter", status: .authorizedAlways, accuracy: .reducedAccuracy),
            isLive: false,
            fuzzer: LocationFuzzer(appID: "filter", secret: .seeded(3), gridSize: 2000, minimumInterval: 1))
        _ = engine.start(.continuous, now: Date())
        var delivered: [LocationValue] = []
        for fix in fixes {
            delivered += engine.handle(.fix(fix), now: Date()).compactMap(\.delivered)
        }
        #expect(!delivered.isEmpty)
        for (previous, next) in zip(delivered, delivered.dropFirst()) {
            // Consecutive deliveries are different grid points (a filter on precise positions
            // would deliver the same point again as the car moves 5 m).
            #expect(previous.coordinate != next.coordinate)
        }
        #expect(delivered.allSatisfy { $0.gnss?.reduced == true && $0.horizontalAccuracy >= 2000 })
    }
}
