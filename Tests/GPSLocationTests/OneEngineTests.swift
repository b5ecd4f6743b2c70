import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// `gpsloc` and `CLLocationManager` run the same `LocationEngine`, so the same input gives the
/// same locations, errors and diagnostics — compared here field by field.
extension RealGPSD.LaneA {
    @Suite("one engine: gpsloc and CLLocationManager agree")
    struct OneEngineTests {
        /// Runs a manager on `source` until it ends; `authorization` as gpsloc replay simulates it.
        static func throughManager(
            _ source: any LocationSource, status: CLAuthorizationStatus = .authorizedAlways,
            callbackDelay: Double = 0, configure: (CLLocationManager) -> Void = { _ in }
        ) async -> Received {
            let diagnostics = DiagnosticsLog()
            let authorizer = LocationAuthorizer(
                appID: "gpsloc", initial: AuthorizationDecision(status: status), isInUse: true)
            let manager = CLLocationManager(source: source, authorizer: authorizer)
            manager.diagnosticsHandler = { diagnostics.append($0.code) }
            configure(manager)
            let delegate = RecordingDelegate()
            delegate.callbackDelay = callbackDelay
            manager.delegate = delegate
            manager.requestAlwaysAuthorization()
            manager.startUpdatingLocation()
            #expect(
                await delegate.wait(timeout: 120) {
                    $0.errors.contains { $0.reason == .sourceEnded || $0.reason == .gpsdLost }
                })
            manager.stopUpdatingLocation()
            var received = Received()
            received.locations = delegate.locations.map {
                Received.key(
                    timestamp: $0.timestamp, latitude: $0.coordinate.latitude, longitude: $0.coordinate.longitude,
                    horizontal: $0.horizontalAccuracy < CLLocationDistanceMax ? $0.horizontalAccuracy : nil)
            }
            // The end of the recording is the replay's normal end: gpsloc does not print it.
            received.errors = delegate.errors.filter { $0.reason != .sourceEnded && $0.reason != .gpsdLost }.map {
                Received.withoutPort($0.message)
            }
            received.diagnostics = diagnostics.codes
            return received
        }

        final class DiagnosticsLog: @unchecked Sendable {
            // @unchecked Sendable: guarded by `lock`.
            private let lock = NSLock()
            private var stored: [String] = []
            func append(_ code: String) { lock.withLock { stored.append(code) } }
            var codes: [String] { lock.withLock { stored } }
        }

        @Test(
            "replay --via nmea and a manager on NMEAReplaySource: identical locations, errors and diagnostics",
            arguments: ["drive-1hz-gp.nmea", "drive-10hz-multi.nmea"])
        func nmeaPath(fixture: String) async throws {
            let path = Paths.fixtures.appendingPathComponent(fixture).path
            let cli = Received.fromNDJSON(
                try await GPSLocBinary.run([
                    "replay", path, "--json", "--distance-filter", "5", "--max-age", "1000000000",
                ])
                .stdout)
            let manager = await Self.throughManager(NMEAReplaySource(path: path)) {
                $0.distanceFilter = 5
                $0.maximumLocationAge = 1e9
            }
            #expect(cli.locations.count > 10)
            #expect(cli.locations == manager.locations)
            #expect(cli.errors == manager.errors)
            #expect(cli.diagnostics == manager.diagnostics)
        }

        @Test(
            "replay --via gpsd and a manager on the same recording through gpsfake: identical locations, also for a slow delegate",
            .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason), arguments: [0.0, 0.01])
        func gpsdPath(callbackDelay: Double) async throws {
            let log = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea")
            let cli = Received.fromNDJSON(
                try await GPSLocBinary.run(["replay", log.path, "--via", "gpsd", "--json", "--max-age", "1000000000"])
                    .stdout)
            let server = try await GPSFakeServer.started(log: log)
            defer { server.stop() }
            // As `gpsloc replay --via gpsd` does: connect once gpsfake has attached its receiver.
            #expect(await server.waitUntilDeviceAttached())
            let manager = await Self.throughManager(
                GPSDLocationSource(endpoint: server.endpoint, noDataTimeout: nil, reconnect: nil, isLive: false),
                // 10 ms a call: gpsd would drop what a client does not read in time, so the
                // reader never waits; the recording's locations are kept until the delegate
                // takes them.
                callbackDelay: callbackDelay
            ) { $0.maximumLocationAge = 1e9 }
            #expect(cli.locations.count > 100)
            #expect(cli.locations == manager.locations)
            #expect(cli.errors == manager.errors)
        }

        @Test("denied and restricted: the same single explanation from both")
        func refusals() async throws {
            let path = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
            for (name, status) in [("denied", CLAuthorizationStatus.denied), ("restricted", .restricted)] {
                let cli = Received.fromNDJSON(
                    try await GPSLocBinary.run(["replay", path, "--json", "--authorization", name]).stdout)
                let authorizer = LocationAuthorizer(
                    appID: "gpsloc", initial: AuthorizationDecision(status: status), isInUse: true)
                let manager = CLLocationManager(source: NMEAReplaySource(path: path), authorizer: authorizer)
                manager.diagnosticsHandler = Diagnostics.discard
                let delegate = RecordingDelegate()
                manager.delegate = delegate
                manager.requestWhenInUseAuthorization()
                manager.startUpdatingLocation()
                _ = await delegate.waitForError(status == .denied ? .notAuthorized : .restricted, timeout: 5)
                manager.stopUpdatingLocation()
                #expect(cli.locations.isEmpty && delegate.locations.isEmpty)
                #expect(cli.errors.count == 1, "\(name)")
                #expect(cli.errors == delegate.errors.map(\.message), "\(name)")
            }
        }
    }
}
