import GNSSCore

/// Stage: a receiver's "no solution" DOP (99.9, 99.99) never gives a fix its accuracy.
///
/// During an outage a receiver reports DOPs of 99.9 or 99.99 (NMEA's "no solution"). gpsd 3.22
/// keeps them, and the first fix after the outage comes with errors made from them by its UERE
/// model (`gpsd_error_model`, libgpsd_core.c: eph = HDOP × 19 m, epx/epy = X/Y DOP × 15 m,
/// epv = VDOP × 23 m; a quarter of those with DGPS) — a fix whose own GGA says HDOP 0.9 arrives
/// with 1,900 m (949 m of horizontal accuracy), and the next, 1.7 m away, would pass the
/// distance filter as an "improvement". The NMEA engine builds the same errors (it follows
/// gpsd), so the rule is here, once, for both paths: an error at the level of a DOP of 99 or
/// more is removed, with the speed and climb errors made from it. What remains is the fix's
/// own epoch's estimate: the receiver's GST for its time completes it (`handleEstimate`), else
/// it is delivered with its accuracy unknown — never the outage's.
enum NoSolutionErrors {
    /// Removes `fix`'s errors that stand for a no-solution DOP (`FixErrors.NoSolution`), in place
    /// (a fix is not copied on its way through the engine's stages).
    static func clean(_ fix: inout Fix) {
        guard fix.mode >= .twoDimensional else { return }
        let floors = FixErrors.NoSolution(dgps: fix.quality == .dgps)
        if let eph = fix.errors.horizontal, eph >= floors.horizontal { fix.errors.horizontal = nil }
        if (fix.errors.longitude ?? 0) >= floors.axis || (fix.errors.latitude ?? 0) >= floors.axis {
            fix.errors.longitude = nil
            fix.errors.latitude = nil
        }
        if let epv = fix.errors.vertical, epv >= floors.vertical { fix.errors.vertical = nil }
        // Speed, course and climb errors gpsd made from such a position error (over a second or
        // less): hundreds of metres a second and more are no estimate either.
        if let eps = fix.errors.speed, eps >= floors.axis / 2 { fix.errors.speed = nil }
        if let epc = fix.errors.climb, epc >= floors.vertical / 2 { fix.errors.climb = nil }
    }
}
