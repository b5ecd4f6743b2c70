import Foundation
import GPSLocation
import GPSLocationTesting
import TestSupport
import Testing

/// The project's own recordings through the real gpsd: what gpsd's own watcher saw is what our
/// source decodes, TPV for TPV; devices are reported; SKY reports carry satellites.
extension RealGPSD.LaneD {
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
                if case .fix(let fix) = event { fix } else { nil }
            }
            assertSameFixes(fixes, expected, name: name)
            #expect(fixes.contains { $0.mode == .threeDimensional && $0.altitudeMSL != nil && $0.speed != nil })

            let devices = events.compactMap { event -> DeviceEvent? in
                if case .device(let device) = event { device } else { nil }
            }
            #expect(
                devices.contains { $0.activated && $0.driver == "NMEA0183" }, "no activation with a driver: \(devices)")
            #expect(devices.contains { !$0.activated }, "the deactivation at the end of the log was not reported")

            let skies = events.compactMap { event -> SkyView? in
                if case .sky(let sky) = event { sky } else { nil }
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

        @Test(
            "a recording cut after its last GGA, and one without checksums: gpsd and our NMEA engine report the same fixes",
            arguments: ["cut", "nochecksum"])
        func edgeRecordingsAgree(kind: String) async throws {
            let url: URL
            if kind == "cut" {
                var lines = try Data(contentsOf: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea"))
                    .split(separator: 0x0A)
                let gga = try #require(lines.lastIndex { $0.dropFirst(3).starts(with: "GGA".utf8) })
                lines = Array(lines[...gga])
                url = FileManager.default.temporaryDirectory.appendingPathComponent("cut-\(UUID().uuidString).nmea")
                try Data(lines.map { Data($0) + Data([0x0A]) }.joined()).write(to: url)
            } else {
                url = Paths.fixtures.appendingPathComponent("nochecksum-1hz-multi.nmea")
            }
            defer { if kind == "cut" { try? FileManager.default.removeItem(at: url) } }
            let (events, _) = try await replayThroughGPSD(url)
            let gpsd = events.compactMap { event -> Fix? in
                if case .fix(let fix) = event, fix.hasPosition { fix } else { nil }
            }
            let ours = NMEADecoder.fixes(in: try Data(contentsOf: url)).fixes.filter(\.hasPosition)
            #expect(gpsd.count > 100)
            // One epoch per time: gpsd repeats the first epoch while it learns the cycle (the
            // last report of a time is its epoch, as in the corpus comparison).
            func epochs(_ fixes: [Fix]) -> [Date: Fix] {
                var result: [Date: Fix] = [:]
                for fix in fixes { if let time = fix.time { result[time] = fix } }
                return result
            }
            let (mine, theirs) = (epochs(ours), epochs(gpsd))
            #expect(mine.keys.sorted() == theirs.keys.sorted())
            for (time, fix) in theirs {
                guard let own = mine[time] else { continue }
                #expect(own.mode == fix.mode, "\(time)")
                #expect(nearlyEqual(own.latitude, fix.latitude, tolerance: 1e-7), "\(time)")
                #expect(nearlyEqual(own.longitude, fix.longitude, tolerance: 1e-7), "\(time)")
            }
        }
    }
}
