// Written the way app code is written for Apple platforms: only `import GPSLocation` where the
// app had `import CoreLocation` — no `import Foundation` (it comes with it, as with CoreLocation).
import GNSSCore
import GPSLocation
import GPSLocationTesting
import Testing

/// A region subclass with archiving, as apps keep their geofences.
final class DepotRegion: CLCircularRegion, @unchecked Sendable {
    let depotNumber: Int

    init(depotNumber: Int, center: CLLocationCoordinate2D) {
        self.depotNumber = depotNumber
        super.init(center: center, radius: 150, identifier: "depot-\(depotNumber)")
    }

    required init?(coder: NSCoder) {
        depotNumber = coder.decodeInteger(forKey: "depotNumber")
        super.init(coder: coder)
    }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(depotNumber, forKey: "depotNumber")
    }

    override class var supportsSecureCoding: Bool { true }
}

/// A delegate of the kind found in apps: heading, ranging, pause and resume.
final class CompassDelegate: NSObject, CLLocationManagerDelegate, @unchecked Sendable {
    // @unchecked Sendable: written on the manager's delegate queue, read after it is flushed.
    var errors: [CLError] = []
    var rangingErrors: [CLError] = []
    var headings: [CLHeading] = []
    func locationManager(_ manager: CLLocationManager, didUpdateHeading newHeading: CLHeading) {
        headings.append(newHeading)
    }
    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        if let error = error as? CLError { errors.append(error) }
    }
    func locationManager(
        _ manager: CLLocationManager, didFailRangingFor constraint: CLBeaconIdentityConstraint, error: any Error
    ) {
        if let error = error as? CLError { rangingErrors.append(error) }
    }
}

@Suite("CoreLocation code from apps compiles and is told what Linux cannot do", .timeLimit(.minutes(5)))
struct AppleAPICompatibilityTests {
    static let location = CLLocation(
        coordinate: CLLocationCoordinate2D(latitude: 51.4539, longitude: -2.5973), altitude: 45.5,
        ellipsoidalAltitude: 93.7, horizontalAccuracy: 3.2, verticalAccuracy: 4.1, course: 72, courseAccuracy: 5,
        speed: 13.4, speedAccuracy: 0.4, timestamp: Date(timeIntervalSince1970: 1_781_000_000),
        gnss: GNSSDetails(
            fixMode: .threeDimensional, quality: .gps, accuracyClass: .best, reduced: false, device: "/dev/ttyACM0"),
        sourceInformation: .receiver)

    @Test("the last location is archived and unarchived with secure coding (the widget pattern)")
    func archiveLocation() throws {
        let data = try NSKeyedArchiver.archivedData(withRootObject: Self.location, requiringSecureCoding: true)
        UserDefaults.standard.set(data, forKey: "gpslocation-test-last")
        let stored = try #require(UserDefaults.standard.data(forKey: "gpslocation-test-last"))
        let restored = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: CLLocation.self, from: stored))
        #expect(restored.coordinate == Self.location.coordinate && restored.altitude == Self.location.altitude)
        #expect(restored.horizontalAccuracy == 3.2 && restored.speed == 13.4 && restored.course == 72)
        #expect(restored.timestamp == Self.location.timestamp && restored.gnss == Self.location.gnss)
        #expect(restored.floor == nil)
        UserDefaults.standard.removeObject(forKey: "gpslocation-test-last")
    }

    @Test("a CLCircularRegion subclass archives with its own fields")
    func archiveRegion() throws {
        let region = DepotRegion(depotNumber: 7, center: CLLocationCoordinate2D(latitude: 51.45, longitude: -2.59))
        region.notifyOnExit = false
        let data = try NSKeyedArchiver.archivedData(withRootObject: region, requiringSecureCoding: true)
        let restored = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: DepotRegion.self, from: data))
        #expect(restored.depotNumber == 7 && restored.identifier == "depot-7" && restored.radius == 150)
        #expect(restored.center.latitude == 51.45 && restored.notifyOnEntry && !restored.notifyOnExit)
    }

    @Test("beacons: not available, and the delegate is told so")
    func beacons() async throws {
        #expect(!CLLocationManager.isRangingAvailable())
        let manager = CLLocationManager(
            source: FixListSource([]), authorizer: LocationAuthorizer(appID: "compass-test", isInUse: true))
        let delegate = CompassDelegate()
        manager.delegate = delegate
        manager.headingFilter = kCLHeadingFilterNone
        manager.headingOrientation = .faceUp
        #expect(manager.headingFilter == kCLHeadingFilterNone && manager.heading == nil)
        manager.startRangingBeacons(satisfying: CLBeaconIdentityConstraint(uuid: UUID()))
        await delegateQueueFlushed(manager)
        #expect(delegate.rangingErrors.map(\.code) == [.rangingUnavailable])
    }

    final class DeferredDelegate: CLLocationManagerDelegate, Sendable {
        let errors = Locked<[CLError]>([])
        func locationManager(_ manager: CLLocationManager, didFinishDeferredUpdatesWithError error: (any Error)?) {
            if let error = error as? CLError { errors.withLock { $0.append(error) } }
        }
    }

    @Test("the rest of the surface: deferred updates, location pushes, widgets, beacon conditions")
    func restOfTheSurface() async throws {
        let manager = CLLocationManager(source: FixListSource([]), authorizer: grantedAuthorizer())
        let delegate = DeferredDelegate()
        manager.delegate = delegate
        #expect(!CLLocationManager.deferredLocationUpdatesAvailable())
        manager.allowDeferredLocationUpdates(untilTraveled: 500, timeout: 60)
        manager.disallowDeferredLocationUpdates()
        await delegateQueueFlushed(manager)
        #expect(delegate.errors.withLock { $0 }.map(\.code) == [.deferredFailed])
        #expect(delegate.errors.withLock { $0 }.first?.message.contains("distanceFilter") == true)
        let pushes = Locked<CLError?>(nil)
        manager.startMonitoringLocationPushes { _, error in pushes.withLock { $0 = error as? CLError } }
        manager.stopMonitoringLocationPushes()
        #expect(pushes.withLock { $0 }?.code == .denied)
        #expect(!manager.isAuthorizedForWidgetUpdates && manager.rangedBeaconConstraints.isEmpty)
        let beacon = CLMonitor.BeaconIdentityCondition(uuid: UUID(), major: 1, minor: 2)
        #expect(beacon.major == 1 && beacon.minor == 2)
        let major: CLBeaconMajorValue = 7
        #expect(major == 7 && !kCLErrorUserInfoAlternateRegionKey.isEmpty)
    }

    @Test("temporary full accuracy: already full completes with nil; otherwise it says how to grant it")
    func temporaryFullAccuracy() async throws {
        let full = CLLocationManager(
            source: FixListSource([]),
            authorizer: LocationAuthorizer(
                appID: "full-test", initial: AuthorizationDecision(status: .authorizedAlways), isInUse: true))
        let fullAnswer = Locked<(any Error)??>(nil)
        full.requestTemporaryFullAccuracyAuthorization(withPurposeKey: "Navigation") { error in
            fullAnswer.withLock { $0 = .some(error) }
        }
        #expect(fullAnswer.withLock { $0 }.map { $0 == nil } == true)
        let reduced = CLLocationManager(
            source: FixListSource([]),
            authorizer: LocationAuthorizer(
                appID: "reduced-test",
                initial: AuthorizationDecision(status: .authorizedAlways, accuracy: .reducedAccuracy), isInUse: true))
        let reducedAnswer = Locked<CLError?>(nil)
        reduced.requestTemporaryFullAccuracyAuthorization(withPurposeKey: "Navigation") { error in
            reducedAnswer.withLock { $0 = error as? CLError }
        }
        #expect(reducedAnswer.withLock { $0 }?.message.contains("gpsloc auth grant reduced-test") == true)
    }

    @Test("Apple-style loops compile: for try await over session diagnostics, the stationary flag")
    func appleStyleLoops() async throws {
        let session = CLServiceSession(
            authorization: .whenInUse, authorizer: LocationAuthorizer(appID: "loop-test", isInUse: true))
        do {
            for try await diagnostic in session.diagnostics {
                #expect(diagnostic.authorizationRequestInProgress)
                break
            }
        } catch {
            Issue.record("the diagnostics ended with \(error)")
        }
        session.invalidate()
        // iOS 18's name beside iOS 17's.
        let stationary: KeyPath<CLLocationUpdate, Bool> = \.stationary
        #expect(stationary != \CLLocationUpdate.isStationary)
        let manager = CLLocationManager(source: FixListSource([]), authorizer: LocationAuthorizer(appID: "x"))
        manager.showsBackgroundLocationIndicator = true
        #expect(manager.showsBackgroundLocationIndicator)
    }
}
