import Foundation
import GNSSCore
import Testing

@testable import NMEA0183

/// A cycle whose time-bearing sentences disagree (its RMC a second ahead of its GGA).
@Suite("cycles whose sentences disagree on the time", .timeLimit(.minutes(5)))
struct MixedTimeTests {
    /// Eight cycles of RMC, GGA, GSA at 12:00:00…07; cycle 4's RMC says 12:00:05. The RMC always
    /// gives 51.45° and the GGA 51.45° + i × 0.0001′, so which sentence a fix came from shows.
    static func recording() -> Data {
        func sentence(_ body: String) -> String {
            var checksum: UInt8 = 0
            for byte in body.utf8 { checksum ^= byte }
            return "$" + body + "*" + String(format: "%02X", checksum) + "\r\n"
        }
        var text = ""
        for cycle in 0..<8 {
            let time = 120_000 + cycle
            text += sentence(
                String(
                    format: "GPRMC,%06d.00,A,5127.0000,N,00235.0000,W,0.0,0.0,150626,,,A", cycle == 4 ? time + 1 : time)
            )
            text += sentence(
                String(format: "GPGGA,%06d.00,5127.%04d,N,00235.0000,W,1,08,0.9,40.0,M,48.2,M,,", time, cycle))
            text += sentence("GPGSA,A,3,01,02,03,04,05,06,07,08,,,,,1.5,0.9,1.2")
        }
        return Data(text.utf8)
    }

    @Test("each epoch once, with the GGA's position — what gpsd 3.22 reports last for each epoch")
    func gpsdFinalValues() {
        let fixes = lastPerEpoch(NMEADecoder.fixes(in: Self.recording()).fixes)
        let seconds = fixes.compactMap { $0.time.map { Int($0.timeIntervalSince1970) % 60 } }
        #expect(seconds == Array(0..<8))
        // gpsfake + gpspipe -w on this recording: the last TPV of 12:00:04 … 07 has latitudes
        // 51.450006667, 51.450008333, 51.45001, 51.450011667 (the GGA's). Before this rule the
        // mixed cycle taught the assembler that RMC ends a cycle, and every later epoch was
        // reported at its RMC, with the RMC's position (51.45).
        for (index, fix) in fixes.enumerated() {
            let expected = 51.45 + Double(index) * 0.0001 / 60
            #expect(abs((fix.latitude ?? 0) - expected) < 1e-9, "epoch \(index): \(fix.latitude ?? .nan)")
        }
    }
}
