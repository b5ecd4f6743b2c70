import Foundation

/// A timestamp as GPSLocation prints it everywhere: UTC ISO 8601 with milliseconds
/// (`2026-06-15T08:00:00.100Z`).
public func iso8601Milliseconds(_ date: Date) -> String {
    var buffer: [UInt8] = []
    buffer.reserveCapacity(24)
    appendISO8601Milliseconds(date, to: &buffer)
    return String(decoding: buffer, as: UTF8.self)
}

/// Appends `date` as `iso8601Milliseconds` does, without Foundation's formatters (this runs
/// for every NDJSON line).
public func appendISO8601Milliseconds(_ date: Date, to buffer: inout [UInt8]) {
    let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
    var seconds = milliseconds / 1000
    var millis = milliseconds % 1000
    if millis < 0 {
        millis += 1000
        seconds -= 1
    }
    var days = seconds / 86_400
    var secondOfDay = seconds % 86_400
    if secondOfDay < 0 {
        secondOfDay += 86_400
        days -= 1
    }
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468
    let era = (z >= 0 ? z : z - 146_096) / 146_097
    let dayOfEra = z - era * 146_097
    let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
    let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
    let mp = (5 * dayOfYear + 2) / 153
    let day = dayOfYear - (153 * mp + 2) / 5 + 1
    let month = mp < 10 ? mp + 3 : mp - 9
    let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
    func digits(_ value: Int64, _ count: Int) {
        var divisor: Int64 = 1
        for _ in 1..<count { divisor *= 10 }
        var remaining = value
        while divisor > 0 {
            buffer.append(UInt8(truncatingIfNeeded: remaining / divisor % 10) + 48)
            remaining %= divisor
            divisor /= 10
        }
    }
    digits(year, 4)
    buffer.append(UInt8(ascii: "-"))
    digits(month, 2)
    buffer.append(UInt8(ascii: "-"))
    digits(day, 2)
    buffer.append(UInt8(ascii: "T"))
    digits(secondOfDay / 3600, 2)
    buffer.append(UInt8(ascii: ":"))
    digits(secondOfDay / 60 % 60, 2)
    buffer.append(UInt8(ascii: ":"))
    digits(secondOfDay % 60, 2)
    buffer.append(UInt8(ascii: "."))
    digits(millis, 3)
    buffer.append(UInt8(ascii: "Z"))
}
