import FoundationEssentials
import GNSSCore

/// What a receiver can physically report. Values outside become unknown (nil / −1) before
/// anything reaches an app or a display, and the engine says so once a minute:
/// - speed 0…1,000 m/s (receivers stop reporting above 515 m/s, the export limit);
/// - course 0…<360°;
/// - altitude (mean sea level and ellipsoidal) −2,000…60,000 m (u-blox receivers stop at
///   50,000 m; the Dead Sea shore is at −430 m);
/// - error estimates finite and not negative;
/// - a satellite's elevation −90…90°, azimuth 0…<360°, signal-to-noise 0…100 dB-Hz;
/// - dilutions of precision more than 0 and at most 100 (gpsd's 99.99 means unknown).
public enum PhysicalRanges {
    static let speed: ClosedRange<Double> = 0...1_000
    static let course: Range<Double> = 0..<360
    static let elevation: ClosedRange<Double> = -90...90
    static let azimuth: Range<Double> = 0..<360
    static let signalToNoise: ClosedRange<Double> = 0...100
    static let altitude: ClosedRange<Double> = -2_000...60_000
    /// Whether `value` can be a dilution of precision: more than 0, at most 100.
    static func isDilution(_ value: Double) -> Bool { value > 0 && value <= 100 }

    /// What `clamp` removed from a fix, as the receiver reported it (for the diagnostic).
    public struct Removed: Hashable, Sendable {
        /// The speed reported, m/s, when out of range.
        public var speed: Double?
        /// The course reported, degrees, when out of range.
        public var course: Double?
        /// The altitude reported (mean sea level, else ellipsoidal), m, when out of range.
        public var altitude: Double?
        /// True when an error estimate was below zero or not a number.
        public var negativeEstimate = false
        var isEmpty: Bool { speed == nil && course == nil && altitude == nil && !negativeEstimate }
    }

    /// Removes `fix`'s out-of-range values, in place (a fix is not copied on its way through the
    /// engine's stages), and says what was removed (for the diagnostic), or nil when nothing was.
    static func clamp(_ fix: inout Fix) -> Removed? {
        var removed = Removed()
        if let speed = fix.speed, !speed.isFinite || !Self.speed.contains(speed) {
            removed.speed = speed
            fix.speed = nil
        }
        if let course = fix.course, !course.isFinite || !Self.course.contains(course) {
            removed.course = course
            fix.course = nil
        }
        func badAltitude(_ value: Double?) -> Bool {
            value.map { !$0.isFinite || !Self.altitude.contains($0) } ?? false
        }
        if badAltitude(fix.altitudeMSL) || badAltitude(fix.altitudeHAE) {
            removed.altitude = fix.altitudeMSL ?? fix.altitudeHAE ?? 0
            fix.altitudeMSL = nil
            fix.altitudeHAE = nil
            fix.climb = nil
        }
        func badEstimate(_ value: Double?) -> Bool { value.map { !$0.isFinite || $0 < 0 } ?? false }
        let errors = fix.errors
        if badEstimate(errors.latitude) || badEstimate(errors.longitude) || badEstimate(errors.horizontal)
            || badEstimate(errors.vertical) || badEstimate(errors.speed) || badEstimate(errors.course)
            || badEstimate(errors.climb)
        {
            removed.negativeEstimate = true
            func valid(_ value: Double?) -> Double? { badEstimate(value) ? nil : value }
            fix.errors = FixErrors(
                longitude: valid(errors.longitude), latitude: valid(errors.latitude),
                horizontal: valid(errors.horizontal), vertical: valid(errors.vertical), speed: valid(errors.speed),
                course: valid(errors.course), climb: valid(errors.climb))
        }
        return removed.isEmpty ? nil : removed
    }

    /// The sky with out-of-range satellite values and dilutions removed.
    public static func check(_ sky: consuming SkyView) -> SkyView {
        var sky = sky
        // Nearly always every value is in range and no satellite repeats: the sky goes on as it
        // came, its satellites not copied (a 10 Hz receiver's every epoch).
        if inRange(sky) && !hasRepeats(sky.satellites) { return sky }
        sky.satellites = merged(sky.satellites)
        for index in sky.satellites.indices {
            var satellite = sky.satellites[index]
            if let value = satellite.elevation, !Self.elevation.contains(value) { satellite.elevation = nil }
            if let value = satellite.azimuth, !Self.azimuth.contains(value) { satellite.azimuth = nil }
            if let value = satellite.signalToNoise, !Self.signalToNoise.contains(value) {
                satellite.signalToNoise = nil
            }
            sky.satellites[index] = satellite
        }
        func dop(_ value: Double?) -> Double? { value.flatMap { isDilution($0) ? $0 : nil } }
        sky.dilution.x = dop(sky.dilution.x)
        sky.dilution.y = dop(sky.dilution.y)
        sky.dilution.position = dop(sky.dilution.position)
        sky.dilution.horizontal = dop(sky.dilution.horizontal)
        sky.dilution.vertical = dop(sky.dilution.vertical)
        sky.dilution.time = dop(sky.dilution.time)
        sky.dilution.geometric = dop(sky.dilution.geometric)
        return sky
    }

    /// Whether two entries may be of one satellite. Nearly always none repeats: one bit per key's
    /// hash says so without a dictionary or a copy (equal keys always share a bit; a shared bit of
    /// different keys makes `merged` take the exact way).
    private static func hasRepeats(_ satellites: [Satellite]) -> Bool {
        // A bit set of 1,024 bits on the stack (a SIMD vector indexed at run time went through
        // memory at every access: 0.9 % of a replay's instructions).
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 16) { seen in
            seen.initialize(repeating: 0)
            for satellite in satellites {
                let bit = (satellite.constellation.rawValue &* 131 &+ satellite.satelliteID) & 1023
                let mask = UInt64(1) &<< UInt64(bit & 63)
                let word = bit &>> 6
                if seen[word] & mask != 0 { return true }
                seen[word] |= mask
            }
            return false
        }
    }

    /// True when `check` would change nothing of `sky`'s values (repeats aside).
    private static func inRange(_ sky: SkyView) -> Bool {
        func dop(_ value: Double?) -> Bool { value.map(Self.isDilution) ?? true }
        let dilution = sky.dilution
        guard
            dop(dilution.x), dop(dilution.y), dop(dilution.position), dop(dilution.horizontal),
            dop(dilution.vertical), dop(dilution.time), dop(dilution.geometric)
        else { return false }
        for satellite in sky.satellites {
            if let value = satellite.elevation, !Self.elevation.contains(value) { return false }
            if let value = satellite.azimuth, !Self.azimuth.contains(value) { return false }
            if let value = satellite.signalToNoise, !Self.signalToNoise.contains(value) { return false }
        }
        return true
    }

    /// One entry per satellite. gpsd 3.22 lists a satellite once per signal — an NMEA 4.10
    /// receiver's GSV set for L1 and again for L5 (`processGSV` zeroes its list only at a GPS
    /// set without a signal id) — and twice when a constellation's GSV set repeats before the next
    /// GPS set; `gpsloc sky` showed PRNs 23–29 twice, "13 used of 16 seen" for 10 satellites.
    /// Entries of one (constellation, number) merge: the first elevation and azimuth, the
    /// strongest signal, used if any signal was.
    static func merged(_ satellites: [Satellite]) -> [Satellite] {
        guard hasRepeats(satellites) else { return satellites }
        var index: [Int: Int] = [:]
        var result: [Satellite] = []
        result.reserveCapacity(satellites.count)
        for satellite in satellites {
            let key = satellite.constellation.rawValue << 16 | (satellite.satelliteID & 0xFFFF)
            guard let at = index[key] else {
                index[key] = result.count
                result.append(satellite)
                continue
            }
            var kept = result[at]
            kept.elevation = kept.elevation ?? satellite.elevation
            kept.azimuth = kept.azimuth ?? satellite.azimuth
            if let snr = satellite.signalToNoise, snr > (kept.signalToNoise ?? -1) { kept.signalToNoise = snr }
            kept.used = kept.used || satellite.used
            result[at] = kept
        }
        return result
    }
}
