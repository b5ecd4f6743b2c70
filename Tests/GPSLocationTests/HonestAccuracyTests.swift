import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #23: a location always has an honest horizontal accuracy — never `CLLocationDistanceMax` from a
/// receiver that reports DOPs, on either path.
@Suite("an honest horizontal accuracy from the first location on", .timeLimit(.minutes(5)))
struct HonestAccuracyTests {
    static let start = LocationEngineTests.start

    static func bare(at seconds: Double, mode: FixMode = .twoDimensional) -> Fix {
        Fix(
            mode: mode, time: start.addingTimeInterval(seconds), latitude: 51.45, longitude: -2.58, altitudeHAE: 90,
            altitudeMSL: 40, errors: FixErrors(), speed: 10, course: 45)
    }

    static func engine() -> LocationEngine {
        var engine = LocationEngineTests.engine(isLive: false) { $0.maximumLocationAge = 1e9 }
        _ = engine.start(.continuous, now: start)
        return engine
    }

    @Test("gpsd's RMC report without an estimate, then its epoch's GGA report with one: the app gets the GGA's")
    func heldForItsEpoch() {
        var engine = Self.engine()
        #expect(LocationEngineTests.delivered(engine.handle(.fix(Self.bare(at: 0)), now: Self.start)).isEmpty)
        var gga = Self.bare(at: 0, mode: .threeDimensional)
        gga.errors = FixErrors(horizontal: 15.2, vertical: 27.6)
        #expect(LocationEngineTests.delivered(engine.handle(.fix(gga), now: Self.start)).isEmpty, "the epoch is open")
        // The next epoch begins: the first is complete, and its last report is the one delivered.
        let delivered = LocationEngineTests.delivered(engine.handle(.fix(Self.bare(at: 1)), now: Self.start))
        #expect(delivered.map(\.horizontalAccuracy) == [7.6], "eph / 2, the epoch's one location")
        #expect(delivered.first?.verticalAccuracy ?? 0 > 0, "and its altitude")
        // Learnt: two reports an epoch. The next epoch is complete at its second report, at once.
        var second = Self.bare(at: 1, mode: .threeDimensional)
        second.errors = FixErrors(horizontal: 10, vertical: 20)
        let next = LocationEngineTests.delivered(engine.handle(.fix(second), now: Self.start))
        #expect(next.map(\.horizontalAccuracy) == [5])
    }

    @Test("a fix with no estimate after a satellite report gets gpsd's DOP × UERE model")
    func fromDilutions() {
        var engine = Self.engine()
        let dop = DilutionOfPrecision(x: 0.54, y: 0.55, horizontal: 0.8, vertical: 1.2)
        _ = engine.handle(.sky(SkyView(time: Self.start, satellites: [], dilution: dop)), now: Self.start)
        #expect(
            LocationEngineTests.delivered(
                engine.handle(.fix(Self.bare(at: 1, mode: .threeDimensional)), now: Self.start)
            )
            .isEmpty, "the first epoch goes when the next begins")
        // A DGPS fix: gpsd's smaller UEREs.
        var dgps = Self.bare(at: 2, mode: .threeDimensional)
        dgps.quality = .dgps
        let delivered = LocationEngineTests.delivered(engine.handle(.fix(dgps), now: Self.start))
        let expected = ((0.54 * 15) * (0.54 * 15) + (0.55 * 15) * (0.55 * 15)).squareRoot() / 1.96
        #expect(delivered.count == 2)
        #expect(abs((delivered.first?.horizontalAccuracy ?? 0) - expected) < 1e-9)
        #expect(abs((delivered.first?.verticalAccuracy ?? 0) - 1.2 * 23 / 1.96) < 1e-9)
        #expect(abs((delivered.last?.horizontalAccuracy ?? 0) - expected / 4) < 1e-9)
        // A satellite report from long ago says nothing about this fix: its accuracy is unknown.
        var late = Self.bare(at: 60)
        late.errors = FixErrors()
        let unknown = LocationEngineTests.delivered(engine.handle(.fix(late), now: Self.start))
        #expect(unknown.map(\.horizontalAccuracy) == [CLLocationDistanceMax])
    }

    @Test("#35: the first fix after an outage never takes the outage's no-solution DOP (949 m); its GST completes it")
    func noSolutionDilution() {
        var engine = Self.engine()
        // The outage: a satellite report with NMEA's "no solution" DOPs.
        let outage = DilutionOfPrecision(horizontal: 99.99, vertical: 99.99)
        _ = engine.handle(.sky(SkyView(time: Self.start, satellites: [], dilution: outage)), now: Self.start)
        // gpsd's first fix after it: eph = 99.99 × 19 m, epv = 99.99 × 23 m (its UERE model).
        var first = Self.bare(at: 1, mode: .threeDimensional)
        first.errors = FixErrors(horizontal: 1899.81, vertical: 2299.77, speed: 3799.6, climb: 4599.5)
        #expect(LocationEngineTests.delivered(engine.handle(.fix(first), now: Self.start)).isEmpty, "open")
        // Its own epoch's GST (1σ 1.2 m and 0.9 m), while the epoch is open: that is its accuracy.
        let gst = ReceiverErrorEstimate(time: first.time, latitude: 1.2, longitude: 0.9, altitude: 2.0)
        #expect(LocationEngineTests.delivered(engine.handle(.errorEstimate(gst), now: Self.start)).isEmpty)
        let delivered = LocationEngineTests.delivered(
            engine.handle(.fix(Self.bare(at: 2, mode: .threeDimensional)), now: Self.start))
        #expect(delivered.count == 1)
        #expect(abs((delivered.first?.horizontalAccuracy ?? 0) - 1.5) < 1e-9, "GST: √(1.2² + 0.9²)")
        #expect(delivered.first?.speedAccuracy ?? 0 < 100, "no speed error made of the outage")
        // Without a GST: delivered with its accuracy unknown, never the outage's.
        var plain = Self.engine()
        _ = plain.handle(.sky(SkyView(time: Self.start, satellites: [], dilution: outage)), now: Self.start)
        var bare = Self.bare(at: 1)
        bare.errors = FixErrors(horizontal: 1899.81)
        var out = LocationEngineTests.delivered(plain.handle(.fix(bare), now: Self.start))
        out += LocationEngineTests.delivered(plain.handle(.fix(Self.bare(at: 2)), now: Self.start))
        #expect(out.first?.horizontalAccuracy == CLLocationDistanceMax, "\(out.map(\.horizontalAccuracy))")
        // A DGPS fix's floor is a quarter: 99.99 × 4.75 m is no estimate either.
        var dgps = Self.bare(at: 3)
        dgps.quality = .dgps
        dgps.errors = FixErrors(horizontal: 474.95)
        NoSolutionErrors.clean(&dgps)
        #expect(dgps.errors.horizontal == nil)
        // A poor but real geometry (HDOP 20: 380 m) is kept.
        var poor = Self.bare(at: 4)
        poor.errors = FixErrors(horizontal: 380)
        NoSolutionErrors.clean(&poor)
        #expect(poor.errors.horizontal == 380)
    }

    @Test("#35: through the NMEA engine, the drive's first fix after its no-fix start has its GST accuracy")
    func noSolutionDilutionReplay() async throws {
        let source = NMEAReplaySource(path: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path)
        var locations: [CLLocation] = []
        for try await update in CLLocationUpdate.liveUpdates(
            source: source,
            authorizer: LocationAuthorizer(
                appID: "t", initial: AuthorizationDecision(status: .authorizedAlways), isInUse: true))
        {
            if let location = update.location { locations.append(location) }
            if locations.count == 2 { break }
        }
        // gpsd reports this fix with 949.9 m (HDOP 99.99 from the no-fix start); its GST says 1.769 m.
        #expect(
            locations.first.map { abs($0.horizontalAccuracy - 1.769) < 0.001 } == true,
            "\(locations.map(\.horizontalAccuracy))")
    }

    @Test("a receiver that reports no estimate at all loses nothing and is delayed only for its first epoch")
    func noEstimatesEver() {
        var engine = Self.engine()
        var delivered: [LocationValue] = []
        var immediate: [Bool] = []
        for second in 0..<8 {
            let now = LocationEngineTests.delivered(engine.handle(.fix(Self.bare(at: Double(second))), now: Self.start))
            immediate.append(now.last?.timestamp == Self.start.addingTimeInterval(Double(second)))
            delivered += now
        }
        delivered += LocationEngineTests.delivered(
            engine.handle(.problem(CLError(.locationUnknown, message: "end"), terminal: true), now: Self.start))
        #expect(delivered.map(\.timestamp) == (0..<8).map { Self.start.addingTimeInterval(Double($0)) })
        #expect(delivered.allSatisfy { $0.horizontalAccuracy == CLLocationDistanceMax })
        #expect(immediate == [false, true, true, true, true, true, true, true])
    }
}

extension RealGPSD.LaneB {
    @Suite(
        "an honest accuracy through a real gpsd", .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason),
        .timeLimit(.minutes(5)))
    struct HonestAccuracyThroughGPSD {
        /// The case, through a real gpsd: the first report of the recording is an RMC with
        /// no `eph` (gpsd's own output, fixtures/clean-1hz-multi.gpsd.json line 1).
        @Test("the first location, through gpsd and through the NMEA engine, has an accuracy")
        func firstLocationBothPaths() async throws {
            let path = Paths.fixtures.appendingPathComponent("clean-1hz-multi.nmea").path
            var firsts: [[String: Any]] = []
            for via in [["--via", "gpsd"], []] {
                let run = try await GPSLocBinary.run(["replay", path, "--json", "--max-age", "1e9"] + via)
                let locations = GPSLocBinary.jsonLines(run.stdout).filter { $0["type"] as? String == "location" }
                #expect(locations.count > 100, "\(via): \(run.stderr.suffix(300))")
                #expect(locations.allSatisfy { $0["horizontalAccuracy"] is Double }, "\(via): no null accuracy")
                if let first = locations.first { firsts.append(first) }
            }
            #expect(firsts.count == 2)
            // Through gpsd: not its first report of the epoch (an RMC with no estimate) nor the GGA
            // report after it (eph 15.2 m), but the epoch complete — with the receiver's GST, which
            // gpsd sends after them (1.628 m). The NMEA engine gives the same location.
            #expect(firsts.first?["horizontalAccuracy"] as? Double == 1.628)
            #expect(firsts.first?["timestamp"] as? String == "2026-06-15T08:00:00.000Z")
            #expect(firsts.last?["horizontalAccuracy"] as? Double == 1.628)
            #expect(firsts.last?["timestamp"] as? String == "2026-06-15T08:00:00.000Z")
        }
    }
}
