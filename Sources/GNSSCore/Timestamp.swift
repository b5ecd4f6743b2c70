import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

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
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { text in
        let count = writeISO8601Milliseconds(date, to: text.baseAddress!)
        buffer.append(contentsOf: UnsafeBufferPointer(start: text.baseAddress!, count: count))
    }
}

/// Writes `date` as `iso8601Milliseconds` does into `text`, which has room for 24 bytes;
/// returns the count written (24).
public func writeISO8601Milliseconds(_ date: Date, to text: UnsafeMutablePointer<UInt8>) -> Int {
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
    // Written into memory the caller holds (a byte-by-byte append to an array checks its
    // capacity and uniqueness 24 times: 2 % of a fast replay's instructions).
    var at = 0
    // The last `count` decimal digits of `value`, most significant first.
    func digits(_ value: Int64, _ count: Int) {
        var remaining = value
        var index = at + count - 1
        while index >= at {
            text[index] = UInt8(truncatingIfNeeded: remaining % 10) + 48
            remaining /= 10
            index -= 1
        }
        at += count
    }
    func byte(_ ascii: Unicode.Scalar) {
        text[at] = UInt8(ascii: ascii)
        at += 1
    }
    digits(year, 4)
    byte("-")
    digits(month, 2)
    byte("-")
    digits(day, 2)
    byte("T")
    digits(secondOfDay / 3600, 2)
    byte(":")
    digits(secondOfDay / 60 % 60, 2)
    byte(":")
    digits(secondOfDay % 60, 2)
    byte(".")
    digits(millis, 3)
    byte("Z")
    return at
}
