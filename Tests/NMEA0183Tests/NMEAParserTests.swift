import Foundation
import GNSSCore
import TestSupport
import Testing

@testable import NMEA0183

@Suite("NMEA parser", .timeLimit(.minutes(5)))
struct NMEAParserTests {
    /// Parses `data` fed in pieces of `chunk` bytes (0: whole buffer), returning sentences and stats.
    static func parse(_ data: [UInt8], chunk: Int) -> ([NMEASentence], NMEAStatistics) {
        var parser = NMEAParser()
        var sentences: [NMEASentence] = []
        data.withUnsafeBufferPointer { buffer in
            if chunk == 0 {
                parser.feed(buffer) { sentences.append($0) }
            } else {
                var start = 0
                while start < buffer.count {
                    let end = min(buffer.count, start + chunk)
                    parser.feed(UnsafeBufferPointer(rebasing: buffer[start..<end])) { sentences.append($0) }
                    start = end
                }
            }
        }
        parser.finish { sentences.append($0) }
        return (sentences, parser.statistics)
    }

    static let fixtureNames = [
        "drive-1hz-gp.nmea", "drive-10hz-multi.nmea", "clean-1hz-multi.nmea", "midnight-newyear-1hz-gp.nmea",
        "midnight-leapday-1hz-multi.nmea", "midnight-march-10hz-multi.nmea", "nochecksum-1hz-multi.nmea",
    ]
    /// With gpsd's output beside them: the simulated fixtures, and hand-made recordings of the
    /// patterns real receivers send (fixtures/README.md).
    static let gpsdFixtureNames =
        fixtureNames + [
            "invalid-then-valid-1hz-gp.nmea", "clock-restart-1hz-gp.nmea", "cut-before-gap-1hz-gp.nmea",
            "zda-behind-1hz-gp.nmea",
        ]

    @Test("byte by byte, line by line and whole buffer give the same sentences", arguments: fixtureNames)
    func chunkingDoesNotMatter(name: String) throws {
        let data = [UInt8](try Data(contentsOf: Paths.fixtures.appendingPathComponent(name)))
        let (whole, wholeStats) = Self.parse(data, chunk: 0)
        #expect(whole.count > 1000)
        for chunk in [1, 7, 64, 4096] {
            let (pieces, stats) = Self.parse(data, chunk: chunk)
            #expect(pieces == whole, "chunk \(chunk)")
            #expect(stats == wholeStats, "chunk \(chunk)")
        }
        // Line by line.
        var lineSentences: [NMEASentence] = []
        var parser = NMEAParser()
        for line in data.split(separator: 0x0A, omittingEmptySubsequences: false) {
            (Array(line) + [0x0A]).withUnsafeBufferPointer { parser.feed($0) { lineSentences.append($0) } }
        }
        parser.finish { lineSentences.append($0) }
        #expect(lineSentences == whole)
    }

    @Test("a long noisy line is dropped the same way whole or in pieces (found by the fuzzer)")
    func longLineChunking() {
        let line = String(repeating: "x", count: 500) + Self.sentence("GPGLL,4807.038,N,01131.000,E,123520,A,A")
        let data = Array((line + Self.sentence("GPZDA,123520,01,01,2026,00,00")).utf8)
        let (whole, wholeStats) = Self.parse(data, chunk: 0)
        for chunk in [1, 3, 100, 499, 500, 501] {
            let (pieces, stats) = Self.parse(data, chunk: chunk)
            #expect(pieces == whole && stats == wholeStats, "chunk \(chunk)")
        }
        #expect(wholeStats.tooLong == 1 && whole.count == 1)
    }

    @Test("the drive fixture's three corrupted lines are counted and skipped, nothing else lost")
    func faultsAreCounted() throws {
        let data = [UInt8](try Data(contentsOf: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea")))
        let (_, stats) = Self.parse(data, chunk: 0)
        #expect(stats.badChecksum == 1)
        // The truncated RMC, and the noise line (whose stray "$**" reads as a sentence without checksum).
        #expect(stats.missingChecksum + stats.noise == 2)
        #expect(stats.comments == 1)
        let lines = data.split(separator: 0x0A).count
        #expect(stats.sentences == lines - 4, "every good line decoded")
    }

    @Test("a sentence without a checksum may carry a signed field (ZDA's zone as +00), as gpsd reads it")
    func signedFieldWithoutChecksum() {
        // gpsd's corpus, hp58534a.log: every line without a checksum, ZDA's zone hours "+00".
        let lines = "$GPZDA,222449,25,10,2010,+00,00\r\n$GPZDA,222450,25,10,2010,-03,00\r\n"
        let (sentences, stats) = Self.parse(Array(lines.utf8), chunk: 0)
        #expect(
            sentences == [
                .zda(time: 80689, day: 25, month: 10, year: 2010), .zda(time: 80690, day: 25, month: 10, year: 2010),
            ])
        #expect(stats.missingChecksum == 0)
        // A sign anywhere else is still malformed.
        let (bad, badStats) = Self.parse(Array("$GPZDA,222449,25,10,20+10,00,00\r\n".utf8), chunk: 0)
        #expect(bad.isEmpty && badStats.missingChecksum == 1)
    }

    @Test("faults never produce a position and never hide the next sentence")
    func faultsInIsolation() {
        let good = Self.sentence("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
        let cases: [(String, KeyPath<NMEAStatistics, Int>)] = [
            (good.replacingOccurrences(of: "*", with: "*F"), \.badChecksum),
            ("$GPRMC,123519,A,4807.038,N,01131.0\r\n", \.missingChecksum),
            ("\u{0}\u{1}\u{2}\u{0}garbage\u{0}\r\n", \.noise),
            ("$GPGGA," + String(repeating: "9", count: 300) + "*00\r\n", \.tooLong),
            (
                "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,4"
                    + Self.sentence("GPGLL,4807.038,N,01131.000,E,123520,A,A"), \.sentences
            ),
        ]
        let latitude: Double = 48 + 7.038 / 60
        let longitude: Double = 11 + 31.0 / 60
        let expected = NMEASentence.gga(
            time: 45319, latitude: latitude, longitude: longitude, quality: 1, satellites: 8, hdop: 0.9,
            altitude: 545.4,
            geoidSeparation: 46.9, talker: 0x4750)  // "GP"
        for (bad, counter) in cases {
            let (sentences, stats) = Self.parse(Array((bad + good).utf8), chunk: 0)
            #expect(stats[keyPath: counter] >= 1, "\(bad.prefix(30))")
            let last = sentences.last
            #expect(last == expected)
        }
        // A line cut off by the next sentence: only the second, complete one is read.
        let (collided, _) = Self.parse(Array(cases[4].0.utf8), chunk: 0)
        #expect(collided.count == 1)
        if case .gll(let time, _, _, let valid) = collided.first {
            #expect(time == 45320 && valid)
        } else {
            Issue.record("expected the GLL")
        }
    }

    /// `$body*hh\r\n` with the right checksum.
    static func sentence(_ body: String) -> String {
        let checksum = body.utf8.reduce(UInt8(0), ^)
        return "$" + body + "*" + String(format: "%02X", checksum) + "\r\n"
    }

    @Test("times of day with no to four fraction digits, read as the general decimal path reads them")
    func timeFractions() {
        let cases: [(String, Double?)] = [
            ("123519", 45_319), ("123519.5", 45_319.5), ("123519.25", 45_319.25), ("123519.125", 45_319.125),
            ("123519.0625", 45_319.0625), ("123519.", nil), ("123519.x5", nil), ("123519.5x", nil),
        ]
        for (text, expected) in cases {
            let (sentences, _) = Self.parse(
                Array(Self.sentence("GPGLL,4807.038,N,01131.000,E,\(text),A,A").utf8), chunk: 0)
            // The sentence is decoded either way (a bad time is no time, not a lost position).
            guard case .gll(let time, let latitude, _, _)? = sentences.first else {
                Issue.record("\(text): no GLL decoded")
                continue
            }
            #expect(latitude != nil)
            #expect(time == expected, "\(text): \(time.map { "\($0)" } ?? "nil")")
        }
    }

    @Test("talkers and sentence types")
    func talkers() {
        let text = """
            $GNRMC,080000.00,A,5127.2338801,N,00235.8463792,W,26.048,72.00,150626,,,A*62
            $GNGSA,A,3,67,77,85,92,93,96,,,,,,,1.44,0.80,1.20,2*0A
            $GLGSV,2,2,07,92,58,053,36,93,22,279,31,96,14,161,25*58
            $GNZDA,080000.00,15,06,2026,00,00*74
            $PGRME,15.0,M,45.0,M,25.0,M*1C
            $GPTXT,01,01,02,u-blox ag - www.u-blox.com*50

            """
        let (sentences, stats) = Self.parse(Array(text.utf8), chunk: 0)
        #expect(sentences.count == 5)
        #expect(stats.ignored == 1)
        #expect(sentences.contains(.zda(time: 28800, day: 15, month: 6, year: 2026)))
        #expect(sentences.contains(.pgrme(horizontal: 15, vertical: 45)))
        if case .gsa(let mode, _, _, _, let used, let system, _, _) = sentences[1] {
            #expect(mode == 3 && used == [67, 77, 85, 92, 93, 96] && system == 2)
        } else {
            Issue.record("expected GSA")
        }
    }
}

@Suite("NMEA epoch assembly", .timeLimit(.minutes(5)))
struct EpochAssemblerTests {
    @Test("replaying fixtures through our parser gives gpsd's fixes", arguments: NMEAParserTests.gpsdFixtureNames)
    func fixturesMatchGPSD(name: String) throws {
        let (fixes, _) = NMEADecoder.fixes(in: try Data(contentsOf: Paths.fixtures.appendingPathComponent(name)))
        let reference = ReferenceTPV.parse(
            try String(
                contentsOf: Paths.fixtures.appendingPathComponent(
                    name.replacingOccurrences(of: ".nmea", with: ".gpsd.json")), encoding: .utf8))
        let agreement = Agreement.measure(name: name, ours: fixes, gpsd: reference)
        #expect(
            agreement.perfect,
            "\(agreement) missing \(agreement.missing.prefix(3)) different \(agreement.different.prefix(2)) extra \(agreement.extra.prefix(3))"
        )
        // Full dates: the fixtures are from 2026, where gpsd and we agree on the whole time.
        let milliseconds = { (date: Date) in Int64((date.timeIntervalSince1970 * 1000).rounded()) }
        let ourTimes = Set(fixes.filter(\.hasPosition).compactMap(\.time).map(milliseconds))
        let gpsdTimes = Set(
            reference.filter { $0.mode >= 2 && $0.latitude != nil }.compactMap(\.time).map(milliseconds))
        #expect(ourTimes == gpsdTimes)
    }

    @Test("a VTG after the cycle's RMC gives the epoch its course and speed, as gpsd's processVTG does")
    func vtgAfterRMC() {
        // B&G Zeus² (bundg_zeus_9.log): RMC 5.2 kn 237.7°, then VTG 5.6 kn 235.4°; gpsd's last
        // report of the epoch carries the VTG's.
        let text = [
            "GPRMC,094824,A,5250.9644,N,00518.7180,E,5.2,237.7,200818,1.4,E,A",
            "GPVTG,235.4,T,234.0,M,5.6,N,10.4,K,A",
            "GPGGA,094824,5250.9635,N,00518.7159,E,1,12,0.60,-5,M,46.8,M,,",
            "GPRMC,094825,A,5250.9634,N,00518.7157,E,5.8,232.2,200818,1.4,E,A",
            "GPVTG,230.8,T,229.4,M,5.9,N,10.9,K,A",
            "GPGGA,094825,5250.9625,N,00518.7135,E,1,12,0.60,-5,M,46.8,M,,",
        ].map(NMEAParserTests.sentence).joined()
        let fixes = lastPerEpoch(NMEADecoder.fixes(in: Data(text.utf8)).fixes)
        #expect(fixes.map(\.course) == [235.4, 230.8])
        #expect(fixes.map { ($0.speed! * 3600 / 1852 * 10).rounded() / 10 } == [5.6, 5.9])
    }

    @Test("errors come from GST when present, else gpsd's DOP × UERE model")
    func errorModel() {
        var assembler = EpochAssembler()
        var fixes: [Fix] = []
        let sentences: [NMEASentence] = [
            // The first cycle's GST before its GGA: gpsd reports a first cycle at each of its
            // fix sentences, before a GST that follows them (NMEAFieldConformanceTests).
            .zda(time: 100, day: 1, month: 1, year: 2026),
            .gst(time: 100, latitudeError: 2, longitudeError: 3, altitudeError: 4),
            .gga(
                time: 100, latitude: 1, longitude: 2, quality: 1, satellites: 8, hdop: 1.0, altitude: 10,
                geoidSeparation: 5),
            .gsa(mode: 3, pdop: 1.5, hdop: 1.0, vdop: 1.2, used: [1, 2], systemID: nil, talker: 0),
            .zda(time: 101, day: 1, month: 1, year: 2026),
            .gga(
                time: 101, latitude: 1, longitude: 2, quality: 1, satellites: 8, hdop: 1.0, altitude: 10,
                geoidSeparation: 5),
            .gsa(mode: 3, pdop: 1.5, hdop: 2.0, vdop: 1.2, used: [1, 2], systemID: nil, talker: 0),
            .zda(time: 102, day: 1, month: 1, year: 2026),
            .gga(
                time: 102, latitude: 1, longitude: 2, quality: 2, satellites: 8, hdop: 1.0, altitude: 12,
                geoidSeparation: 5),
            .gsa(mode: 3, pdop: 1.5, hdop: 1.0, vdop: 1.0, used: [1, 2], systemID: nil, talker: 0),
            .zda(time: 103, day: 1, month: 1, year: 2026),
        ]
        for sentence in sentences { assembler.add(sentence) { fixes.append($0) } }
        fixes = lastPerEpoch(fixes)
        #expect(fixes.count == 3)
        // The receiver's own 1σ estimates, at gpsd's 95 % per axis.
        #expect(
            fixes[0].errors.latitude == 2 * 1.96 && fixes[0].errors.longitude == 3 * 1.96
                && fixes[0].errors.vertical == 4 * 1.96)
        #expect(abs(fixes[0].altitudeHAE! - 15) < 1e-12)
        // No satellite geometry (no GSV): no epx/epy; eph = HDOP × 19 m, epv = VDOP × 23 m, with
        // the DOPs the cycle had when gpsd computed them (the GGA's HDOP 1.0 came first).
        #expect(fixes[1].errors.latitude == nil && fixes[1].errors.longitude == nil)
        #expect(abs(fixes[1].errors.horizontal! - 19) < 1e-12)
        #expect(abs(fixes[1].errors.vertical! - 1.2 * 23) < 1e-12)
        // DGPS (GGA quality 2): gpsd's smaller UEREs (4.75 m, 5.75 m); climb from the altitudes.
        #expect(abs(fixes[2].errors.horizontal! - 4.75) < 1e-12)
        #expect(abs(fixes[2].errors.vertical! - 1.2 * 5.75) < 1e-12)
        #expect(abs(fixes[2].climb! - 2) < 1e-12)
        #expect(fixes[2].speed == 0, "no receiver speed: gpsd's distance over time")
    }

    @Test("no separation in the GGA: gpsd's geoid figures (gpsd's own test points, to the centimetre)")
    func geoidSeparation() throws {
        // Latitude, longitude, and what gpsd 3.22's wgs84_separation gives there (tests/test_geoid.c).
        let points: [(Double, Double, Double)] = [
            (27.1127, -109.3497, -31.29), (25.5920, 21.0937, 21.80), (71.7069, -42.6043, 40.11),
            (5.7837, 144.3317, 62.34), (44.094556, -121.200222, -21.95),
        ]
        for (latitude, longitude, expected) in points {
            let separation = GPSDGeoid.separation(latitude: latitude, longitude: longitude)
            #expect(abs(separation - expected) < 0.006, "\(latitude), \(longitude): \(separation)")
        }
        #expect(GPSDGeoid.separation(latitude: .nan, longitude: 0) == 0)
        #expect(GPSDGeoid.separation(latitude: 1e300, longitude: 0) == 0)
        #expect(abs(GPSDGeoid.separation(latitude: 90, longitude: 180) - 14.90) < 1e-9)
        // A GGA without field 11: the ellipsoidal altitude from the table, as gpsd reports it.
        let data = Data(
            ([
                "GPRMC,200619.30,A,5313.2228,N,00634.4228,E,0.0,0.0,030126,,",
                "GPGGA,200619.30,5313.2228,N,00634.4228,E,1,05,2.6,00000,M,,,,",
                "GPRMC,200620.30,A,5313.2228,N,00634.4228,E,0.0,0.0,030126,,",
            ].map(NMEAParserTests.sentence).joined()).utf8)
        let (fixes, _) = NMEADecoder.fixes(in: data)
        let fix = try #require(lastPerEpoch(fixes).first)
        #expect(fix.altitudeMSL == 0 && fix.altitudeHAE == 43.0534)
    }

    @Test("GBS: the receiver's 1σ errors as gpsd takes them, for the cycle of its time")
    func gbsErrors() {
        var assembler = EpochAssembler()
        var fixes: [Fix] = []
        let gga = { (time: Double) in
            NMEASentence.gga(
                time: time, latitude: 1, longitude: 2, quality: 1, satellites: 8, hdop: 1.0, altitude: 10,
                geoidSeparation: 5)
        }
        let sentences: [NMEASentence] = [
            .zda(time: 100, day: 1, month: 1, year: 2026),
            .gbs(time: 100, latitudeError: 0.98, longitudeError: 1.5, altitudeError: 3.0), gga(100),
            .gsa(mode: 3, pdop: 1.5, hdop: 1.0, vdop: 1.2, used: [1, 2], systemID: nil, talker: 0),
            .zda(time: 101, day: 1, month: 1, year: 2026), gga(101),
            .gsa(mode: 3, pdop: 1.5, hdop: 1.0, vdop: 1.2, used: [1, 2], systemID: nil, talker: 0),
            .gbs(time: 101, latitudeError: nil, longitudeError: nil, altitudeError: nil),
            .zda(time: 102, day: 1, month: 1, year: 2026),
        ]
        for sentence in sentences { assembler.add(sentence) { fixes.append($0) } }
        let first = fixes.last { $0.time?.timeIntervalSince1970.truncatingRemainder(dividingBy: 86_400) == 100 }
        #expect(first?.errors.latitude == 0.98 && first?.errors.longitude == 1.5 && first?.errors.vertical == 3)
        // A GBS with empty fields: gpsd's DOP model (no epx/epy without satellite geometry).
        let second = fixes.first { $0.time?.timeIntervalSince1970.truncatingRemainder(dividingBy: 86_400) == 101 }
        #expect(second?.errors.latitude == nil && abs((second?.errors.vertical ?? 0) - 1.2 * 23) < 1e-9)
    }
}

/// The word-at-a-time checksum scan against the byte-wise one it replaces on the usual line:
/// the same sentences and the same counts, on every fixture and on lines damaged every way the
/// scan treats specially (second starts, stars, commas, control and high bytes, cuts).
@Suite("NMEA parser: the word-at-a-time scan", .timeLimit(.minutes(5)))
struct WordScanTests {
    /// A small deterministic generator (SplitMix64), so a failure can be replayed.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func parse(_ data: [UInt8], words: Bool) -> ([NMEASentence], NMEAStatistics) {
        var parser = NMEAParser()
        parser.scansWords = words
        var sentences: [NMEASentence] = []
        data.withUnsafeBufferPointer { parser.feed($0) { sentences.append($0) } }
        parser.finish { sentences.append($0) }
        return (sentences, parser.statistics)
    }

    @Test("every fixture: the same sentences and counts", arguments: NMEAParserTests.fixtureNames)
    func fixtures(name: String) throws {
        let data = [UInt8](try Data(contentsOf: Paths.fixtures.appendingPathComponent(name)))
        let (fast, fastStats) = Self.parse(data, words: true)
        let (reference, referenceStats) = Self.parse(data, words: false)
        #expect(fast.count > 100)
        #expect(fast == reference)
        #expect(fastStats == referenceStats)
    }

    @Test("20,000 damaged lines: the same sentences and counts")
    func damaged() throws {
        let data = [UInt8](try Data(contentsOf: Paths.fixtures.appendingPathComponent("drive-10hz-multi.nmea")))
        let lines = data.split(separator: 0x0A, omittingEmptySubsequences: true).map(Array.init)
        var random = SplitMix(state: 2026)
        let specials: [UInt8] = [
            UInt8(ascii: "$"), UInt8(ascii: "!"), UInt8(ascii: "*"), UInt8(ascii: ","), 0x00, 0x09, 0x1F, 0x7F, 0x80,
            0xFF, UInt8(ascii: "A"), UInt8(ascii: "9"), 0x0D,
        ]
        var input: [UInt8] = []
        for round in 0..<20_000 {
            var line = lines[Int.random(in: 0..<lines.count, using: &random)]
            switch round % 5 {
            case 0:
                break  // intact
            case 1:
                line.insert(specials.randomElement(using: &random)!, at: Int.random(in: 0...line.count, using: &random))
            case 2:
                if !line.isEmpty { line.remove(at: Int.random(in: 0..<line.count, using: &random)) }
            case 3:
                line =
                    Array(line.prefix(Int.random(in: 0...line.count, using: &random)))
                    + lines[Int.random(in: 0..<lines.count, using: &random)]
            default:
                for _ in 0..<Int.random(in: 1...4, using: &random) {
                    let at = Int.random(in: 0...line.count, using: &random)
                    line.insert(specials.randomElement(using: &random)!, at: at)
                }
            }
            input += line
            input.append(0x0A)
        }
        let (fast, fastStats) = Self.parse(input, words: true)
        let (reference, referenceStats) = Self.parse(input, words: false)
        #expect(fast.count > 5_000)
        #expect(fastStats.badChecksum > 0 && fastStats.noise > 0 && fastStats.missingChecksum > 0)
        #expect(fast == reference)
        #expect(fastStats == referenceStats)
    }
}
