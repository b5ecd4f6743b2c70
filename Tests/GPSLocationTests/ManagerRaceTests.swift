import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation

/// The manager's threading, made deterministic with `ManualLocationSource` (the test decides
/// every interleaving), and checked under Thread Sanitizer by scripts/test.sh.
@Suite("CLLocationManager: races", .timeLimit(.minutes(5)))
struct ManagerRaceTests {
    static func manager(_ source: ManualLocationSource, delegate: RecordingDelegate) -> CLLocationManager {
        let manager = CLLocationManager(source: source, authorizer: grantedAuthorizer(.authorizedAlways))
        manager.diagnosticsHandler = Diagnostics.discard
        manager.maximumLocationAge = 1e9
        manager.delegate = delegate
        return manager
    }

    static func fix(_ second: Int) -> Fix { LocationEngineTests.fix(at: Double(second)) }

    /// Calls `body` for 0..<count on a thread of its own; the latch opens when it is done.
    static func send(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) -> ExitLatch {
        let done = ExitLatch()
        Thread.detachNewThread {
            for index in 0..<count { body(index) }
            done.finish(0)
        }
        return done
    }

    @Test("an event already on its way when stopUpdatingLocation() returns is never delivered")
    func stopGeneration() async {
        let source = ManualLocationSource(isLive: false)
        let delegate = RecordingDelegate()
        let manager = Self.manager(source, delegate: delegate)
        manager.startUpdatingLocation()
        #expect(source.send(.fix(Self.fix(0))))
        #expect(await delegate.waitForLocations(1))
        manager.stopUpdatingLocation()
        let after = delegate.callbackCount
        // A shared gpsd connection had already picked this handler when the stop ran.
        source.sendToStoppedHandler(.fix(Self.fix(1)))
        source.sendToStoppedHandler(.problem(CLError(.locationUnknown, message: "late"), terminal: false))
        await delegateQueueFlushed(manager)
        #expect(delegate.callbackCount == after)
        #expect(source.stops == 1)
    }

    @Test("stop racing a stream of fixes: nothing arrives after stop returns", arguments: 0..<20)
    func stopWhileDelivering(round: Int) async throws {
        let source = ManualLocationSource(isLive: false)
        let delegate = RecordingDelegate()
        let manager = Self.manager(source, delegate: delegate)
        manager.startUpdatingLocation()
        let sent = Self.send(2000) { source.sendToStoppedHandler(.fix(Self.fix($0))) }
        // The stop lands at a chosen point of the stream: after the delegate has had round × 5.
        #expect(await delegate.wait { $0.locations.count >= round * 5 })
        manager.stopUpdatingLocation()
        let after = delegate.callbackCount
        await sent.wait()
        await delegateQueueFlushed(manager)
        #expect(delegate.callbackCount == after, "a callback arrived after stopUpdatingLocation() returned")
    }

    @Test("settings changed from other threads while updates run (Thread Sanitizer checks this)")
    func settingsWhileRunning() async throws {
        let source = ManualLocationSource(isLive: false)
        let delegate = RecordingDelegate()
        delegate.callbackDelay = 0.0001
        let manager = Self.manager(source, delegate: delegate)
        manager.startUpdatingLocation()
        let sent = Self.send(500) { _ = source.send(.fix(Self.fix($0))) }
        for round in 0..<500 {
            manager.maximumBatch = 1 + round % 7
            manager.requestLocationTimeout = Double(5 + round % 3)
            manager.activityType = round % 2 == 0 ? .fitness : .other
            manager.distanceFilter = round % 2 == 0 ? kCLDistanceFilterNone : 0.5
            manager.allowsBackgroundLocationUpdates.toggle()
            _ = manager.location
            _ = manager.locationAge
        }
        await sent.wait()
        manager.stopUpdatingLocation()
        #expect(!delegate.locations.isEmpty)
        #expect(delegate.overlap == 0)
    }
}
