import Foundation
import GNSSCore
import Testing

@testable import NMEA0183

/// `Fields.parseDecimal` reads digits without a check a digit (#35's parse speed) and checks a
/// long field once, after: the same results as the careful reading it replaced, on short fields,
/// on long ones (leading zeros, fractions past what a Double holds) and on broken ones.
@Suite("NMEA decimal fields read as before, short or long", .timeLimit(.minutes(5)))
struct DecimalFieldTests {
    typealias Parsed = (value: Double, integer: Int, fraction: Double)

    /// The reading it replaced: a check against the limit at every integer digit, fraction digits
    /// past the 17th ignored.
    static func careful(_ field: [UInt8]) -> Parsed? {
        let count = field.count
        guard count > 0 else { return nil }
        var index = 0
        var negative = false
        if field[0] == UInt8(ascii: "-") {
            negative = true
            index = 1
        } else if field[0] == UInt8(ascii: "+") {
            index = 1
        }
        var integer = 0
        var seenDigit = false
        while index < count, field[index] &- 0x30 <= 9 {
            integer = integer * 10 + Int(field[index] - 0x30)
            if integer > 100_000_000_000 { return nil }
            seenDigit = true
            index += 1
        }
        var fractionDigits = 0
        var scale = 0
        if index < count {
            guard field[index] == UInt8(ascii: ".") else { return nil }
            index += 1
            while index < count {
                guard field[index] &- 0x30 <= 9 else { return nil }
                seenDigit = true
                if scale < 17 {
                    fractionDigits = fractionDigits * 10 + Int(field[index] - 0x30)
                    scale += 1
                }
                index += 1
            }
        }
        guard seenDigit else { return nil }
        let fraction = Double(fractionDigits) / pow(10, Double(scale))
        let value = Double(integer) + fraction
        return (negative ? -value : value, negative ? -integer : integer, negative ? -fraction : fraction)
    }

    static func parsed(_ field: [UInt8]) -> Parsed? {
        field.withUnsafeBufferPointer { Fields.parseDecimal($0) }
    }

    static func same(_ a: Parsed?, _ b: Parsed?) -> Bool {
        switch (a, b) {
        case (nil, nil): true
        case (let a?, let b?):
            a.value.bitPattern == b.value.bitPattern && a.integer == b.integer
                && a.fraction.bitPattern == b.fraction.bitPattern
        default: false
        }
    }

    @Test("the fields receivers send, the limit, and fields longer than an Int's digits")
    func knownFields() {
        let cases: [(String, Double?)] = [
            ("4807.038", 4807.038), ("-0.5", -0.5), ("+12", 12), ("1.", 1), (".5", 0.5), ("", nil), ("-", nil),
            (".", nil), ("1.2.3", nil), ("12a", nil), ("100000000000", 100_000_000_000), ("100000000001", nil),
            ("0000000000000000000000012.5", 12.5), ("0000000000000000000100000000001", nil),
            ("1234567890123456789012", nil), ("0.1234567890123456789", 0.12345678901234568),
            ("0.12345678901234567x9", nil), ("00000000000000000000.", 0),
        ]
        for (text, expected) in cases {
            let field = Array(text.utf8)
            let value = Self.parsed(field)?.value
            #expect((value == nil) == (expected == nil), "\(text)")
            if let value, let expected { #expect(abs(value - expected) <= 1e-15 * max(1, abs(expected)), "\(text)") }
            #expect(Self.same(Self.parsed(field), Self.careful(field)), "\(text)")
        }
    }

    @Test("random fields of 1 to 30 characters: the same as the careful reading, every bit")
    func randomFields() {
        var random = SplitMix64(seed: 35)
        let alphabet = Array("0000000123456789.-+x".utf8)
        var mismatches: [String] = []
        for _ in 0..<50_000 where mismatches.count < 10 {
            let length = Int.random(in: 1...30, using: &random)
            var field = (0..<length).map { _ in alphabet.randomElement(using: &random)! }
            // Mostly well-formed: digits around at most one point, a sign at the front.
            if Bool.random(using: &random) {
                field = field.map {
                    $0 == UInt8(ascii: "x") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "-") ? 0x30 : $0
                }
                var points = 0
                field = field.map { byte in
                    guard byte == UInt8(ascii: ".") else { return byte }
                    points += 1
                    return points == 1 ? byte : 0x31
                }
            }
            if !Self.same(Self.parsed(field), Self.careful(field)) {
                mismatches.append(String(decoding: field, as: UTF8.self))
            }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
    }
}
