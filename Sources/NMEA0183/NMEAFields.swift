import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// Field access over a sentence body without copying: up to 48 comma-separated fields, their
/// start offsets in a table the parser fills as it scans the line (on the stack).
struct Fields {
    private let body: UnsafeBufferPointer<UInt8>
    /// Field i spans `starts[i] ..< starts[i + 1] - 1` in the body (field 0 is the tag).
    private let starts: UnsafePointer<Int16>
    let count: Int
    static let capacity = 48

    /// `starts[1..<count]` hold the offsets after each comma; this sets the first and the end.
    init(body: UnsafeBufferPointer<UInt8>, starts: UnsafeMutablePointer<Int16>, count: Int) {
        starts[0] = 0
        starts[count] = Int16(body.count + 1)
        self.body = body
        self.starts = UnsafePointer(starts)
        self.count = count
    }

    @inline(__always) private func range(_ index: Int) -> Range<Int> {
        Int(starts[index])..<(Int(starts[index + 1]) - 1)
    }

    var tag: UnsafeBufferPointer<UInt8> { bytes(0) }

    @inline(__always)
    func bytes(_ index: Int) -> UnsafeBufferPointer<UInt8> {
        guard index < count else { return UnsafeBufferPointer(start: nil, count: 0) }
        return UnsafeBufferPointer(rebasing: body[range(index)])
    }

    func byte(_ index: Int) -> UInt8? {
        let field = bytes(index)
        return field.isEmpty ? nil : field[0]
    }

    @inline(__always)
    func integer(_ index: Int) -> Int? {
        let field = bytes(index)
        let count = field.count
        guard count > 0 else { return nil }
        var value = 0
        let negative = field[0] == UInt8(ascii: "-")
        var position = negative ? 1 : 0
        while position < count {
            let digit = field[position] &- 0x30
            guard digit <= 9 else {
                if field[position] == UInt8(ascii: ".") { break }
                return nil
            }
            value = value &* 10 &+ Int(digit)
            if value > 1_000_000_000 { return nil }
            position += 1
        }
        return negative ? -value : value
    }

    /// A GSV elevation, azimuth or signal: nearly always a few whole digits, read as such; a
    /// sign or a fraction takes the general decimal path.
    @inline(__always)
    func satelliteValue(_ index: Int) -> Double? {
        let field = bytes(index)
        guard !field.isEmpty, field.count <= 3 else { return field.isEmpty ? nil : Self.parseDecimal(field)?.value }
        var value = 0
        for byte in field {
            let digit = byte &- 0x30
            guard digit <= 9 else { return Self.parseDecimal(field)?.value }
            value = value &* 10 &+ Int(digit)
        }
        return Double(value)
    }

    /// A decimal number: optional sign, digits, optional fraction. Nil when empty or not a number.
    @inline(__always)
    func double(_ index: Int) -> Double? {
        let field = bytes(index)
        guard !field.isEmpty else { return nil }
        return Self.parseDecimal(field)?.value
    }

    /// (value, integer part, fractional digits as a value in [0,1)): exact enough for coordinates.
    static func parseDecimal(_ field: UnsafeBufferPointer<UInt8>) -> (value: Double, integer: Int, fraction: Double)? {
        let count = field.count
        guard count > 0, let bytes = field.baseAddress else { return nil }
        var index = 0
        let sign = bytes[0]
        let negative = sign == UInt8(ascii: "-")
        if negative || sign == UInt8(ascii: "+") { index = 1 }
        // The digits are read with no check a digit (a receiver's fields are short); the rare
        // long field is checked once, after.
        let integerStart = index
        var integer = 0
        while index < count {
            let digit = bytes[index] &- 0x30
            if digit > 9 { break }
            integer = integer &* 10 &+ Int(digit)
            index &+= 1
        }
        if index &- integerStart > 18 {
            // More digits than an Int holds (the sum may have wrapped): what counts is the
            // digits after the leading zeros, and more than twelve of those pass the limit.
            var first = integerStart
            while first < index && bytes[first] == UInt8(ascii: "0") { first &+= 1 }
            guard index &- first <= 12 else { return nil }
            integer = 0
            for position in first..<index { integer = integer &* 10 &+ Int(bytes[position] &- 0x30) }
        }
        // (Each prefix of the digits is at most the whole: over the limit anywhere is over it here.)
        if integer > 100_000_000_000 { return nil }
        var seenDigit = index > integerStart
        var fractionDigits = 0
        var scale = 0
        if index < count {
            guard bytes[index] == UInt8(ascii: ".") else { return nil }
            index &+= 1
            let fractionStart = index
            // Digits beyond the 17th add nothing a Double can hold: checked, not added.
            let kept = min(count, fractionStart &+ 17)
            while index < kept {
                let digit = bytes[index] &- 0x30
                guard digit <= 9 else { return nil }
                fractionDigits = fractionDigits &* 10 &+ Int(digit)
                index &+= 1
            }
            scale = index &- fractionStart
            while index < count {
                guard bytes[index] &- 0x30 <= 9 else { return nil }
                index &+= 1
            }
            seenDigit = seenDigit || index > fractionStart
        }
        guard seenDigit else { return nil }
        let fraction = Double(fractionDigits) / Self.powerOfTen(scale)
        let value = Double(integer) + fraction
        return (negative ? -value : value, negative ? -integer : integer, negative ? -fraction : fraction)
    }

    /// 10ⁿ for n in 0…17, exact in a Double (a switch: no table behind a lazy global).
    @inline(__always) private static func powerOfTen(_ exponent: Int) -> Double {
        switch exponent {
        case 0: 1
        case 1: 1e1
        case 2: 1e2
        case 3: 1e3
        case 4: 1e4
        case 5: 1e5
        case 6: 1e6
        case 7: 1e7
        case 8: 1e8
        case 9: 1e9
        case 10: 1e10
        case 11: 1e11
        case 12: 1e12
        case 13: 1e13
        case 14: 1e14
        case 15: 1e15
        case 16: 1e16
        default: 1e17
        }
    }

    /// `hhmmss[.ss]` as seconds of the day.
    func time(_ index: Int) -> Double? {
        let field = bytes(index)
        guard field.count >= 6 else { return nil }
        let d0 = field[0] &- 0x30
        let d1 = field[1] &- 0x30
        let d2 = field[2] &- 0x30
        let d3 = field[3] &- 0x30
        let d4 = field[4] &- 0x30
        let d5 = field[5] &- 0x30
        guard d0 <= 9, d1 <= 9, d2 <= 9, d3 <= 9, d4 <= 9, d5 <= 9 else { return nil }
        let hours = Int(d0) * 10 + Int(d1)
        let minutes = Int(d2) * 10 + Int(d3)
        let seconds = Int(d4) * 10 + Int(d5)
        guard hours < 24, minutes < 60, seconds < 61 else { return nil }
        var fraction = 0.0
        if field.count > 7 && field.count <= 10 && field[6] == UInt8(ascii: ".") {
            // hhmmss.s to hhmmss.sss (nearly every receiver): the digits as parseDecimal reads
            // them, digits / 10ⁿ, without its general path.
            var digits = 0
            for index in 7..<field.count {
                let digit = field[index] &- 0x30
                guard digit <= 9 else { return nil }
                digits = digits &* 10 &+ Int(digit)
            }
            let scale: Double = field.count == 8 ? 10 : field.count == 9 ? 100 : 1000
            fraction = Double(digits) / scale
        } else if field.count > 6 {
            guard field[6] == UInt8(ascii: "."),
                let parsed = Self.parseDecimal(UnsafeBufferPointer(rebasing: field[6...]))
            else {
                return nil
            }
            fraction = parsed.value
        }
        return Double(hours * 3600 + minutes * 60 + seconds) + fraction
    }

    /// `ddmmyy` (the year has two digits).
    func ddmmyy(_ index: Int) -> NMEADate? {
        let field = bytes(index)
        guard field.count == 6, field.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        let day = Int(field[0] - 0x30) * 10 + Int(field[1] - 0x30)
        let month = Int(field[2] - 0x30) * 10 + Int(field[3] - 0x30)
        let year = Int(field[4] - 0x30) * 10 + Int(field[5] - 0x30)
        guard (1...31).contains(day), (1...12).contains(month) else { return nil }
        return NMEADate(day: day, month: month, year: year)
    }

    /// `ddmm.mmmm,N,dddmm.mmmm,E` starting at `index`, in degrees; nil when incomplete or invalid.
    func position(_ index: Int) -> (Double, Double)? {
        guard index + 3 < count,
            let latitude = Self.degrees(bytes(index)), let longitude = Self.degrees(bytes(index + 2))
        else { return nil }
        let north = byte(index + 1)
        let east = byte(index + 3)
        guard north == UInt8(ascii: "N") || north == UInt8(ascii: "S"),
            east == UInt8(ascii: "E") || east == UInt8(ascii: "W"),
            latitude <= 90, longitude <= 180
        else { return nil }
        return (north == UInt8(ascii: "S") ? -latitude : latitude, east == UInt8(ascii: "W") ? -longitude : longitude)
    }

    /// NMEA `dddmm.mmmm` to degrees, splitting the integer part exactly.
    static func degrees(_ field: UnsafeBufferPointer<UInt8>) -> Double? {
        guard !field.isEmpty, let parsed = parseDecimal(field), parsed.integer >= 0 else { return nil }
        let degrees = parsed.integer / 100
        let minutes = Double(parsed.integer % 100) + parsed.fraction
        guard minutes < 60 else { return nil }
        return Double(degrees) + minutes / 60
    }
}
