import GNSSCore

// The assembler's value conversions, as gpsd makes them: a file of their own beside
// `EpochAssembler`'s rules.
extension EpochAssembler {
    /// `value` to `decimals` places, as gpsd prints it (half away from zero; through an integer,
    /// which is cheaper here than libm's `round`; values too large for that are left as they are).
    @inline(__always)
    static func wire(_ value: Double?, _ decimals: Int) -> Double? {
        guard let value else { return nil }
        let scale: Double =
            switch decimals {
            case 2: 100
            case 3: 1_000
            case 4: 10_000
            default: 1_000_000_000
            }
        let scaled = value * scale
        guard abs(scaled) < 9e15 else { return value }
        return Double(Int64(scaled + (scaled < 0 ? -0.5 : 0.5))) / scale
    }

    /// gpsd's fix status from RMC's FAA mode indicator (no indicator: a valid fix).
    static func status(faaMode: UInt8?) -> Int {
        switch faaMode {
        case UInt8(ascii: "D")?, UInt8(ascii: "P")?: 2
        case UInt8(ascii: "R")?: 4
        case UInt8(ascii: "F")?: 5
        case UInt8(ascii: "E")?: 6
        case UInt8(ascii: "N")?, UInt8(ascii: "S")?, UInt8(ascii: "C")?, UInt8(ascii: "U")?: 0
        default: 1
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func quality(_ gga: Int) -> FixQuality {
        switch gga {
        case 1: .gps
        case 2: .dgps
        case 3: .pps
        case 4: .rtkFixed
        case 5: .rtkFloat
        case 6: .deadReckoning
        case 8: .simulated
        default: .unknown
        }
    }
}
