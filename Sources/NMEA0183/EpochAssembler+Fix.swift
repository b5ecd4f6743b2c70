import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

// Making a cycle's `Fix` and keeping what the next cycle derives from it (gpsd's
// `gpsd_error_model` merge): a file of its own beside `EpochAssembler`'s sentence rules.
extension EpochAssembler {
    mutating func makeFix() -> Fix? {
        guard cycle.open, cycle.positional else { return nil }
        let fixTime = cycle.time.flatMap { placeOnCalendar($0) }
        cycle.fixTime = fixTime
        let hasPosition = mode >= .twoDimensional && cycle.latitude != nil && cycle.longitude != nil
        let is3D = mode == .threeDimensional
        var fixErrors = FixErrors()
        if hasPosition {
            // gpsd's model (GPSDCycleErrors); where the receiver reports its own estimate (GST)
            // for this cycle's time, that instead, on both paths (`ReceiverErrorEstimate`).
            fixErrors = FixErrors(
                longitude: errors.x, latitude: errors.y, horizontal: errors.horizontal,
                vertical: is3D ? errors.vertical : nil)
            if let gst = estimate, let time = cycle.time, abs(gst.time - time) < 0.01 {
                // As gpsd's GST report carries them: metres to 3 decimals.
                fixErrors = ReceiverErrorEstimate(
                    time: fixTime, latitude: Self.wire(gst.latitude, 3), longitude: Self.wire(gst.longitude, 3),
                    altitude: Self.wire(gst.altitude, 3)
                ).applied(to: fixErrors, threeDimensional: is3D)
            }
        }
        let altitudeMSL = is3D ? cycle.altitudeMSL : nil
        let altitudeHAE = is3D ? cycle.altitudeHAE : nil
        var speed = hasPosition ? cycle.speedKnots.map { $0 * 1852 / 3600 } : nil
        var climb: Double?
        // As gpsd derives them where the receiver gives none (`gpsd_error_model`): speed from the
        // distance to the previous cycle's position, climb from its ellipsoidal altitude, and
        // the errors of speed (eps), course (epd) and climb (epc) from the two cycles' errors.
        if hasPosition, let fixTime, let before = previous.time, previous.mode >= .twoDimensional,
            case let elapsed = fixTime.timeIntervalSince(before), elapsed > 0
        {
            let metres = previous.latitude.flatMap { latitude in
                previous.longitude.map { longitude in
                    Geodesic.nearbyDistanceOnWGS84(
                        latitude1: latitude, longitude1: longitude, latitude2: cycle.latitude!,
                        longitude2: cycle.longitude!)
                }
            }
            if speed == nil, let metres { speed = metres / elapsed <= 9999.9 ? metres / elapsed : nil }
            if is3D, previous.mode == .threeDimensional, let now = altitudeHAE, let then = previous.altitudeHAE {
                let rate = (now - then) / elapsed
                climb = abs(rate) <= 9999.9 ? rate : nil
            }
            if let x = errors.x, let y = errors.y {
                if let oldX = previous.errors.x, let oldY = previous.errors.y {
                    fixErrors.speed = (max(oldX, oldY) + max(x, y)) / elapsed
                }
                if let metres, metres > max(x, y) {
                    let opposite = max(x, y)
                    fixErrors.course =
                        2 * asin(opposite / (metres * metres + opposite * opposite).squareRoot()) * 180 / .pi
                }
            }
            if let vertical = errors.vertical, let old = previous.errors.vertical {
                fixErrors.climb = (old + vertical) / elapsed
            }
        }
        // Every value as precise as gpsd's TPV carries it to a live client (gpsd_json.c's
        // formats), so a replay gives the app what the receiver gives it through gpsd.
        fixErrors = FixErrors(
            longitude: Self.wire(fixErrors.longitude, 3), latitude: Self.wire(fixErrors.latitude, 3),
            horizontal: Self.wire(fixErrors.horizontal, 3), vertical: Self.wire(fixErrors.vertical, 3),
            speed: Self.wire(fixErrors.speed, 2), course: Self.wire(fixErrors.course, 4),
            climb: Self.wire(fixErrors.climb, 2))
        return Fix(
            mode: mode == .notSeen ? .noFix : mode,
            quality: Self.quality(cycle.quality),
            time: fixTime,
            latitude: hasPosition ? Self.wire(cycle.latitude, 9) : nil,
            longitude: hasPosition ? Self.wire(cycle.longitude, 9) : nil,
            altitudeHAE: Self.wire(altitudeHAE, 4),
            altitudeMSL: Self.wire(altitudeMSL, 4),
            geoidSeparation: cycle.geoidSeparation,
            errors: fixErrors,
            speed: Self.wire(speed, 3),
            course: hasPosition ? Self.wire(cycle.course, 4) : nil,
            climb: Self.wire(climb, 3))
    }

    /// gpsd's error model fills the ellipsoidal altitude once a cycle has an MSL altitude and a
    /// geoid separation (the receiver's, else gpsd's own figure for the cycle's position), and
    /// keeps it for the rest of the cycle: a later PGRMZ changes only the MSL altitude.
    @inline(__always)
    mutating func settleAltitude() {
        guard cycle.altitudeHAE == nil, let msl = cycle.altitudeMSL else { return }
        altitudeSeen = true
        if cycle.geoidSeparation == nil, let latitude = cycle.latitude, let longitude = cycle.longitude {
            cycle.geoidSeparation = GPSDGeoid.separation(latitude: latitude, longitude: longitude)
        }
        if let separation = cycle.geoidSeparation { cycle.altitudeHAE = msl + separation }
    }

    /// The cycle as it ends, for the next one's derived speed and climb.
    mutating func rememberCycle() {
        if cycle.fixTime == nil, let time = cycle.time { cycle.fixTime = placeOnCalendar(time) }
        let hasPosition = mode >= .twoDimensional && cycle.latitude != nil && cycle.longitude != nil
        previous = Previous(
            time: cycle.fixTime, latitude: hasPosition ? cycle.latitude : nil,
            longitude: hasPosition ? cycle.longitude : nil, altitudeHAE: cycle.altitudeHAE, mode: mode,
            errors: errors)
    }
}
