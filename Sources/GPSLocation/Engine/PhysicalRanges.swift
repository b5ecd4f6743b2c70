import Foundation
import GNSSCore

/// What a receiver can physically report. Values outside become unknown (nil / −1) before
/// anything reaches an app or a display, and the engine says so once a minute:
/// - speed 0…1,000 m/s (receivers stop reporting above 515 m/s, the export limit);
/// - course 0…<360°;
/// - a satellite's elevation −90…90°, azimuth 0…<360°, signal-to-noise 0…100 dB-Hz;
/// - dilutions of precision more than 0 and at most 100 (gpsd's 99.99 means unknown).
package enum PhysicalRanges {
    package static let speed: ClosedRange<Double> = 0...1_000
    package static let course: Range<Double> = 0..<360
    package static let elevation: ClosedRange<Double> = -90...90
    package static let azimuth: Range<Double> = 0..<360
    package static let signalToNoise: ClosedRange<Double> = 0...100

    /// The fix with out-of-range speed and course removed, and what was removed (for the
    /// diagnostic), or nil when nothing was.
    package static func check(_ fix: Fix) -> (Fix, String?) {
        var fix = fix
        var removed: [String] = []
        if let speed = fix.speed, !speed.isFinite || !Self.speed.contains(speed) {
            removed.append(String(format: "speed %g m/s", speed))
            fix.speed = nil
        }
        if let course = fix.course, !course.isFinite || !Self.course.contains(course) {
            removed.append(String(format: "course %g°", course))
            fix.course = nil
        }
        guard !removed.isEmpty else { return (fix, nil) }
        return (
            fix,
            "the receiver reported \(removed.joined(separator: " and ")), outside what a receiver can measure: shown as unknown"
        )
    }

    /// The sky with out-of-range satellite values and dilutions removed.
    package static func check(_ sky: SkyView) -> SkyView {
        var sky = sky
        for index in sky.satellites.indices {
            var satellite = sky.satellites[index]
            if let value = satellite.elevation, !Self.elevation.contains(value) { satellite.elevation = nil }
            if let value = satellite.azimuth, !Self.azimuth.contains(value) { satellite.azimuth = nil }
            if let value = satellite.signalToNoise, !Self.signalToNoise.contains(value) {
                satellite.signalToNoise = nil
            }
            sky.satellites[index] = satellite
        }
        func dop(_ value: Double?) -> Double? { value.flatMap { $0 > 0 && $0 <= 100 ? $0 : nil } }
        sky.dilution.x = dop(sky.dilution.x)
        sky.dilution.y = dop(sky.dilution.y)
        sky.dilution.position = dop(sky.dilution.position)
        sky.dilution.horizontal = dop(sky.dilution.horizontal)
        sky.dilution.vertical = dop(sky.dilution.vertical)
        sky.dilution.time = dop(sky.dilution.time)
        sky.dilution.geometric = dop(sky.dilution.geometric)
        return sky
    }
}
