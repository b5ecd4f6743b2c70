import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

// The sentence types `NMEAParser.decode` knows, each from its fields as gpsd 3.22's
// `driver_nmea0183.c` reads them: a file of their own beside the parser's framing and scan. Each
// decoder calls `handle` with the sentence it makes and returns true, or returns false (malformed)
// having called nothing; `decode` counts which.
extension NMEAParser {
    /// PGRMZ as gpsd 3.22 reads it (`processPGRMZ`): the altitude's whole feet (`atoi`) when the
    /// unit is `f`, and the mode digit.
    static func pgrmz(_ f: Fields) -> NMEASentence {
        let feet = f.byte(2) == UInt8(ascii: "f") ? f.double(1).flatMap { abs($0) < 1e9 ? Int($0) : nil } : nil
        let mode: Int? =
            switch f.bytes(3).first {
            case UInt8(ascii: "1")?: 1
            case UInt8(ascii: "2")?: 2
            case UInt8(ascii: "3")?: 3
            default: nil
            }
        return .pgrmz(altitudeFeet: feet, mode: mode)
    }

    func rmc(_ f: Fields, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 10 else { return false }
        let status = f.byte(2)
        guard status == UInt8(ascii: "A") || status == UInt8(ascii: "V") else { return false }
        let position = f.position(3)
        handle(
            .rmc(
                time: f.time(1), valid: status == UInt8(ascii: "A"), latitude: position?.0, longitude: position?.1,
                speedKnots: f.double(7), course: f.double(8), date: f.ddmmyy(9),
                modeIndicator: f.count > 12 ? f.byte(12) : nil))
        return true
    }

    func gga(_ f: Fields, talker: UInt16, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 10 else { return false }
        let position = f.position(2)
        let quality = f.integer(6) ?? 0
        handle(
            .gga(
                time: f.time(1), latitude: position?.0, longitude: position?.1, quality: quality,
                satellites: f.integer(7),
                hdop: f.double(8), altitude: f.double(9), geoidSeparation: f.count > 11 ? f.double(11) : nil,
                talker: talker))
        return true
    }

    /// GNS: like GGA, with a mode string per constellation instead of a quality number.
    func gns(_ f: Fields, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 10 else { return false }
        let position = f.position(2)
        var quality = 0
        for byte in f.bytes(6) {
            switch byte {
            case UInt8(ascii: "A"): quality = max(quality, 1)
            case UInt8(ascii: "D"), UInt8(ascii: "P"): quality = max(quality, 2)
            case UInt8(ascii: "R"): quality = max(quality, 4)
            case UInt8(ascii: "F"): quality = max(quality, 5)
            case UInt8(ascii: "E"): quality = max(quality, 6)
            default: break
            }
        }
        handle(
            .gga(
                time: f.time(1), latitude: position?.0, longitude: position?.1, quality: quality,
                satellites: f.integer(7),
                hdop: f.double(8), altitude: f.double(9), geoidSeparation: f.double(10)))
        return true
    }

    func gll(_ f: Fields, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 7 else { return false }
        let position = f.position(1)
        let valid = f.byte(6) == UInt8(ascii: "A") && (f.count < 8 || f.byte(7) != UInt8(ascii: "N"))
        handle(.gll(time: f.time(5), latitude: position?.0, longitude: position?.1, valid: valid))
        return true
    }

    func gsa(_ f: Fields, talker: UInt16, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 18 else { return false }
        var used = NMEAInlineList<12, Int16>()
        if collectsSatellites {
            for index in 3...14 {
                if let prn = f.integer(index), prn > 0, prn <= Int(Int16.max) { used.append(Int16(prn)) }
            }
        }
        handle(
            .gsa(
                mode: f.integer(2), pdop: f.double(15), hdop: f.double(16), vdop: f.double(17), used: used,
                systemID: f.count > 18 ? f.integer(18) : nil, talker: talker, fieldCount: f.count))
        return true
    }

    func gsv(_ f: Fields, talker: UInt16, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 4, let total = f.integer(1), let part = f.integer(2) else { return false }
        var satellites = NMEAInlineList<4, NMEASatellite>()
        // Whole groups of four only, as gpsd reads them (`processGSV`: fields below count / 4 * 4,
        // the name counted): a trailing signal ID (NMEA 4.10) or a cut group is no satellite.
        let end = f.count / 4 * 4
        var index = collectsSatellites ? 4 : end
        while index < end {
            if let prn = f.integer(index), prn > 0 {
                satellites.append(
                    NMEASatellite(
                        prn: prn, elevation: f.satelliteValue(index + 1), azimuth: f.satelliteValue(index + 2),
                        signalToNoise: f.satelliteValue(index + 3)))
            }
            index += 4
        }
        handle(
            .gsv(
                talker: talker, total: total, part: part, inView: f.integer(3) ?? satellites.count,
                satellites: satellites,
                fieldCount: f.count))
        return true
    }

    func vtg(_ f: Fields, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 8 else { return false }
        let mode = f.count > 9 ? f.byte(9) : nil
        let valid = mode != UInt8(ascii: "N") && mode != UInt8(ascii: "E")
        handle(.vtg(course: f.double(1), speedKnots: f.double(5), valid: valid))
        return true
    }

    func gst(_ f: Fields, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 9 else { return false }
        handle(
            .gst(
                time: f.time(1), latitudeError: f.double(6), longitudeError: f.double(7), altitudeError: f.double(8)))
        return true
    }

    func gbs(_ f: Fields, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 5 else { return false }
        handle(
            .gbs(
                time: f.time(1), latitudeError: f.double(2), longitudeError: f.double(3), altitudeError: f.double(4)))
        return true
    }

    /// A heading in degrees, or nil outside 0…360 (gpsd's `processHDT` check).
    private static func heading(_ value: Double?) -> Double? {
        guard let value, value >= 0, value <= 360 else { return nil }
        return value == 360 ? 0 : value
    }

    /// HDT: `$HEHDT,341.8,T*hh`, true heading.
    func hdt(_ f: Fields, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 2, let heading = Self.heading(f.double(1)) else { return false }
        handle(.heading(trueHeading: heading, magneticHeading: nil, variation: nil))
        return true
    }

    /// THS (NMEA 4): `$GNTHS,341.8,A*hh`, true heading and its mode (A autonomous, E
    /// estimated, M manual, S simulator, V not valid: dropped).
    func ths(_ f: Fields, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 3, f.byte(2) != UInt8(ascii: "V"), let heading = Self.heading(f.double(1)) else {
            return false
        }
        handle(.heading(trueHeading: heading, magneticHeading: nil, variation: nil))
        return true
    }

    /// HDG: `$HCHDG,234.6,1.2,E,1.3,W*hh` — a magnetic sensor's reading, its deviation and the
    /// magnetic variation (each E or W). Magnetic heading = reading + deviation (east positive);
    /// the true heading follows from the variation where the sentence has one.
    func hdg(_ f: Fields, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 6, let reading = Self.heading(f.double(1)) else { return false }
        func signed(_ value: Int, _ direction: Int) -> Double? {
            guard let number = f.double(value) else { return nil }
            switch f.byte(direction) {
            case UInt8(ascii: "E"): return number
            case UInt8(ascii: "W"): return -number
            default: return nil
            }
        }
        var magnetic = reading + (signed(2, 3) ?? 0)
        magnetic = (magnetic.truncatingRemainder(dividingBy: 360) + 360).truncatingRemainder(dividingBy: 360)
        let variation = signed(4, 5)
        handle(.heading(trueHeading: nil, magneticHeading: magnetic, variation: variation))
        return true
    }

    func zda(_ f: Fields, _ handle: (NMEASentence) -> Void) -> Bool {
        guard f.count >= 5, let day = f.integer(2), let month = f.integer(3), let year = f.integer(4),
            (1...31).contains(day), (1...12).contains(month), year > 1900
        else { return false }
        handle(.zda(time: f.time(1), day: day, month: month, year: year))
        return true
    }
}
