import Foundation
import GNSSCore
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #31: Apple's remaining semantics, each as public code uses it (the app-shaped programs are in
/// `AppShapesTests`; the conformances apps declare, in `Support/AppDeclaredConformances.swift`).
@Suite("Apple's semantics, as apps use them", .timeLimit(.minutes(5)))
struct AppleSemanticsTests {
    static func manager(_ authorizer: LocationAuthorizer, fixture: String = "drive-1hz-gp") throws -> CLLocationManager
    {
        CLLocationManager(
            source: FixListSource(try FixtureFixes.load(fixture)), authorizer: authorizer,
            delegateQueue: DispatchQueue(label: "apple-semantics"))
    }

    @Test("desiredAccuracy = kCLLocationAccuracyReduced: approximate locations with full authorization")
    func reducedOnRequest() async throws {
        #expect(
            kCLLocationAccuracyReduced == 6_380_000 && kCLLocationAccuracyReduced != kCLLocationAccuracyThreeKilometers)
        let authorizer = grantedAuthorizer(.authorizedAlways, accuracy: .fullAccuracy)
        let manager = try Self.manager(authorizer)
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.desiredAccuracy = kCLLocationAccuracyReduced
        manager.startUpdatingLocation()
        #expect(await delegate.wait { $0.errors.contains { $0.reason == .sourceEnded } })
        manager.stopUpdatingLocation()
        #expect(!delegate.locations.isEmpty)
        #expect(delegate.locations.allSatisfy { $0.gnss?.reduced == true && $0.horizontalAccuracy >= 1000 })
        #expect(manager.accuracyAuthorization == .fullAccuracy, "the authorization itself is unchanged")
    }

    @Test("a request nobody can answer: no error until locations are asked for, then one naming the command")
    func requestErrorsOnlyWhenLocationsAreAsked() async throws {
        let authorizer = LocationAuthorizer(appID: "no-terminal-app", initial: nil, prompt: nil, isInUse: false)
        let manager = try Self.manager(authorizer)
        let delegate = RecordingDelegate()
        let notes = Locked<[LocationDiagnostic]>([])
        manager.diagnosticsHandler = { note in notes.withLock { $0.append(note) } }
        manager.delegate = delegate
        manager.requestWhenInUseAuthorization()
        await delegateQueueFlushed(manager)
        #expect(delegate.errors.isEmpty, "Apple reports nothing at the request: \(delegate.errors)")
        #expect(notes.withLock { $0.contains { $0.code == "authorizationRequest" } }, "a diagnostic says it at once")
        manager.startUpdatingLocation()
        await delegateQueueFlushed(manager)
        manager.stopUpdatingLocation()
        let errors = delegate.errors.filter { $0.code == .promptDeclined }
        #expect(errors.count == 1, "\(delegate.errors)")
        #expect(errors.first?.message.contains("gpsloc auth grant no-terminal-app --always") == true)
        #expect(!delegate.errors.contains { $0.message.contains("never requested") })
    }

    @Test("a request through a CLServiceSession counts for the managers of the same authorizer")
    func sessionRequestCounts() async throws {
        let authorizer = LocationAuthorizer(appID: "session-app", initial: nil, prompt: nil, isInUse: false)
        let session = CLServiceSession(authorization: .always, authorizer: authorizer)
        defer { session.invalidate() }
        let manager = try Self.manager(authorizer)
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.startUpdatingLocation()
        await delegateQueueFlushed(manager)
        manager.stopUpdatingLocation()
        #expect(!delegate.errors.contains { $0.message.contains("never requested") }, "\(delegate.errors)")
        #expect(delegate.errors.contains { $0.code == .promptDeclined }, "it still says what to run")
    }

    @Test("the deprecated instance properties answer as the class methods")
    @available(*, deprecated)
    func deprecatedInstanceProperties() throws {
        let manager = try Self.manager(grantedAuthorizer())
        #expect(manager.locationServicesEnabled == CLLocationManager.locationServicesEnabled())
        #expect(manager.headingAvailable == CLLocationManager.headingAvailable())
    }

    /// A completion that captures non-Sendable state, as Apple's (not `@Sendable`) allows.
    final class ViewModel {
        var message = "waiting"
    }

    @Test("requestTemporaryFullAccuracyAuthorization takes a non-Sendable completion")
    func nonSendableCompletion() throws {
        let manager = try Self.manager(grantedAuthorizer(.authorizedAlways, accuracy: .reducedAccuracy))
        let model = ViewModel()
        manager.requestTemporaryFullAccuracyAuthorization(withPurposeKey: "Navigation") { error in
            model.message = error == nil ? "full" : "denied"
        }
        #expect(model.message == "denied")
    }

    @Test("conformances are the app's own: == and .description come from the declarations apps write")
    func appConformances() {
        let a = CLLocationCoordinate2D(latitude: 1, longitude: 2)
        #expect(a == CLLocationCoordinate2D(latitude: 1, longitude: 2) && a.isSame(as: a))
        #expect(Set([a, a]).count == 1)
        #expect(CLAuthorizationStatus.authorizedAlways.description == "always", "the app's, not the library's")
        #expect(CLAuthorizationStatus.authorizedAlways.name == "authorizedAlways", "the NDJSON name")
        #expect(CLAccuracyAuthorization.reducedAccuracy.description == "approximate")
    }
}

extension AppleSemanticsTests {
    @Test("liveUpdates from a live receiver dated months ago: delivered, with no option")
    func liveUpdatesOnReceiverClock() async throws {
        // A live receiver whose fixes are dated June 2026 (a box whose clock is elsewhere): each
        // delivered, no option needed (`liveUpdates` cannot set one).
        let source = ManualLocationSource(isLive: true)
        let first = try #require(try FixtureFixes.load("clean-1hz-multi").first { $0.hasPosition })
        let start = try #require(first.time)
        // The receiver's fixes, 0.2 s apart on its clock (well inside the 5-s jump tolerance
        // however fast they are sent), each about 22 m on from the last: a moving receiver, so
        // `liveUpdates`' stationary pause never holds them back. The times handed over are
        // recorded.
        let sent = Locked<[Date]>([])
        let sendNext: @Sendable () -> Bool = {
            var fix = first
            let step = sent.withLock { times -> Int? in
                guard times.count < 25 else { return nil }
                times.append(start + Double(times.count) * 0.2)
                return times.count - 1
            }
            guard let step else { return false }
            fix.time = start + Double(step) * 0.2
            fix.latitude = first.latitude.map { $0 + Double(step) * 0.0002 }
            _ = source.send(.fix(fix))
            return true
        }
        // Live updates keep only the newest waiting one (Apple's latest-wins): on a busy machine
        // the staleness report (no fix for a while) can replace a location this loop had not
        // taken yet. A live receiver keeps sending, and so does this one: three fixes, then the
        // next after each update without a location (at most 25). Each fix moves, so none is held
        // back as stationary and every one sent gives an update: the loop never waits on nothing.
        // One location is the proof.
        let feeder = Task {
            #expect(await source.wait { $0.isRunning })
            for _ in 0..<3 { _ = sendNext() }
        }
        var located: CLLocation?
        var updates: [String] = []
        for try await update in CLLocationUpdate.liveUpdates(source: source, authorizer: grantedAuthorizer()) {
            if let location = update.location {
                located = location
                break
            }
            updates.append("\(update)")
            // One sender at a time, so the fixes go in order: the first three are sent before more.
            await feeder.value
            // All 25 sent and none arrived as a location: what the sequence said instead.
            guard sendNext() else { break }
        }
        await feeder.value
        #expect(located != nil, "no location; the sequence said: \(updates.suffix(5))")
        #expect(located.map { sent.withLock { $0 }.contains($0.timestamp) } == true)
    }

    @Test("liveUpdates with no fix at all: an update saying the location is unavailable, not silence")
    func liveUpdatesSaySilence() async throws {
        let source = ManualLocationSource(isLive: true)
        let started = ContinuousClock.now
        var first: CLLocationUpdate?
        for try await update in CLLocationUpdate.liveUpdates(source: source, authorizer: grantedAuthorizer()) {
            first = update
            break
        }
        #expect(first?.locationUnavailable == true && first?.reason == .stale, "\(String(describing: first))")
        // Documented: three receiver cycles, 1 s assumed before any fix — 3 s. That it comes is
        // the test ending (its time limit bounds a hang); no upper bound on the wall clock (a busy
        // CI machine once took 30.7 s to run the waiting task), only that it is not said early.
        #expect(ContinuousClock.now - started >= .seconds(2.9))
    }
}
