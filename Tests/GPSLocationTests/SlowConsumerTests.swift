import Foundation
import GNSSCore
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// A recording reaches the app whole, whatever the app's speed: a delegate and stream readers
/// that take each location only while the source is held back waiting for them (`SourcePace`:
/// as far behind as the runner lets them be, by construction, with no clock) receive exactly
/// what `gpsloc replay` prints, on every fixture (the source waits for them; nothing is dropped).
@Suite("a slow app gets every location of a recording", .timeLimit(.minutes(5)))
struct SlowConsumerTests {

    /// Every fixture; under Thread Sanitizer a 10 Hz drive, the stop-and-go log whose
    /// hold-and-release found a race there, and a receiver restart.
    static let fixtures = Conditions.sampled(
        (try? FileManager.default.contentsOfDirectory(atPath: Paths.fixtures.path))?
            .filter { $0.hasSuffix(".nmea") }.sorted() ?? []
    ) { ["drive-10hz-multi.nmea", "stops-1hz-gp.nmea", "clock-restart-1hz-gp.nmea"].contains($0) }

    static func key(_ location: CLLocation) -> String {
        Received.key(
            timestamp: location.timestamp, latitude: location.coordinate.latitude,
            longitude: location.coordinate.longitude,
            horizontal: location.horizontalAccuracy < CLLocationDistanceMax ? location.horizontalAccuracy : nil)
    }

    static func manager(_ path: String) -> CLLocationManager {
        let authorizer = LocationAuthorizer(
            appID: "gpsloc", initial: AuthorizationDecision(status: .authorizedAlways), isInUse: true)
        let manager = CLLocationManager(source: NMEAReplaySource(path: path), authorizer: authorizer)
        manager.diagnosticsHandler = Diagnostics.discard
        manager.lastLocationCache = nil
        manager.maximumLocationAge = 1e9
        // As gpsloc: no automatic pausing (the boundary fixture stands still for 15 minutes).
        manager.pausesLocationUpdatesAutomatically = false
        return manager
    }

    /// A delegate that takes each batch only while the source is held back for it (or ended).
    final class GatedDelegate: CLLocationManagerDelegate, Sendable {
        let recorder = RecordingDelegate()
        let pace: SourcePace
        init(_ pace: SourcePace) { self.pace = pace }

        func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
            pace.untilAheadBlocking()
            recorder.locationManager(manager, didUpdateLocations: locations)
        }
        func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
            recorder.locationManager(manager, didFailWithError: error)
        }
    }

    @Test("delegate, locations() stream and gpsloc replay agree exactly", arguments: fixtures)
    func agree(fixture: String) async throws {
        let path = Paths.fixtures.appendingPathComponent(fixture).path
        let cli = Received.fromNDJSON(
            try await GPSLocBinary.run(["replay", path, "--json", "--max-age", "1000000000"]).stdout)
        #expect(cli.locations.count > 50, "\(fixture)")

        // The delegate: each batch is taken only while the source is held back for it.
        let manager = Self.manager(path)
        manager.maximumBatch = 8
        let pace = SourcePace(manager)
        let delegate = GatedDelegate(pace)
        manager.delegate = delegate
        manager.startUpdatingLocation()
        #expect(await delegate.recorder.wait { $0.errors.contains { $0.reason == .sourceEnded } })
        manager.stopUpdatingLocation()
        #expect(delegate.recorder.locations.map(Self.key) == cli.locations, "\(fixture): delegate")
        #expect(pace.timesHeldBack > 0, "\(fixture): the source never had to wait for the delegate")
        #expect(delegate.recorder.errors.filter { $0.reason == .sourceEnded }.allSatisfy { $0.endsUpdates })

        // The stream: each location is read only while the source is held back for the reader.
        var streamed: [String] = []
        let streaming = Self.manager(path)
        let streamPace = SourcePace(streaming)
        do {
            for try await location in streaming.locations() {
                #expect(await streamPace.untilAhead())
                streamed.append(Self.key(location))
            }
        } catch let error as CLError {
            #expect(error.reason == .sourceEnded && error.endsUpdates, "\(fixture): \(error)")
        }
        #expect(streamed == cli.locations, "\(fixture): stream")
    }

    @Test("liveUpdates on a recording: every location, in order, for a slow reader")
    func liveUpdatesLossless() async throws {
        let path = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
        let cli = Received.fromNDJSON(
            try await GPSLocBinary.run(["replay", path, "--json", "--max-age", "1000000000"]).stdout)
        let manager = ManagerReference(value: Self.manager(path))
        let pace = SourcePace(manager.value)
        let updates = CLLocationUpdate.Updates(makeManager: {
            manager.value.minimumUpdateInterval = 0
            return manager.value
        })
        var received: [String] = []
        for try await update in updates {
            #expect(await pace.untilAhead())
            if let location = update.location { received.append(Self.key(location)) }
        }
        #expect(received == cli.locations)
    }

    @Test("a live source drops the oldest beyond maximumBatch for a slow delegate, and says how many")
    func liveDropsAreCounted() async throws {
        let start = Date()
        let fixes = (0..<40).map { index in
            Fix(
                mode: .threeDimensional, time: start.addingTimeInterval(Double(index) * 0.1),
                latitude: 51.5 + Double(index) * 1e-4,
                longitude: -2.5, altitudeMSL: 10, errors: FixErrors(horizontal: 5, vertical: 8))
        }
        let source = ManualLocationSource(isLive: true)
        let authorizer = LocationAuthorizer(
            appID: "drops", initial: AuthorizationDecision(status: .authorizedAlways), isInUse: true)
        let manager = CLLocationManager(source: source, authorizer: authorizer)
        manager.lastLocationCache = nil
        manager.timeJumpTolerance = .infinity
        manager.maximumBatch = 5
        let diagnostics = Locked<[LocationDiagnostic]>([])
        manager.diagnosticsHandler = { diagnostic in diagnostics.withLock { $0.append(diagnostic) } }
        let delegate = RecordingDelegate()
        // Hold the delegate queue while every fix arrives: all but the newest five must wait.
        let gate = DispatchSemaphore(value: 0)
        manager.delegateQueue.async { gate.wait() }
        manager.delegate = delegate
        manager.startUpdatingLocation()
        #expect(source.isRunning)
        for fix in fixes { source.send(.fix(fix)) }
        gate.signal()
        let newest = fixes.last!.latitude!
        #expect(await delegate.wait { $0.locations.last?.coordinate.latitude == newest })
        manager.stopUpdatingLocation()
        // Nearly always one drain after the gate: 35 dropped, the newest five delivered. On a busy
        // machine a drain may already have taken a batch before the sends end (it then waits for
        // the delegate queue with it): the oldest still go, and every one is counted.
        let dropped = diagnostics.withLock { $0 }.filter { $0.code == "droppedLocations" }
        let counts = dropped.compactMap { Int($0.message.prefix { $0.isNumber }) }
        #expect(!dropped.isEmpty && counts.count == dropped.count)
        #expect(dropped.allSatisfy { $0.message.contains("live location(s) dropped") })
        let latitudes = delegate.locations.map(\.coordinate.latitude)
        #expect(counts.reduce(0, +) + latitudes.count == fixes.count, "every location delivered or counted")
        #expect(latitudes.suffix(5) == fixes.suffix(5).map { $0.latitude! })
        #expect(latitudes == latitudes.sorted(), "in order")
    }
}
