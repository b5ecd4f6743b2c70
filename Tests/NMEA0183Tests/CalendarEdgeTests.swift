import Foundation
import GNSSCore
import NMEA0183
import Testing

/// Times of day placed on the calendar across midnight, the year's end and February's end.
/// The recordings in `fixtures/midnight-*.nmea` cross the same edges with a date in every
/// cycle and are compared with gpsd in `EpochAssemblerTests`; these cover the receivers that
/// date only some of their cycles.
@Suite("NMEA dates across midnight, the year's end and February", .timeLimit(.minutes(5)))
struct CalendarEdgeTests {
    static func sentence(_ body: String) -> String { NMEAParserTests.sentence(body) }

    /// A GGA (with a GSA after it) for each time of day, after one ZDA dating the first.
    static func ggaOnly(zdaDate: String, times: [String]) -> String {
        var text = sentence("GPZDA,\(times[0]),\(zdaDate),00,00")
        for time in times {
            text += sentence("GPGGA,\(time),5127.2358922,N,00235.8364585,W,1,09,0.80,41.6,M,48.2,M,,")
            text += sentence("GPGSA,A,3,01,02,03,04,05,,,,,,,,1.5,0.8,1.2")
        }
        return text
    }

    static func times(_ text: String) -> [String] {
        lastPerEpoch(NMEADecoder.fixes(in: Data(text.utf8)).fixes).compactMap { $0.time.map(iso8601Milliseconds) }
    }

    @Test(
        "a receiver that dates one cycle: later cycles roll over at midnight",
        arguments: [
            ("31,12,2025", "2025-12-31", "2026-01-01"),
            ("28,02,2028", "2028-02-28", "2028-02-29"),
            ("29,02,2028", "2028-02-29", "2028-03-01"),
            ("28,02,2027", "2027-02-28", "2027-03-01"),
            ("30,06,2026", "2026-06-30", "2026-07-01"),
        ])
    func undatedCyclesRollOver(zda: String, before: String, after: String) {
        let text = Self.ggaOnly(zdaDate: zda, times: ["235958.00", "235959.00", "000000.00", "000001.00"])
        #expect(
            Self.times(text) == [
                "\(before)T23:59:58.000Z", "\(before)T23:59:59.000Z", "\(after)T00:00:00.000Z",
                "\(after)T00:00:01.000Z",
            ])
    }

    @Test("days without a date: each midnight adds one day, not more")
    func severalMidnights() {
        // One fix every six hours for two days, dated once.
        let times = ["180000.00", "000000.00", "060000.00", "120000.00", "180000.00", "000000.00"]
        #expect(
            Self.times(Self.ggaOnly(zdaDate: "15,06,2026", times: times)) == [
                "2026-06-15T18:00:00.000Z", "2026-06-16T00:00:00.000Z", "2026-06-16T06:00:00.000Z",
                "2026-06-16T12:00:00.000Z", "2026-06-16T18:00:00.000Z", "2026-06-17T00:00:00.000Z",
            ])
    }

    @Test("the new date in the first cycle after midnight is not added to the rollover")
    func datedEveryCycle() {
        var text = ""
        for (time, date) in [("235958.00", "150626"), ("235959.00", "150626"), ("000000.00", "160626")] {
            text += Self.sentence("GPRMC,\(time),A,5127.2358922,N,00235.8364585,W,26.048,72.00,\(date),,,A")
            text += Self.sentence("GPGGA,\(time),5127.2358922,N,00235.8364585,W,1,09,0.80,41.6,M,48.2,M,,")
        }
        #expect(
            Self.times(text) == [
                "2026-06-15T23:59:58.000Z", "2026-06-15T23:59:59.000Z", "2026-06-16T00:00:00.000Z",
            ])
    }

    @Test("a cycle ended by its GGA before the ZDA that dates the new day: still the new day")
    func dateAfterTheEndingSentence() {
        // GGA ends each cycle (learned); the ZDA after it carries the date of that same time.
        var text = ""
        for (time, date) in [("235958.00", "15,06,2026"), ("235959.00", "15,06,2026"), ("000000.00", "16,06,2026")] {
            text += Self.sentence("GPZDA,\(time),\(date),00,00")
            text += Self.sentence("GPGGA,\(time),5127.2358922,N,00235.8364585,W,1,09,0.80,41.6,M,48.2,M,,")
        }
        text += Self.sentence("GPZDA,000001.00,16,06,2026,00,00")
        text += Self.sentence("GPGGA,000001.00,5127.2358922,N,00235.8364585,W,1,09,0.80,41.6,M,48.2,M,,")
        #expect(
            Self.times(text) == [
                "2026-06-15T23:59:58.000Z", "2026-06-15T23:59:59.000Z", "2026-06-16T00:00:00.000Z",
                "2026-06-16T00:00:01.000Z",
            ])
    }

    @Test("a late cycle from before midnight after the new date keeps its own day")
    func lateCycleBeforeMidnight() {
        var text = Self.sentence("GPZDA,000000.00,16,06,2026,00,00")
        text += Self.sentence("GPGGA,000000.00,5127.2358922,N,00235.8364585,W,1,09,0.80,41.6,M,48.2,M,,")
        text += Self.sentence("GPGGA,235959.50,5127.2358922,N,00235.8364585,W,1,09,0.80,41.6,M,48.2,M,,")
        text += Self.sentence("GPGGA,000001.00,5127.2358922,N,00235.8364585,W,1,09,0.80,41.6,M,48.2,M,,")
        #expect(
            Self.times(text) == [
                "2026-06-16T00:00:00.000Z", "2026-06-15T23:59:59.500Z", "2026-06-16T00:00:01.000Z",
            ])
    }
}
