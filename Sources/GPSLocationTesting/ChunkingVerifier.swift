import Foundation

/// Checks that a byte-stream decoder gives the same output however its input is cut: whole,
/// byte by byte, line by line, and in pseudo-random pieces — the property every framing
/// decoder (NMEA, gpsd's JSON) must have, because a serial port or socket cuts anywhere.
///
/// ```swift
/// let problems = ChunkingVerifier.verify(bytes) { pieces in
///     var decoder = NMEADecoder()
///     var fixes: [Fix] = []
///     for piece in pieces { piece.withUnsafeBufferPointer { decoder.feed($0) { fixes.append($0) } } }
///     decoder.finish { fixes.append($0) }
///     return fixes
/// }
/// #expect(problems.isEmpty, "\(problems)")
/// ```
public enum ChunkingVerifier {
    /// One way of cutting the input that gave a different result from the whole buffer.
    public struct Mismatch: Sendable, CustomStringConvertible {
        /// How the input was cut.
        public let cutting: String
        /// Outputs from the whole buffer at once.
        public let expectedCount: Int
        /// Outputs from the cut input.
        public let actualCount: Int
        /// The cutting and both counts.
        public var description: String { "\(cutting): \(actualCount) outputs, whole buffer gave \(expectedCount)" }
    }

    /// Runs `decode` on the cuttings of `bytes` and returns those that disagree with the whole buffer.
    public static func verify<Output: Equatable>(
        _ bytes: [UInt8], seed: UInt64 = 1, decode: ([[UInt8]]) -> [Output]
    ) -> [Mismatch] {
        let expected = decode([bytes])
        var cuttings: [(String, [[UInt8]])] = [
            ("byte by byte", bytes.map { [$0] }),
            ("line by line", lines(bytes)),
        ]
        var random = seed
        var pieces: [[UInt8]] = []
        var start = 0
        while start < bytes.count {
            // SplitMix64 step: reproducible piece lengths of 1–97 bytes.
            random &+= 0x9E37_79B9_7F4A_7C15
            var z = random
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            let length = Int((z ^ (z >> 31)) % 97) + 1
            let end = min(bytes.count, start + length)
            pieces.append(Array(bytes[start..<end]))
            start = end
        }
        cuttings.append(("random pieces (seed \(seed))", pieces))
        return cuttings.compactMap { name, pieces in
            let actual = decode(pieces)
            return actual == expected
                ? nil : Mismatch(cutting: name, expectedCount: expected.count, actualCount: actual.count)
        }
    }

    private static func lines(_ bytes: [UInt8]) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var current: [UInt8] = []
        for byte in bytes {
            current.append(byte)
            if byte == UInt8(ascii: "\n") {
                result.append(current)
                current.removeAll()
            }
        }
        if !current.isEmpty { result.append(current) }
        return result
    }
}
