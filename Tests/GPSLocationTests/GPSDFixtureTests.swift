import Foundation
import GPSLocation
import GPSLocationTesting
import TestSupport
import Testing

/// The project's own recordings through the real gpsd: what gpsd's own watcher saw is what our
/// source decodes, TPV for TPV; devices are reported; SKY reports carry satellites.
extension RealGPSD.LaneB {
    @Suite(
        "gpsd integration: project fixtures", .serialized,
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason))
    struct GPSDFixtureTests {
        static let fixtures = [
            "drive-1hz-gp.nmea", "drive-10hz-multi.nmea", "clean-1hz-multi.nmea", "midnight-newyear-1hz-gp.nmea",
            "midnight-leapday-1hz-multi.nmea", "midnight-march-10hz-multi.nmea",
        ]

        @Test("every TPV gpsd reports reaches our Fix exactly", arguments: fixtures)
        func fixtureMatchesWatcher(name: String) async throws {
            let (events, reference) = try await replayThroughGPSD(Paths.fixtures.appendingPathComponent(name))
            let expected = ReferenceTPV.parse(reference)
            #expect(expected.count > 100, "gpsd reported only \(expected.count) TPVs for \(name)")
            let fixes = events.compactMap { event -> Fix? in
                if case .report(.fix(let fix)) = event { fix } else { nil }
            }
            assertSameFixes(fixes, expected, name: name)
            #expect(fixes.contains { $0.mode == .threeDimensional && $0.altitudeMSL != nil && $0.speed != nil })

            let devices = events.compactMap { event -> DeviceEvent? in
                if case .report(.device(let device)) = event { device } else { nil }
            }
            #expect(
                devices.contains { $0.activated && $0.driver == "NMEA0183" }, "no activation with a driver: \(devices)")
            #expect(devices.contains { !$0.activated }, "the deactivation at the end of the log was not reported")

            let skies = events.compactMap { event -> SkyView? in
                if case .report(.sky(let sky)) = event { sky } else { nil }
            }
            #expect(skies.contains { $0.satellitesUsed > 0 && $0.dilution.horizontal != nil })

            guard case .connected(let endpoint)? = events.first else {
                Issue.record("the first event was not .connected: \(String(describing: events.first))")
                return
            }
            #expect(endpoint.host == "127.0.0.1")
            guard case .failed(let error) = events.last else {
                Issue.record("the stream did not end with the disconnect")
                return
            }
            #expect(error.code == .disconnected)
        }
    }
}
