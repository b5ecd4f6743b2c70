import Foundation
import GNSSCore
import GPSLocationTesting
import NMEA0183
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #23: heading from receivers that report it — NMEA HDT, THS, HDG in the NMEA engine, gpsd's
/// ATT on the gpsd path — through the gate, to `didUpdateHeading`, `gpsloc` and NDJSON.
@Suite("heading from receivers that report it", .timeLimit(.minutes(5)))
struct HeadingTests {
    static let fixture = Paths.fixtures.appendingPathComponent("heading-1hz-gp.nmea")

    /// gpsd's ATT headings for the fixture, in order (its `.gpsd.json`).
    static func gpsdHeadings() throws -> [Double] {
        let text = try String(
            contentsOf: Paths.fixtures.appendingPathComponent("heading-1hz-gp.gpsd.json"), encoding: .utf8)
        return text.split(whereSeparator: \.isNewline).filter { $0.contains(#""class":"ATT""#) }.compactMap {
            number("heading", in: String($0))
        }
    }

    /// The number after `"key":` in a line of gpsd's JSON.
    static func number(_ key: String, in line: String) -> Double? {
        guard let start = line.range(of: "\"\(key)\":")?.upperBound else { return nil }
        return Double(line[start...].prefix { $0.isNumber || $0 == "." || $0 == "-" })
    }

    static func parse(_ line: String) -> [HeadingReading] {
        var decoder = NMEADecoder()
        var readings: [HeadingReading] = []
        let bytes = Array((line + "\r\n").utf8)
        bytes.withUnsafeBufferPointer { decoder.feed($0, heading: { readings.append($0) }) { _ in } }
        return readings
    }

    static func sentence(_ body: String) -> String {
        "$\(body)*" + String(format: "%02X", body.utf8.reduce(UInt8(0), ^))
    }

    @Test("HDT, THS and HDG: what each says; THS marked invalid and values outside 0–360 are dropped")
    func sentences() {
        #expect(Self.parse(Self.sentence("GPHDT,341.8,T")).map(\.trueHeading) == [341.8])
        #expect(Self.parse(Self.sentence("GNTHS,12.5,A")).map(\.trueHeading) == [12.5])
        #expect(Self.parse(Self.sentence("GNTHS,12.5,V")).isEmpty, "mode V: not valid")
        #expect(Self.parse(Self.sentence("GPHDT,361.0,T")).isEmpty)
        #expect(Self.parse(Self.sentence("GPHDT,,T")).isEmpty)
        #expect(Self.parse(Self.sentence("GPHDT,360.0,T")).map(\.trueHeading) == [0])
        // HDG: 234.6 read, deviation 1.2 E → 235.8 magnetic; variation 1.3 W → −1.3.
        let hdg = Self.parse(Self.sentence("HCHDG,234.6,1.2,E,1.3,W"))
        #expect(hdg.count == 1)
        #expect(abs((hdg.first?.magneticHeading ?? 0) - 235.8) < 1e-9 && hdg.first?.trueHeading == nil)
        #expect(hdg.first?.magneticVariation == -1.3)
        let west = Self.parse(Self.sentence("HCHDG,0.5,1.0,W,,"))
        #expect(abs((west.first?.magneticHeading ?? 0) - 359.5) < 1e-9 && west.first?.magneticVariation == nil)
    }

    @Test("the NMEA engine reports the heading gpsd reports, sentence for sentence")
    func agreesWithGPSD() throws {
        var decoder = NMEADecoder()
        var ours: [Double] = []
        var fixes = 0
        let data = try Data(contentsOf: Self.fixture)
        data.withUnsafeBytes { raw in
            decoder.feed(raw.bindMemory(to: UInt8.self), heading: { ours.append($0.trueHeading ?? -1) }) { _ in
                fixes += 1
            }
        }
        let gpsd = try Self.gpsdHeadings()
        #expect(gpsd.count == 59 && ours == gpsd)
        #expect(fixes >= 59, "the fixes are untouched by the heading sentences")
    }

    @Test("gpsd's magnetic variation table gives every magvar gpsd reported in the fixtures")
    func magneticVariation() throws {
        var compared = 0
        for name in try FileManager.default.contentsOfDirectory(atPath: Paths.fixtures.path)
        where name.hasSuffix(".gpsd.json") {
            let text = try String(contentsOf: Paths.fixtures.appendingPathComponent(name), encoding: .utf8)
            for line in text.split(whereSeparator: \.isNewline) where line.contains(#""magvar""#) {
                let line = String(line)
                guard let latitude = Self.number("lat", in: line), let longitude = Self.number("lon", in: line),
                    let magvar = Self.number("magvar", in: line)
                else { continue }
                let ours = GPSDMagneticVariation.variation(latitude: latitude, longitude: longitude)
                #expect(abs(ours - magvar) <= 0.05 + 1e-9, "\(name): \(latitude), \(longitude)")
                compared += 1
            }
        }
        #expect(compared > 1000)
        // Away from Bristol: gpsd's table (its own figures, hundredths of a degree).
        #expect(abs(GPSDMagneticVariation.variation(latitude: -90, longitude: -180) - 149.2) < 1e-9)
    }

    final class HeadingDelegate: CLLocationManagerDelegate, Sendable {
        let headings = Locked<[CLHeading]>([])
        let errors = Watched<[CLError]>([])
        let locations = Locked(0)
        func locationManager(_ manager: CLLocationManager, didUpdateHeading newHeading: CLHeading) {
            headings.withLock { $0.append(newHeading) }
        }
        func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
            self.locations.withLock { $0 += locations.count }
        }
        func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
            if let error = error as? CLError { errors.withLock { $0.append(error) } }
        }
    }

    static func run(
        _ path: URL, filter: CLLocationDegrees = 1, status: CLAuthorizationStatus = .authorizedWhenInUse,
        locations: Bool = false
    ) async -> HeadingDelegate {
        let manager = CLLocationManager(
            source: NMEAReplaySource(path: path.path),
            authorizer: LocationAuthorizer(
                appID: "heading-test", initial: AuthorizationDecision(status: status), isInUse: true))
        manager.lastLocationCache = nil
        manager.diagnosticsHandler = Diagnostics.discard
        let delegate = HeadingDelegate()
        manager.delegate = delegate
        manager.headingFilter = filter
        manager.startUpdatingHeading()
        if locations { manager.startUpdatingLocation() }
        // The replay's end, or (denied) the refusal: nothing comes after either.
        _ = await delegate.errors.wait(timeout: 60) {
            $0.contains { $0.reason == .sourceEnded || $0.code == .denied }
        }
        await delegateQueueFlushed(manager)
        manager.stopUpdatingHeading()
        manager.stopUpdatingLocation()
        return delegate
    }

    @Test("startUpdatingHeading: every heading gpsd gives, true and magnetic, through the gate")
    func manager() async throws {
        let delegate = await Self.run(Self.fixture)
        let headings = delegate.headings.withLock { $0 }
        #expect(headings.map(\.trueHeading) == (try Self.gpsdHeadings()))
        // Magnetic: true − gpsd's variation at the receiver (about −1° at Bristol).
        let variation = GPSDMagneticVariation.variation(latitude: 51.4539, longitude: -2.5975)
        #expect(abs(variation + 1) < 0.1)
        #expect(
            headings.allSatisfy {
                abs(HeadingStage.normalized($0.trueHeading - variation) - $0.magneticHeading) < 0.01
            })
        #expect(headings.allSatisfy { $0.headingAccuracy == 0 })
        #expect(delegate.locations.withLock { $0 } == 0, "headings alone: no location was asked for")
        #expect(CLLocationManager.headingAvailable())
        // A 20° filter: only changes of 20° or more (7.3° a second: every third).
        let filtered = await Self.run(Self.fixture, filter: 20).headings.withLock { $0 }
        #expect(filtered.count == 20 || filtered.count == 19, "\(filtered.count)")
    }

    @Test("not authorized: no heading, and the reason once")
    func gate() async throws {
        let delegate = await Self.run(Self.fixture, status: .denied)
        #expect(delegate.headings.withLock { $0 }.isEmpty)
        #expect(delegate.errors.withLock { $0 }.filter { $0.code == .denied }.count == 1)
    }

    @Test("a receiver that reports no heading: headingFailure once, after ten fixes, and locations go on")
    func noHeading() async throws {
        let delegate = await Self.run(
            Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea"), locations: true)
        let failures = delegate.errors.withLock { $0 }.filter { $0.code == .headingFailure }
        #expect(failures.count == 1)
        #expect(failures.first?.message.contains("location.course") == true)
        #expect(delegate.headings.withLock { $0 }.isEmpty && delegate.locations.withLock { $0 } > 100)
    }
}

extension RealGPSD.LaneB {
    @Suite(
        "heading through a real gpsd and through the NMEA engine",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason), .timeLimit(.minutes(5)))
    struct HeadingThroughGPSD {
        @Test("gpsloc replay: the same heading lines through gpsd (ATT) as through the NMEA engine (HDT)")
        func bothPaths() async throws {
            var lines: [[Double]] = []
            for via in [["--via", "gpsd"], []] {
                let run = try await GPSLocBinary.run(
                    ["replay", HeadingTests.fixture.path, "--json", "--max-age", "1e9"] + via)
                let headings = GPSLocBinary.jsonLines(run.stdout).filter { $0["type"] as? String == "heading" }
                lines.append(headings.compactMap { ($0["trueHeading"] as? NSNumber)?.doubleValue })
                // The NMEA engine's first HDT comes before the first fix: it waits for the fix's
                // time and position, so it too has its magnetic heading and the recording's date.
                #expect(headings.allSatisfy { $0["magneticHeading"] is NSNumber }, "\(via)")
                #expect(headings.first?["timestamp"] as? String == "2026-06-15T12:00:00.000Z", "\(via)")
            }
            #expect(lines.first == (try HeadingTests.gpsdHeadings()))
            #expect(lines.first == lines.last)
        }
    }
}
