import Foundation
import GNSSCore
import NMEA0183
import TestSupport
import Testing

/// The last cycle of an input that ends before the cycle's ending sentence: reported when gpsd
/// reported it (it had one of gpsd's cycle-ending sentences), not otherwise.
@Suite("NMEA: the last cycle at the end of input", .timeLimit(.minutes(5)))
struct EndOfInputTests {
    static func lines(_ name: String) throws -> [Data] {
        try Data(contentsOf: Paths.fixtures.appendingPathComponent(name)).split(
            separator: 0x0A, omittingEmptySubsequences: false
        ).map { Data($0) }
    }

    static func joined(_ lines: some Collection<Data>) -> Data {
        var data = Data()
        for line in lines { data += line + Data([0x0A]) }
        return data
    }

    @Test(
        "a recording cut after the last cycle's GGA (no ZDA) still gives that cycle, as gpsd does",
        arguments: ["drive-1hz-gp.nmea", "clean-1hz-multi.nmea"])
    func cutAfterPosition(name: String) throws {
        var lines = try Self.lines(name)
        if lines.last?.isEmpty == true { lines.removeLast() }
        // Drop the last cycle's lines after its GGA.
        let gga = try #require(lines.lastIndex { $0.dropFirst(3).starts(with: "GGA".utf8) })
        let cut = Self.joined(lines[...gga])
        let (fixes, _) = NMEADecoder.fixes(in: cut)
        let (whole, _) = NMEADecoder.fixes(in: Self.joined(lines))
        #expect(fixes.count == whole.count)
        #expect(fixes.last?.time == whole.last?.time)
        #expect(fixes.last?.latitude == whole.last?.latitude && fixes.last?.mode == whole.last?.mode)
        // What gpsd 3.22 reported for the whole recording is what it reports for the cut one
        // (checked with gpsfake when this test was written; the integration suite replays
        // recordings through gpsd itself).
        let reference = ReferenceTPV.parse(
            try String(
                contentsOf: Paths.fixtures.appendingPathComponent(
                    name.replacingOccurrences(of: ".nmea", with: ".gpsd.json")), encoding: .utf8))
        #expect(Agreement.measure(name: name, ours: fixes, gpsd: reference).perfect)
    }

    @Test("standard input closing mid-cycle gives the same last fix as a file")
    func pieces() throws {
        var lines = try Self.lines("drive-1hz-gp.nmea")
        if lines.last?.isEmpty == true { lines.removeLast() }
        let gga = try #require(lines.lastIndex { $0.dropFirst(3).starts(with: "GGA".utf8) })
        let cut = Self.joined(lines[...gga])
        var decoder = NMEADecoder()
        var fixes: [Fix] = []
        for start in stride(from: 0, to: cut.count, by: 777) {
            decoder.feed(cut[start..<min(cut.count, start + 777)]) { fixes.append($0) }
        }
        decoder.finish { fixes.append($0) }
        #expect(fixes == NMEADecoder.fixes(in: cut).fixes)
    }

    /// gpsd 3.22's `processRMC` takes an RMC's time for its cycle detector, and its date, only
    /// from a valid RMC with a date: a receiver whose first RMCs are "V" has its GGA learned as a
    /// cycle ender too, so a last cycle cut after its GGA is reported (`tr737A+.log`), and a "V"
    /// RMC's default date never dates a fix (`rgm3800.log`: 1980-01-05, which gave the next
    /// cycle a climb error over 28 years).
    @Test("\"V\" RMCs: neither their time teaches gpsd's cycle end nor their date dates a fix")
    func invalidRMCs() {
        var text = ""
        for second in 30...31 {
            text += NMEAParserTests.sentence("GPRMC,0717\(second).929,V,0000.0000,N,00000.0000,E,,0.00,050180,,,N")
            text += NMEAParserTests.sentence("GPGGA,0717\(second + 1).929,0000.0000,N,00000.0000,E,0,0,,,M,,M,,")
        }
        for second in 40...42 {
            text += NMEAParserTests.sentence(
                "GPGGA,0717\(second).000,4404.1316,N,12118.8473,W,1,4,5.20,1135.3,M,-19.6,M,,")
            text += NMEAParserTests.sentence("GPGSA,A,3,23,13,32,20,,,,,,,,,5.29,5.20,0.98")
            if second < 42 {
                text += NMEAParserTests.sentence(
                    "GPRMC,0717\(second).000,A,4404.1316,N,12118.8473,W,0.08,0.00,111111,,,A")
            }
        }
        let fixes = lastPerEpoch(NMEADecoder.fixes(in: Data(text.utf8)).fixes).filter(\.hasPosition)
        // The last cycle, cut after its GGA and GSA, is reported (gpsd reported it at its GGA).
        #expect(fixes.compactMap(\.time).map(iso8601Milliseconds).last == "2011-11-11T07:17:42.000Z")
        // No fix is dated 1980, and the first dated one has no climb error over decades.
        #expect(fixes.allSatisfy { ($0.time ?? .distantFuture) > Date(timeIntervalSince1970: 1e9) })
        #expect(fixes.allSatisfy { $0.errors.climb.map { $0 > 0.01 } ?? true })
    }

    @Test("a cycle that gpsd ends with GLL, cut before its GLL, is not reported (nor by gpsd)")
    func cutBeforeGPSDEnder() {
        // Garmin-style: RMC, GGA, GSA, GLL per cycle; the last cycle stops after its GSA.
        var text = ""
        for second in 10...12 {
            let time = "2000\(second)"
            text += NMEAParserTests.sentence(
                "GPRMC,\(time),A,5504.4344,N,01025.5384,E,0.0,0.0,260826,1.0,E,D")
            text += NMEAParserTests.sentence(
                "GPGGA,\(time),5504.4344,N,01025.5384,E,2,08,2.5,-9.1,M,43.9,M,,")
            text += NMEAParserTests.sentence("GPGSA,A,3,01,02,03,04,,,,,,,,,2.7,2.5,1.0")
            if second < 12 {
                text += NMEAParserTests.sentence("GPGLL,5504.4344,N,01025.5384,E,\(time),A,D")
            }
        }
        let times = lastPerEpoch(NMEADecoder.fixes(in: Data(text.utf8)).fixes).compactMap(\.time).map(
            iso8601Milliseconds)
        #expect(times == ["2026-08-26T20:00:10.000Z", "2026-08-26T20:00:11.000Z"])
    }
}

/// The last fix of each epoch, in order. Like gpsd, the engine may report an epoch more than
/// once while its cycle fills (the first cycle, before the receiver's cycle is learned; a
/// cycle with two ending sentences); the last report is the complete one.
func lastPerEpoch(_ fixes: [Fix]) -> [Fix] {
    var result: [Fix] = []
    for fix in fixes {
        if let last = result.last, last.time == fix.time { result.removeLast() }
        result.append(fix)
    }
    return result
}
