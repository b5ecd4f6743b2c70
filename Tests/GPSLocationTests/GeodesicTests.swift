import Foundation
import GNSSCore
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// Our Karney geodesic against GeographicLib's own `GeodSolve` (Debian geographiclib-tools).
@Suite("geodesic distance on WGS 84", .timeLimit(.minutes(5)))
struct GeodesicTests {
    /// Distances GeodSolve printed for these lines (`GeodSolve -i -p 9`), kept here so the
    /// check runs without GeographicLib installed.
    static let known: [(Double, Double, Double, Double, Double)] = [
        (0, 0, 1, 1, 156_899.568291340),
        (40.6, -73.8, 49, 2.5, 5_850_506.686353018),
        (0, 0, 0.5, 179.5, 19_936_288.578965314),
        (0, 0, 0, 180, 20_003_931.458625447),
        (10, 0, -10, 179.99, 20_003_922.228149042),
        (-30, 0, 29.9, 179.8, 19_989_832.827609532),
        (90, 0, -90, 0, 20_003_931.458625447),
        (45, 10, 45, 10, 0),
        (0.1, 0, -0.1, 179.7, 19_995_624.889961265),
    ]

    @Test("hand-checked lines, including antipodal and polar ones")
    func knownLines() {
        for (lat1, lon1, lat2, lon2, expected) in Self.known {
            let distance = Geodesic.wgs84.distance(latitude1: lat1, longitude1: lon1, latitude2: lat2, longitude2: lon2)
            #expect(
                abs(distance - expected) < 1e-6, "(\(lat1),\(lon1)) → (\(lat2),\(lon2)): \(distance) vs \(expected)")
        }
    }

    @Test("the distance filter's shortcut decides exactly as the full geodesic does")
    func nearbyShortcutAgrees() {
        var random = SplitMix64(seed: 0x5EED)
        func uniform(_ range: ClosedRange<Double>) -> Double {
            range.lowerBound + Double(random.next() >> 11) / Double(1 << 53) * (range.upperBound - range.lowerBound)
        }
        var decided = 0
        for _ in 0..<20_000 {
            let lat1 = uniform(-89.9...89.9)
            let lon1 = uniform(-180...180)
            let lat2 = max(-90, min(90, lat1 + uniform(-0.25...0.25)))
            var lon2 = lon1 + uniform(-0.25...0.25)
            if lon2 > 180 { lon2 -= 360 }
            let exact = Geodesic.wgs84.distance(latitude1: lat1, longitude1: lon1, latitude2: lat2, longitude2: lon2)
            // Thresholds at, near and far from the true distance, and everyday filter values.
            for threshold in [exact, exact * 0.98, exact * 1.02, exact * 0.5, exact * 2, 1, 5, 50, 500, 5_000] {
                let fast = Geodesic.wgs84.isDistance(
                    latitude1: lat1, longitude1: lon1, latitude2: lat2, longitude2: lon2, atLeast: threshold)
                if fast != (exact >= threshold) {
                    Issue.record("(\(lat1),\(lon1)) → (\(lat2),\(lon2)) at \(threshold) m: \(fast), exact \(exact) m")
                    return
                }
                decided += 1
            }
        }
        #expect(decided == 200_000)
    }

    @Test("the nearby distance (consecutive fixes) equals the geodesic within 1e-7 relative")
    func nearby() {
        var random = TestRandom(seed: 7)
        for _ in 0..<20_000 {
            let latitude = random.unit() * 176 - 88
            let longitude = random.longitude()
            let other = (latitude + (random.unit() - 0.5) * 0.018, longitude + (random.unit() - 0.5) * 0.018)
            let exact = Geodesic.wgs84.distance(
                latitude1: latitude, longitude1: longitude, latitude2: other.0, longitude2: other.1)
            let near = Geodesic.wgs84.nearbyDistance(
                latitude1: latitude, longitude1: longitude, latitude2: other.0, longitude2: other.1)
            #expect(abs(near - exact) <= max(1e-6, 1e-7 * exact), "\(latitude),\(longitude) → \(other)")
        }
    }

    @Test("is symmetric and zero for identical points")
    func symmetry() {
        var random = TestRandom(seed: 99)
        for _ in 0..<200 {
            let (a, b, c, d) = (random.latitude(), random.longitude(), random.latitude(), random.longitude())
            let forward = Geodesic.wgs84.distance(latitude1: a, longitude1: b, latitude2: c, longitude2: d)
            let backward = Geodesic.wgs84.distance(latitude1: c, longitude1: d, latitude2: a, longitude2: b)
            #expect(abs(forward - backward) < 1e-8)
            #expect(Geodesic.wgs84.distance(latitude1: a, longitude1: b, latitude2: a, longitude2: b) == 0)
        }
    }

    @Test(
        "agrees with GeodSolve within 1 mm on 1,000 random and 500 nearly antipodal lines",
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/GeodSolve") || Conditions.underCI,
            "GeodSolve not installed: sudo apt-get install geographiclib-tools")
    )
    func matchesGeodSolve() async throws {
        var random = TestRandom(seed: 2026)
        var lines: [(Double, Double, Double, Double)] = []
        for _ in 0..<1000 {
            lines.append((random.latitude(), random.longitude(), random.latitude(), random.longitude()))
        }
        for _ in 0..<500 {
            let lat1 = random.latitude()
            let lon1 = random.longitude()
            // Within about 1° of the antipode, where Vincenty fails and the astroid start matters.
            let lat2 = max(-90, min(90, -lat1 + (random.unit() - 0.5) * 2))
            let lon2 = remainder(lon1 + 180 + (random.unit() - 0.5) * 2, 360)
            lines.append((lat1, lon1, lat2, lon2))
        }
        let input = lines.map { String(format: "%.12f %.12f %.12f %.12f", $0.0, $0.1, $0.2, $0.3) }.joined(
            separator: "\n")
        let output = try await geodSolveInverse(input + "\n", precision: 9)
        let reference = output.split(separator: "\n").map { Double($0.split(separator: " ")[2])! }
        try #require(reference.count == lines.count)
        var worst = 0.0
        for (line, expected) in zip(lines, reference) {
            let (lat1, lon1, lat2, lon2) = (
                Double(String(format: "%.12f", line.0))!, Double(String(format: "%.12f", line.1))!,
                Double(String(format: "%.12f", line.2))!, Double(String(format: "%.12f", line.3))!
            )
            let ours = Geodesic.wgs84.distance(latitude1: lat1, longitude1: lon1, latitude2: lat2, longitude2: lon2)
            worst = max(worst, abs(ours - expected))
            #expect(abs(ours - expected) < 0.001, "\(line): ours \(ours), GeodSolve \(expected)")
        }
        print("geodesic: worst difference from GeodSolve over \(lines.count) lines: \(worst) m")
    }
}

/// Deterministic random numbers for tests (the library's SplitMix64).
struct TestRandom {
    var generator: SplitMix64
    init(seed: UInt64) { generator = SplitMix64(seed: seed) }
    mutating func next() -> UInt64 { generator.next() }
    mutating func unit() -> Double { generator.unit() }
    mutating func latitude() -> Double { unit() * 180 - 90 }
    mutating func longitude() -> Double { unit() * 360 - 180 }
}
