import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// An independent model of the documented rules, written separately from the stages:
/// Vincenty's inverse formula for distance (accurate to well under a millimetre on these
/// short lines), and the accuracy conversion spelled out by hand.
enum IndependentModel {
    static func vincenty(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let a = 6_378_137.0
        let f = 1 / 298.257_223_563
        let b = a * (1 - f)
        let rad = Double.pi / 180
        let L = (lon2 - lon1) * rad
        let U1 = atan((1 - f) * tan(lat1 * rad))
        let U2 = atan((1 - f) * tan(lat2 * rad))
        let (sinU1, cosU1, sinU2, cosU2) = (sin(U1), cos(U1), sin(U2), cos(U2))
        var lambda = L
        var (sinSigma, cosSigma, sigma, cos2Alpha, cos2SigmaM) = (0.0, 0.0, 0.0, 0.0, 0.0)
        for _ in 0..<200 {
            let (sinLambda, cosLambda) = (sin(lambda), cos(lambda))
            sinSigma =
                ((cosU2 * sinLambda) * (cosU2 * sinLambda)
                + (cosU1 * sinU2 - sinU1 * cosU2 * cosLambda) * (cosU1 * sinU2 - sinU1 * cosU2 * cosLambda))
                .squareRoot()
            if sinSigma == 0 { return 0 }
            cosSigma = sinU1 * sinU2 + cosU1 * cosU2 * cosLambda
            sigma = atan2(sinSigma, cosSigma)
            let sinAlpha = cosU1 * cosU2 * sinLambda / sinSigma
            cos2Alpha = 1 - sinAlpha * sinAlpha
            cos2SigmaM = cos2Alpha != 0 ? cosSigma - 2 * sinU1 * sinU2 / cos2Alpha : 0
            let C = f / 16 * cos2Alpha * (4 + f * (4 - 3 * cos2Alpha))
            let previous = lambda
            lambda =
                L + (1 - C) * f * sinAlpha
                * (sigma + C * sinSigma * (cos2SigmaM + C * cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM)))
            if abs(lambda - previous) < 1e-13 { break }
        }
        let u2 = cos2Alpha * (a * a - b * b) / (b * b)
        let A = 1 + u2 / 16384 * (4096 + u2 * (-768 + u2 * (320 - 175 * u2)))
        let B = u2 / 1024 * (256 + u2 * (-128 + u2 * (74 - 47 * u2)))
        let deltaSigma =
            B * sinSigma
            * (cos2SigmaM + B / 4
                * (cosSigma * (-1 + 2 * cos2SigmaM * cos2SigmaM)
                    - B / 6 * cos2SigmaM * (-3 + 4 * sinSigma * sinSigma) * (-3 + 4 * cos2SigmaM * cos2SigmaM)))
        return b * A * (sigma - deltaSigma)
    }

    static func horizontal(_ fix: Fix) -> Double? {
        if let x = fix.errors.longitude, let y = fix.errors.latitude { return sqrt(x * x + y * y) / 1.96 }
        return fix.errors.horizontal.map { $0 / 2 }
    }

    /// The times of the fixes the rules say are delivered, in order.
    static func expectedDeliveries(_ fixes: [Fix], filter: Double, maximumAge: Double = 10) -> [Date] {
        var latest = Date.distantPast
        var last: (lat: Double, lon: Double, h: Double?)?
        var passed: (time: Date, mode: Int, h: Double)?
        var result: [Date] = []
        for fix in fixes {
            if let t = fix.time, t > latest { latest = t }
            guard fix.mode.rawValue >= 2, let lat = fix.latitude, let lon = fix.longitude, let t = fix.time,
                latest.timeIntervalSince(t) <= maximumAge
            else { continue }
            let h = horizontal(fix)
            // Time order: strictly increasing; the first report of an epoch wins.
            if let p = passed, t <= p.time { continue }
            passed = (t, fix.mode.rawValue, h ?? 0)
            var deliver = true
            if filter > 0, let previous = last {
                let improved = h != nil && previous.h != nil && previous.h! > 0 && h! <= previous.h! / 2
                deliver = improved || vincenty(previous.lat, previous.lon, lat, lon) >= filter
            }
            if deliver {
                result.append(t)
                last = (lat, lon, h)
            }
        }
        return result
    }
}

@Suite("CLLocationManager", .timeLimit(.minutes(5)))
struct ManagerTests {
    static let filters: [Double] = [kCLDistanceFilterNone, 5, 50, 500]
    /// Every documented constant; under Thread Sanitizer the finest and a coarse one.
    static let accuracies: [Double] = Conditions.sampled([
        kCLLocationAccuracyBestForNavigation, kCLLocationAccuracyBest, kCLLocationAccuracyNearestTenMeters,
        kCLLocationAccuracyHundredMeters, kCLLocationAccuracyKilometer, kCLLocationAccuracyThreeKilometers,
    ]) { $0 == kCLLocationAccuracyBest || $0 == kCLLocationAccuracyKilometer }

    @Test(
        "delivers exactly what the documented rules predict", arguments: filters, ["drive-1hz-gp", "drive-10hz-multi"])
    func deliversWhatTheRulesPredict(filter: Double, fixture: String) async throws {
        let fixes = try FixtureFixes.load(fixture)
        let expected = IndependentModel.expectedDeliveries(fixes, filter: filter)
        #expect(!expected.isEmpty)
        for accuracy in Self.accuracies {
            let manager = CLLocationManager(source: FixListSource(fixes), authorizer: grantedAuthorizer())
            let delegate = RecordingDelegate()
            manager.delegate = delegate
            manager.distanceFilter = filter
            manager.desiredAccuracy = accuracy
            manager.maximumBatch = .max  // the list arrives faster than any delegate: keep every location
            manager.startUpdatingLocation()
            // The list's end comes after its last location: then nothing more can come. (A wait for
            // an event that must come: 3,000 fixes under Thread Sanitizer on a busy machine took
            // more than the default 10 s in ci28; the bound only limits a hang.)
            #expect(await delegate.wait(timeout: 180) { $0.errors.contains { $0.reason == .sourceEnded } })
            manager.stopUpdatingLocation()
            let delivered = delegate.locations.map(\.timestamp)
            #expect(
                delivered == expected,
                "filter \(filter), desiredAccuracy \(accuracy): \(delivered.count) vs \(expected.count)")
            // The drives start without a fix and have a tunnel: each is reported once, nothing else.
            // The end of the list may be reported too, if it came before the stop.
            let errors = delegate.errors.filter { $0.reason != .sourceEnded }
            #expect(errors.count == 2 && errors.allSatisfy { $0.reason == .stale }, "\(delegate.errors)")
            #expect(manager.location?.timestamp == expected.last)
        }
    }

    @Test("delegate calls are serial, on delegateQueue, oldest first")
    func serialOnQueue() async throws {
        let fixes = try FixtureFixes.load("drive-10hz-multi")
        let queue = DispatchQueue(label: "test.delegate.queue")
        let key = DispatchSpecificKey<Bool>()
        queue.setSpecific(key: key, value: true)
        let manager = CLLocationManager(
            source: FixListSource(fixes), authorizer: grantedAuthorizer(), delegateQueue: queue)
        let delegate = RecordingDelegate(expectedQueue: key)
        delegate.callbackDelay = 0.002
        manager.delegate = delegate
        manager.maximumBatch = .max
        manager.startUpdatingLocation()
        let expected = IndependentModel.expectedDeliveries(fixes, filter: kCLDistanceFilterNone)
        #expect(await delegate.wait { $0.locations.count >= expected.count })
        manager.stopUpdatingLocation()
        #expect(delegate.wrongQueue == 0)
        #expect(delegate.overlap == 0)
        #expect(delegate.batches.allSatisfy { !$0.isEmpty })
        let times = delegate.locations.map(\.timestamp)
        #expect(times == times.sorted())
        #expect(delegate.batches.count < times.count, "a slow delegate should get batches")
        #expect(delegate.authorizationCalls == 1)
        #expect(delegate.deprecatedCalls == 1)
    }

    @Test("no callback of any kind after stopUpdatingLocation() returns")
    func nothingAfterStop() async throws {
        let fixes = try FixtureFixes.load("drive-10hz-multi")
        for _ in 0..<20 {
            let manager = CLLocationManager(
                source: FixListSource(fixes, interval: 0.0005), authorizer: grantedAuthorizer())
            let delegate = RecordingDelegate()
            manager.delegate = delegate
            manager.startUpdatingLocation()
            #expect(await delegate.wait { $0.locations.count > 5 })
            manager.stopUpdatingLocation()
            let count = delegate.callbackCount
            // The source is stopped and the engine's generation moved on: whatever could still
            // be queued for the delegate is run by now — and must add nothing.
            await delegateQueueFlushed(manager)
            #expect(delegate.callbackCount == count)
        }
    }

    @Test("requestLocation: one location meeting desiredAccuracy, then nothing")
    func requestLocationMeetsAccuracy() async throws {
        let fixes = try FixtureFixes.load("drive-1hz-gp")
        let manager = CLLocationManager(source: FixListSource(fixes), authorizer: grantedAuthorizer())
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.desiredAccuracy = kCLLocationAccuracyHundredMeters
        manager.requestLocation()
        #expect(await delegate.wait { !$0.locations.isEmpty })
        // The one-shot is over: the engine stopped its source, so nothing more can be queued.
        #expect(!manager.runner.isRunning)
        await delegateQueueFlushed(manager)
        #expect(delegate.locations.count == 1)
        #expect(delegate.locations[0].horizontalAccuracy <= 100)
        let firstGoodEnough = fixes.first {
            $0.mode.rawValue >= 2 && $0.time != nil && $0.latitude != nil
                && (IndependentModel.horizontal($0) ?? .infinity) <= 100
        }
        #expect(delegate.locations[0].timestamp == firstGoodEnough?.time)
    }

    @Test("requestLocation: after the timeout, the best location seen")
    func requestLocationSettlesForBest() async throws {
        let fixes = try FixtureFixes.load("drive-1hz-gp")
        // The timeout is on the engine's clock, moved by the test once every fix is in: on a busy
        // machine under Thread Sanitizer a wall-clock 0.5 s once passed before the first fix.
        let clock = ManualEngineClock()
        let source = FixListSource(fixes, reportsEnd: false)
        let manager = CLLocationManager(
            source: source, authorizer: grantedAuthorizer(), delegateQueue: nil, clock: clock)
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.desiredAccuracy = 0.01  // unattainable
        manager.requestLocationTimeout = 0.5
        manager.requestLocation()
        #expect(await source.wait { $0.sent == $0.count })
        await settled(manager)
        #expect(delegate.locations.isEmpty, "nothing before the timeout")
        clock.advance(by: 0.5)
        await settled(manager)
        #expect(await delegate.wait { !$0.locations.isEmpty })
        #expect(!manager.runner.isRunning)
        await delegateQueueFlushed(manager)
        #expect(delegate.locations.count == 1)
        let best = fixes.compactMap { IndependentModel.horizontal($0) }.min()!
        let first = try #require(delegate.locations.first)
        #expect(abs(first.horizontalAccuracy - best) < 1e-9)
        #expect(delegate.errors.isEmpty)
    }

    @Test("requestLocation: with no fix at all, CLError.locationUnknown")
    func requestLocationFails() async {
        let manager = CLLocationManager(source: FixListSource([Fix(mode: .noFix)]), authorizer: grantedAuthorizer())
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.requestLocationTimeout = 0.2
        manager.requestLocation()
        #expect(await delegate.wait { !$0.errors.isEmpty })
        #expect(delegate.errors.map(\.code) == [.locationUnknown])
        #expect(delegate.locations.isEmpty)
    }

    @Test("starting while notDetermined without a request is an error, not silence")
    func notDeterminedIsReported() async throws {
        let fixes = try FixtureFixes.load("drive-1hz-gp")
        let manager = CLLocationManager(
            source: FixListSource(fixes), authorizer: LocationAuthorizer(appID: "quiet", isInUse: true))
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.startUpdatingLocation()
        // Every fix of the list has reached the engine once its end is reported.
        #expect(await delegate.wait { $0.errors.contains { $0.reason == .sourceEnded } })
        manager.stopUpdatingLocation()
        #expect(delegate.errors.first?.code == .promptDeclined)
        #expect(delegate.errors.first?.reason == .authorizationRequest)
        #expect(delegate.locations.isEmpty, "nothing is delivered without authorization")
    }

    @Test("a request with a prompt grants, and the delegate hears of it")
    func promptGrants() async throws {
        let fixes = try FixtureFixes.load("drive-1hz-gp")
        let authorizer = LocationAuthorizer(
            appID: "asker", usageDescription: "tests",
            prompt: { _, _ in AuthorizationDecision(status: .authorizedWhenInUse) },
            isInUse: true)
        let manager = CLLocationManager(source: FixListSource(fixes), authorizer: authorizer)
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.requestWhenInUseAuthorization()
        #expect(manager.authorizationStatus == .authorizedWhenInUse)
        manager.requestAlwaysAuthorization()  // one upgrade is allowed; the prompt says when-in-use again: no change
        manager.startUpdatingLocation()
        #expect(await delegate.wait { $0.locations.count > 10 })
        manager.stopUpdatingLocation()
        #expect(delegate.authorizationCalls == 2)
    }

    @Test("denied: updates end with CLError.denied and nothing is delivered")
    func deniedEnds() async throws {
        let fixes = try FixtureFixes.load("drive-1hz-gp")
        let manager = CLLocationManager(source: FixListSource(fixes), authorizer: grantedAuthorizer(.denied))
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.startUpdatingLocation()
        #expect(await delegate.wait { !$0.errors.isEmpty })
        #expect(delegate.errors.map(\.code) == [.denied])
        #expect(delegate.locations.isEmpty)
    }

    @Test("2D fixes have no valid altitude; accuracies follow the documented conversion")
    func accuracyConversion() throws {
        let fix = Fix(
            mode: .twoDimensional, time: Date(), latitude: 51, longitude: -2, altitudeMSL: 40,
            errors: FixErrors(longitude: 3, latitude: 4, vertical: 9.8, speed: 1.96))
        let location = AccuracyStage().location(from: fix)
        #expect(abs(location.horizontalAccuracy - 5 / 1.96) < 1e-12)
        #expect(location.verticalAccuracy == -1)
        #expect(location.altitude == 0 && location.ellipsoidalAltitude == 0)
        #expect(location.speed == -1 && location.speedAccuracy == -1)
        #expect(location.gnss?.accuracyClass == .best)  // 2.55 m, but 2D cannot be bestForNavigation
        var fix3D = fix
        fix3D.mode = .threeDimensional
        fix3D.speed = 3
        let location3D = AccuracyStage().location(from: fix3D)
        #expect(abs(location3D.verticalAccuracy - 5) < 1e-12)
        #expect(location3D.altitude == 40)
        #expect(location3D.speedAccuracy == 1)
        #expect(location3D.gnss?.accuracyClass == .bestForNavigation)
        let onlyEph = AccuracyStage().location(
            from: Fix(
                mode: .threeDimensional, time: Date(), latitude: 1, longitude: 1, errors: FixErrors(horizontal: 30)))
        #expect(onlyEph.horizontalAccuracy == 15)
        #expect(onlyEph.gnss?.accuracyClass == .hundredMeters)
        let unknown = AccuracyStage().location(
            from: Fix(mode: .threeDimensional, time: Date(), latitude: 1, longitude: 1))
        #expect(unknown.horizontalAccuracy == CLLocationDistanceMax)
        #expect(unknown.gnss?.accuracyClass == .coarse)
    }

    @Test("validity rejects what is not a position")
    func validity() {
        let stage = ValidityStage(maximumAge: 10)
        let now = Date(timeIntervalSince1970: 1_000_000)
        #expect(stage.check(Fix(mode: .noFix, time: now, latitude: 1, longitude: 1), now: now) == .noFix(.noFix))
        #expect(stage.check(Fix(mode: .twoDimensional, time: now, latitude: 1), now: now) == .missingCoordinate)
        #expect(
            stage.check(Fix(mode: .twoDimensional, time: now, latitude: 91, longitude: 1), now: now)
                == .outOfRange(latitude: 91, longitude: 1))
        #expect(stage.check(Fix(mode: .twoDimensional, latitude: 1, longitude: 1), now: now) == .missingTime)
        #expect(
            stage.check(Fix(mode: .twoDimensional, time: now - 11, latitude: 1, longitude: 1), now: now)
                == .stale(age: 11))
        #expect(stage.check(Fix(mode: .twoDimensional, time: now - 10, latitude: 90, longitude: -180), now: now) == nil)
    }
}
