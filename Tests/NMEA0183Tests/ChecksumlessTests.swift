import Foundation
import GNSSCore
import NMEA0183
import TestSupport
import Testing

/// Receivers that send no `*hh` at all: whole, well-formed lines are accepted as gpsd accepts
/// them; cut-off lines are still faults.
@Suite("NMEA sentences without a checksum", .timeLimit(.minutes(5)))
struct ChecksumlessTests {
    static func parse(_ text: String) -> ([NMEASentence], NMEAStatistics) {
        var parser = NMEAParser()
        var sentences: [NMEASentence] = []
        parser.feed(Data(text.utf8)) { sentences.append($0) }
        parser.finish { sentences.append($0) }
        return (sentences, parser.statistics)
    }

    @Test(
        "a recording without checksums gives the same fixes as with them (errors aside); GSV is left out, as gpsd does")
    func wholeRecording() throws {
        let plain = try Data(contentsOf: Paths.fixtures.appendingPathComponent("nochecksum-1hz-multi.nmea"))
        let checked = try Data(contentsOf: Paths.fixtures.appendingPathComponent("clean-1hz-multi.nmea"))
        let (allFixes, statistics) = NMEADecoder.fixes(in: plain)
        let (allReference, referenceStatistics) = NMEADecoder.fixes(in: checked)
        let fixes = lastPerEpoch(allFixes)
        let reference = lastPerEpoch(allReference)
        #expect(fixes.count == 120)
        // The same fixes but for the errors: without GSV there is no satellite geometry, so gpsd's
        // model has no X/Y DOPs (epx/epy) and falls back to HDOP and VDOP, as gpsd does.
        var withoutErrors = fixes
        var referenceWithoutErrors = reference
        for index in withoutErrors.indices { withoutErrors[index].errors = FixErrors() }
        for index in referenceWithoutErrors.indices { referenceWithoutErrors[index].errors = FixErrors() }
        #expect(withoutErrors == referenceWithoutErrors)
        #expect(fixes.dropFirst().allSatisfy { $0.errors.horizontal != nil })
        // Bytes, not Characters: "\r\n" is one Character.
        let lines = plain.split(separator: 0x0A)
        let gsv = lines.count { $0.dropFirst(3).starts(with: "GSV".utf8) }
        #expect(statistics.withoutChecksum == lines.count - 1 - gsv, "every line but the comment and the GSVs")
        #expect(gsv > 0 && statistics.satellitesWithoutChecksum == gsv && statistics.missingChecksum == 0)
        #expect(statistics.badChecksum == 0 && statistics.malformed == 0)
        #expect(referenceStatistics.withoutChecksum == 0)
    }

    @Test("cut-off lines stay faults and never hide the next sentence")
    func cutOffLines() {
        let good = NMEAParserTests.sentence("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
        let cases: [(String, String)] = [
            ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,4\r\n", "cut mid-field: too few fields"),
            ("$GPRMC,123519,A,4807.038,N,01131.0\r\n", "cut mid-field: too few fields"),
            ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,$GPGGA,1\r\n", "another start mid-line"),
            ("$GPGGA,123519,48O7.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,\r\n", "a letter in a number"),
            ("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,,\r\n", "one field too many"),
            ("$GPGSV,3,1,11,03,03,111,00,04,15,270,00,06,01,010,00,13,06,292,00\r\n", "GSV needs its checksum"),
            ("$GPTXT,01,01,02,ANTSTATUS=OK\r\n", "a type we do not decode"),
        ]
        for (bad, why) in cases {
            let (sentences, statistics) = Self.parse(bad + good)
            #expect(statistics.missingChecksum + statistics.satellitesWithoutChecksum == 1, "\(why): \(statistics)")
            #expect(statistics.withoutChecksum == 0, "\(why)")
            #expect(sentences.count == 1, "\(why): only the good sentence")
        }
        // The last line of a recording without its line feed may be cut off: a fault.
        let (sentences, statistics) = Self.parse(
            good + "$GPGGA,123520,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,")
        #expect(sentences.count == 1 && statistics.missingChecksum == 1 && statistics.withoutChecksum == 0)
    }

    @Test("each decoded type is accepted whole without a checksum, in its NMEA versions")
    func everyType() {
        let lines = [
            "$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W",
            "$GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W,A",
            "$GNRMC,123519.00,A,4807.038,N,01131.000,E,0.1,,230394,,,A,V",
            "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
            "$GNGNS,123519.00,4807.038,N,01131.000,E,AAN,10,0.9,545.4,46.9,,,V",
            "$GPGLL,4807.038,N,01131.000,E,123519,A,A",
            "$GPGSA,A,3,04,05,,09,12,,,24,,,,,2.5,1.3,2.1",
            "$GNGSA,A,3,04,05,,09,12,,,24,,,,,2.5,1.3,2.1,1",
            "$GPVTG,054.7,T,034.4,M,005.5,N,010.2,K,A",
            "$GPGST,123519.00,1.7,1.5,1.0,35.0,1.2,1.1,2.6",
            "$GPZDA,123519.00,23,03,2026,00,00",
            "$PGRME,15.0,M,45.0,M,25.0,M",
        ]
        let (sentences, statistics) = Self.parse(lines.map { $0 + "\r\n" }.joined())
        #expect(sentences.count == lines.count && statistics.withoutChecksum == lines.count, "\(statistics)")
    }
}
