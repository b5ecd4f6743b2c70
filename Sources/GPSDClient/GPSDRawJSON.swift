import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// Reading fields from gpsd's raw JSON lines where libgps cannot (e.g. DEVICE deactivation),
/// by scanning the line's bytes where they are (every line gpsd sends passes here: no
/// Foundation string search, no copy of the line).
enum GPSDRawJSON {
    /// The string value of `"key":"…"` in a line's bytes (`key` with its quotes and colon and
    /// the opening quote of the value, e.g. `"device":"`).
    static func stringField(_ pattern: StaticString, in line: UnsafeBufferPointer<UInt8>) -> String? {
        fieldBytes(pattern, in: line).map { String(decoding: $0, as: UTF8.self) }
    }

    /// `stringField`'s value as the line's own bytes (not copied, not decoded).
    static func fieldBytes(_ pattern: StaticString, in line: UnsafeBufferPointer<UInt8>)
        -> UnsafeBufferPointer<UInt8>?
    {
        let needle = UnsafeBufferPointer(start: pattern.utf8Start, count: pattern.utf8CodeUnitCount)
        guard let start = find(needle, in: line) else { return nil }
        var end = start
        while end < line.count && line[end] != UInt8(ascii: "\"") { end += 1 }
        guard end < line.count else { return nil }
        return UnsafeBufferPointer(rebasing: line[start..<end])
    }

    /// The bytes of the line's `"class":"…"` value. gpsd writes it first, so it is looked for
    /// right after the `{` before the whole line is searched.
    static func classValue(_ line: UnsafeBufferPointer<UInt8>) -> UnsafeBufferPointer<UInt8>? {
        let needle: StaticString = "\"class\":\""
        let length = needle.utf8CodeUnitCount
        var start: Int
        if line.count > length + 1, line[0] == UInt8(ascii: "{"),
            memcmp(line.baseAddress! + 1, needle.utf8Start, length) == 0
        {
            start = length + 1
        } else {
            guard let found = find(UnsafeBufferPointer(start: needle.utf8Start, count: length), in: line) else {
                return nil
            }
            start = found
        }
        var end = start
        while end < line.count && line[end] != UInt8(ascii: "\"") { end += 1 }
        guard end < line.count else { return nil }
        return UnsafeBufferPointer(rebasing: line[start..<end])
    }

    /// Whether a class value (`classValue`) is exactly `name`.
    static func classIs(_ value: UnsafeBufferPointer<UInt8>, _ name: StaticString) -> Bool {
        value.count == name.utf8CodeUnitCount && memcmp(value.baseAddress!, name.utf8Start, value.count) == 0
    }

    /// True for gpsd's deactivation message, `"activated":0`, which libgps 3.22 fails to decode.
    static func isDeactivation(_ line: Substring) -> Bool {
        var copy = Array(line.utf8)
        return copy.withUnsafeMutableBufferPointer { isDeactivation(UnsafeBufferPointer($0)) }
    }

    static func isDeactivation(_ line: UnsafeBufferPointer<UInt8>) -> Bool {
        let needle: StaticString = "\"activated\":"
        guard
            var index = find(UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount), in: line)
        else { return false }
        var value: [UInt8] = []
        while index < line.count && line[index] != UInt8(ascii: ",") && line[index] != UInt8(ascii: "}") {
            value.append(line[index])
            index += 1
        }
        return value == Array("0".utf8) || value == Array("0.0".utf8)
    }

    /// The index just past the first occurrence of `needle` in `haystack`.
    private static func find<C: Collection>(_ needle: some Collection<UInt8>, in haystack: C) -> C.Index?
    where C.Element == UInt8 {
        guard let first = needle.first else { return haystack.startIndex }
        var index = haystack.startIndex
        while let candidate = haystack[index...].firstIndex(of: first) {
            var probe = candidate
            var matched = true
            for byte in needle {
                guard probe != haystack.endIndex, haystack[probe] == byte else {
                    matched = false
                    break
                }
                probe = haystack.index(after: probe)
            }
            if matched { return probe }
            index = haystack.index(after: candidate)
        }
        return nil
    }
}
