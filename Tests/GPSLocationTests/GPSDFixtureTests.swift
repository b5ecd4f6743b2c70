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
            // The NMEA path reports the sky as gpsd does: the same SKYs, satellite for satellite.
            assertSameSkies(
                NMEASkyAgreement.skies(of: Paths.fixtures.appendingPathComponent(name)), skies, name: name)

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

/// What GPSLocation's NMEA parser reports as a recording's SKYs (`NMEADecoder.feed(_:heading:sky:_:)`).
enum NMEASkyAgreement {
    static func skies(of log: URL) -> [SkyView] {
        guard let data = try? Data(contentsOf: log) else { return [] }
        var decoder = NMEADecoder()
        var skies: [SkyView] = []
        data.withUnsafeBytes { raw in
            decoder.feed(raw.bindMemory(to: UInt8.self), heading: { _ in }, sky: { skies.append($0) }, { _ in })
        }
        return skies
    }
}

/// Asserts that `ours` are gpsd's SKYs: as many, each with the same satellites (number,
/// elevation, azimuth, signal, used) in the same order and the same DOPs (to 0.01).
func assertSameSkies(
    _ ours: [SkyView], _ theirs: [SkyView], name: String, skippingFirst skipped: Int = 0,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(
        ours.count == theirs.count, "\(name): \(ours.count) skies, gpsd reported \(theirs.count)",
        sourceLocation: sourceLocation)
    func close(_ a: Double?, _ b: Double?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?): abs(a - b) < 0.0051
        default: false
        }
    }
    print("  \(name): \(ours.count) skies from the NMEA path, \(theirs.count) from gpsd")
    var reported = 0
    for (index, (mine, gpsd)) in zip(ours, theirs).enumerated() where index >= skipped && reported < 5 {
        let a = mine.satellites.map {
            "\($0.prn) \($0.elevation ?? -1) \($0.azimuth ?? -1) \($0.signalToNoise ?? -1) \($0.used)"
        }
        let b = gpsd.satellites.map {
            "\($0.prn) \($0.elevation ?? -1) \($0.azimuth ?? -1) \($0.signalToNoise ?? -1) \($0.used)"
        }
        let d = (mine.dilution, gpsd.dilution)
        let dops =
            close(d.0.x, d.1.x) && close(d.0.y, d.1.y) && close(d.0.horizontal, d.1.horizontal)
            && close(d.0.vertical, d.1.vertical) && close(d.0.position, d.1.position) && close(d.0.time, d.1.time)
            && close(d.0.geometric, d.1.geometric)
        if a != b || !dops {
            reported += 1
            Issue.record(
                "\(name) SKY #\(index): ours \(a) \(d.0), gpsd's \(b) \(d.1)", sourceLocation: sourceLocation)
        }
    }
}
