import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// Merges the sentences of each receiver cycle into `Fix`es, reported where gpsd 3.22 reports
/// them and with the values its TPV carries (docs/nmea-engine.md, the field table).
///
/// Rules:
/// - **Cycles.** A cycle is the run of sentences sharing one UTC time of day. A time-bearing
///   sentence (RMC, GGA, GNS, GLL, ZDA, GBS) with a different time closes the cycle; sentences
///   without time (GSA, GSV, VTG, PGRME, PGRMZ) and GST belong to the open cycle. A time less
///   than 2 s *behind* the open cycle's (a GGA of :04 after an RMC of :05 — a cycle whose
///   sentences disagree) starts its own epoch but teaches nothing about which sentence ends
///   cycles.
/// - **Reports.** Like gpsd: before a cycle end is learned, at every sentence that sets the
///   position or the mode; then at the cycle's first ending sentence and again at each later
///   one of gpsd's ending types, so an epoch may be reported more than once and its last report
///   is the complete one (an app gets the first that carries an error estimate). Once a GST is
///   seen after its cycle's report, cycles are reported at their last sentence, after the GST;
///   a cycle whose ending sentence comes before its GST is reported at that GST (or, without
///   one, at its close) — the engine's hold for the estimate on gpsd's path, here.
/// - **Mode** is sticky across cycles and each sentence moves it as gpsd 3.22's does: GGA/GNS by
///   its satellites (≥ 4 with an altitude 3D, < 3 no fix, else 2D) and quality (0: no fix);
///   RMC `A`/GLL `A` 3D with more than three satellites used or an altitude in the cycle, else
///   at least 2D; RMC `V` no fix; GSA unless a GGA/GNS fix came first; PGRMZ's mode field; a 3D
///   fix with an altitude is not lowered to 2D; GSAs after a GGA whose time did not advance are
///   ignored (gpsd's `latch_mode`).
/// - **Position** comes from this cycle's RMC/GGA/GNS/GLL (the last one wins); a cycle without
///   one has no position, never a stale one.
/// - **Date** from ZDA (four-digit year) or RMC (two-digit year: 80–99 → 19xx, else 20xx); the
///   time of a cycle before any date is unknown (nil), as in gpsd. Dates are kept as the
///   receiver sent them: unlike gpsd 3.22 we do not move pre-2017 dates forward by 1024 weeks,
///   nor add a day when the hour goes back less than 12 h. A dated sentence's date belongs to
///   its own time of day; a later cycle whose time of day went back by more than 12 h is on the
///   next day (midnight passed before the next date), and a new date is never added to that
///   rollover: 23:59:59 on the 15th is followed by 00:00:00 on the 16th whichever sentence of
///   the cycle carries the date.
/// - **Errors** (gpsd's 95 % convention, see `FixErrors`): gpsd's DOP × UERE model, Garmin's
///   PGRME and GBS as gpsd reads them; the receiver's GST estimate for the cycle's time wins.
/// - **Altitude** from GGA/GNS, replaced by PGRMZ's whole feet; the ellipsoidal altitude is fixed
///   once per cycle from the MSL altitude and the geoid separation.
/// - **Speed and course** from the cycle's RMC and VTG, the later one winning (gpsd's
///   `processRMC`/`processVTG` both set them: a VTG after the RMC gives the epoch's last report
///   its values); knots × 1852/3600; without them speed and climb are derived from the previous
///   cycle, as gpsd does.
public struct EpochAssembler: Sendable {
    var mode: FixMode = .notSeen
    /// The UTC day (days since 1970) of the last time of day placed on the calendar, and that
    /// time of day — set by each dated sentence (RMC, ZDA) and moved along by every fix.
    var day: Int?
    var dayTime: Double?
    var cycle = Cycle()
    /// The sentence types learned to end a cycle (gpsd's `cycle_enders`).
    var cycleEnders = TimedTypes()
    /// The last time-bearing sentence type seen.
    var lastTimed: TimedType?
    /// gpsd's own cycle enders: learned the same way, but from the sentences whose time gpsd
    /// latches (RMC, GGA/GNS, GLL — not ZDA). gpsd reports a cycle when one of them arrives, so
    /// a cycle that had one is reported even when input ends before our ending sentence.
    var gpsdEnders = TimedTypes()
    var lastLatched: TimedType?
    /// True until the first cycle closes.
    var learning = true
    /// gpsd's `latch_mode`: the last GGA repeated the time of the GGA before it (an empty time
    /// repeats gpsd's initial empty one), so GSAs are not trusted until a GGA's time advances.
    private var ggaLatched = false
    /// The last GGA's time as gpsd keeps it (nil: empty, as before any GGA) and its talker.
    private var lastGGATime: Double?
    private var lastGGATalker: UInt8 = 0
    /// A GST has come after a report of its own cycle: this receiver's estimate follows its fix.
    /// Until then a cycle is reported where gpsd reports it (its first cycle-ending sentence),
    /// without waiting for a later sentence of ours.
    private var estimateFollows = false
    /// The receiver's latest own error estimate (GST, 1σ metres), used by the cycle of its time.
    var estimate: Estimate?
    struct Estimate {
        var time: Double
        var latitude: Double?
        var longitude: Double?
        var altitude: Double?
    }
    /// gpsd's satellite picture and DOPs (kept across cycles, as gpsd keeps them).
    var picture = GPSDSatellitePicture()
    /// The previous cycle as it ended (gpsd's `oldfix`): for speed and climb where the
    /// receiver gives none.
    var previous = Previous()
    /// Some cycle had an altitude (gpsd's `lastfix` keeps it: its fields are merged, never
    /// cleared), so a 3D fix is not lowered to 2D by a later cycle without one.
    var altitudeSeen = false
    /// gpsd's error model for the open cycle, run after each of its sentences (kept beside the
    /// cycle, not in it: updating a field of the large cycle value copied it twice a sentence).
    var errors = GPSDCycleErrors()

    struct Previous {
        var time: Date?
        var latitude: Double?
        var longitude: Double?
        var altitudeHAE: Double?
        var mode: FixMode = .notSeen
        /// gpsd's model errors (epx, epy, epv) as the cycle ended.
        var errors = GPSDCycleErrors()
    }

    /// Sentences that carry a time of day.
    enum TimedType: UInt8 {
        case rmc = 1
        case gga = 2
        case gll = 4
        case zda = 8
        case gbs = 16
    }

    /// A set of `TimedType`s as bits: asked on every sentence, so no hashing.
    struct TimedTypes {
        private var bits: UInt8 = 0
        var isEmpty: Bool { bits == 0 }
        func contains(_ type: TimedType) -> Bool { bits & type.rawValue != 0 }
        mutating func insert(_ type: TimedType) { bits |= type.rawValue }
    }

    struct Cycle {
        var open = false
        var time: Double?
        var latitude: Double?
        var longitude: Double?
        var altitudeMSL: Double?
        var geoidSeparation: Double?
        var quality = 0
        var speedKnots: Double?
        var course: Double?
        var positional = false
        /// Already emitted at a cycle-ending sentence.
        var reported = false
        /// The report carried a position.
        var reportedPosition = false
        /// The report's only horizontal error was a no-solution DOP's (`FixErrors.NoSolution`).
        var reportedWithoutEstimate = false
        /// A GGA/GNS with a fix was seen: its mode outranks GSA's in this cycle.
        var ggaFix = false
        /// A sentence of one of gpsd's cycle enders was seen in this cycle.
        var gpsdEnded = false
        /// The cycle reached its ending sentence before its GST, of a receiver whose GST follows
        /// its fix: it is reported when the GST of its time comes (or at its close without one).
        var awaitsEstimate = false
        /// gpsd's fix status as the cycle's sentences set it (2: DGPS, which lowers the UEREs).
        var status = 0
        /// A sentence of this cycle has set the fix mode.
        var modeSet = false
        /// Set when the cycle is reported.
        var fixTime: Date?
        var altitudeHAE: Double?
    }

    /// An assembler before any cycle.
    public init() {}

    /// The satellite picture as gpsd reports it in a SKY — once when a GSV completes it (after
    /// the last constellation's set of a cycle) — or nil when none was completed since the last
    /// call. Call it after each `add(_:_:)`.
    public mutating func takeSkyView() -> SkyView? {
        guard picture.skyComplete else { return nil }
        return picture.takeSkyView()
    }

    /// Adds a sentence; calls `emit` for each `Fix` it completes (the previous cycle's when this
    /// sentence closes it, this cycle's when it is a cycle-ending sentence).
    public mutating func add(_ sentence: NMEASentence, _ emit: (Fix) -> Void) {
        // gpsd clears its fix when a cycle starts: until a sentence of the cycle sets the mode
        // (RMC, GGA/GNS, GLL, GSA) its error model derives nothing (a ZDA first has none).
        var setsMode = true
        var setsErrors = false
        switch sentence {
        case .rmc(
            let time, let valid, let latitude, let longitude, let speed, let course, let rmcDate, let modeIndicator):
            let opens = opensCycle(time)
            boundary(time, .rmc, emit)
            picture.otherSentence()
            // gpsd merges an RMC's date only from a valid one (a receiver's "V" RMCs before its
            // first fix may carry a default date: the RGM-3800's 1980-01-05).
            if let rmcDate, valid {
                setDate(
                    year: rmcDate.year < 80 ? 2000 + rmcDate.year : 1900 + rmcDate.year, month: rmcDate.month,
                    day: rmcDate.day, time: time)
            }
            cycle.positional = true
            if valid, let latitude, let longitude {
                cycle.latitude = latitude
                cycle.longitude = longitude
                if let speed { cycle.speedKnots = speed }
                if let course { cycle.course = course }
                // gpsd 3.22 `processRMC`: at least 2D; 3D with more than three satellites used
                // (the last GSA's) or an altitude already in the cycle's fix.
                if picture.usedCount > 3 || altitudeInFix(opens: opens) {
                    mode = .threeDimensional
                } else if mode < .twoDimensional {
                    mode = .twoDimensional
                }
                cycle.status = Self.status(faaMode: modeIndicator)
            } else if !valid {
                cycle.status = 0
                mode = mode >= .twoDimensional || mode == .notSeen ? .noFix : mode
            }
        case .gga(
            let time, let latitude, let longitude, let quality, let satellites, let hdop, let altitude, let separation,
            let talker):
            boundary(time, .gga, emit)
            cycle.positional = true
            if talker != 0 { latchGGA(time: time, talker: UInt8(truncatingIfNeeded: talker)) }
            // An autonomous fix from no satellites is not credible (Hemisphere sends it while
            // acquiring); DGPS receivers such as Garmin's report 00 satellites with real fixes.
            if quality >= 0 { cycle.status = ggaLatched ? 0 : quality }
            picture.ggaDilution(hdop)
            // gpsd 3.22 `processGGA`: a position is 2D, 3D with an altitude and at least four
            // satellites, no fix with fewer than three (an empty count is none); then, as for
            // every sentence, a 3D fix with an altitude is not lowered to 2D (`nmea_parse`).
            // With fewer than three satellites gpsd still keeps the position and altitude in its
            // fix (a later GLL or RMC of the cycle makes it a fix again, 3D by that altitude).
            let used = satellites ?? 0
            if quality == 0 || latitude == nil || longitude == nil {
                mode = .noFix
                cycle.quality = 0
            } else {
                cycle.latitude = latitude
                cycle.longitude = longitude
                cycle.quality = quality
                if let altitude {
                    cycle.altitudeMSL = altitude
                    // No separation from the receiver: gpsd's own geoid figures (`GPSDGeoid`).
                    cycle.geoidSeparation =
                        separation ?? GPSDGeoid.separation(latitude: latitude!, longitude: longitude!)
                }
                if used < 3 {
                    mode = .noFix
                } else {
                    cycle.ggaFix = true
                    setMode(altitude != nil && used >= 4 ? .threeDimensional : .twoDimensional)
                }
            }
        case .gll(let time, let latitude, let longitude, let valid):
            let opens = opensCycle(time)
            boundary(time, .gll, emit)
            picture.otherSentence()
            cycle.positional = true
            if valid, let latitude, let longitude {
                cycle.latitude = latitude
                cycle.longitude = longitude
                // gpsd 3.22 `processGLL`: 3D with an altitude in the fix or more than three
                // satellites used; 2D from no fix or when the previous cycle had no altitude.
                if altitudeInFix(opens: opens) || picture.usedCount > 3 {
                    mode = .threeDimensional
                } else if mode < .twoDimensional || previous.altitudeHAE == nil {
                    setMode(.twoDimensional)
                }
            }
        case .gsa(_, _, _, _, _, _, _, _) where ggaLatched:
            // gpsd 3.22 ignores a GSA after a GGA whose time did not advance (`latch_mode`): no
            // mode, no DOPs, no satellites used.
            openIfNeeded()
            cycle.positional = true
            picture.ignoredGSA()
            setsMode = false
        case .gsa(let gsaMode, let pdop, let hdop, let vdop, let used, _, let talker, let fieldCount):
            openIfNeeded()
            // gpsd reads fields 3 … count − 4 as numbers: after an NMEA 4.10 system id, the
            // PDOP's whole part too.
            let extra = fieldCount == 19 ? pdop.flatMap { $0 >= 1 && $0 < 1e6 ? Int($0) : nil } : nil
            picture.gsa(
                talker: talker, fieldCount: fieldCount, pdop: pdop, hdop: hdop, vdop: vdop, used: used, extra: extra)
            cycle.positional = true
            if !cycle.ggaFix, let gsaMode, let value = FixMode(rawValue: gsaMode), value >= .noFix { setMode(value) }
        case .vtg(let course, let speed, let valid):
            openIfNeeded()
            picture.otherSentence()
            setsMode = false
            if valid {
                if let speed { cycle.speedKnots = speed }
                if let course { cycle.course = course }
            }
        case .gst(let time, let latitude, let longitude, let altitude):
            openIfNeeded()
            picture.otherSentence()
            setsMode = false
            // By its own time, as gpsd reports it (a GST may open its cycle, before the GGA).
            if let time {
                estimate = Estimate(time: time, latitude: latitude, longitude: longitude, altitude: altitude)
                // A GST after its cycle was reported: from now on this receiver's cycles are
                // reported at their last sentence, after the GST — as the engine, having seen
                // the same on gpsd's path, holds each fix for its GST (`LocationEngine.held`).
                // This module stands alone (no engine), so its fixes carry their GST themselves.
                if cycle.reported, let current = cycle.time, abs(current - time) < 0.01 {
                    let learnt = !estimateFollows
                    estimateFollows = true
                    // The cycle that teaches it, or one reported with no estimate but the
                    // outage's (a no-solution DOP): reported again with its GST — the epoch's
                    // last report, which the engine delivers (`EpochStage`), as on the other path
                    // it completes the epoch with gpsd's GST report.
                    if learnt || cycle.reportedWithoutEstimate, let fix = makeFix() {
                        cycle.reportedWithoutEstimate = false
                        emit(fix)
                    }
                }
                // The GST a reached cycle was waiting for: reported now, with it — the same rule as
                // the engine's hold on gpsd's path (a GST after the cycle's last timed sentence, as
                // SkyTraq's GGA…ZDA, GST, PSTI).
                if cycle.awaitsEstimate, !cycle.reported, let current = cycle.time, abs(current - time) < 0.01,
                    let fix = makeFix()
                {
                    cycle.awaitsEstimate = false
                    markReported(fix)
                    emit(fix)
                }
            }
        case .gbs(let time, let latitude, let longitude, let altitude):
            // gpsd latches its time (it takes part in finding the cycle's end) and uses its errors
            // only for the cycle of the same time (to the second).
            let sameCycle = time != nil && cycle.time.map { Int($0) == Int(time!) } == true
            boundary(time, .gbs, emit)
            picture.otherSentence()
            setsMode = false
            if sameCycle {
                errors.gbs(latitude: latitude, longitude: longitude, altitude: altitude)
                setsErrors = true
            }
        case .zda(let time, let day, let month, let year):
            boundary(time, .zda, emit)
            setDate(year: year, month: month, day: day, time: time)
            picture.otherSentence()
            setsMode = false
        case .pgrme(let horizontal, let vertical):
            openIfNeeded()
            errors.pgrme(horizontal: horizontal, vertical: vertical)
            picture.otherSentence()
            setsMode = false
            setsErrors = true
        case .pgrmz(let feet, let pgrmzMode):
            // gpsd 3.22 `processPGRMZ`: the altitude (MSL) in whole feet replaces the GGA's; the
            // ellipsoidal altitude stays as the GGA made it (gpsd computes it once per cycle).
            openIfNeeded()
            picture.otherSentence()
            cycle.positional = true
            if let feet { cycle.altitudeMSL = Double(feet) * 0.3048 }
            switch pgrmzMode {
            case 1?: mode = .noFix
            case 2?: setMode(.twoDimensional)
            case 3?: mode = .threeDimensional
            default: setsMode = false
            }
        case .heading:
            // Reported on its own (`NMEADecoder`), as gpsd reports an ATT; no part of the fix.
            picture.otherSentence()
            setsMode = false
        case .gsv(let talker, let total, let part, _, let satellites, let fieldCount):
            picture.gsv(talker: talker, fieldCount: fieldCount, total: total, part: part, satellites: satellites)
            setsMode = false
        }
        if setsMode { cycle.modeSet = true }
        settleAltitude()
        if cycle.modeSet && !setsErrors {
            // The DOPs read out first: `picture.estimate(&errors)` copied the whole picture
            // (270 bytes) at every sentence, to keep it apart from the `errors` it writes.
            let dop = picture.dop
            errors.update(
                xdop: dop.x, ydop: dop.y, vdop: dop.vertical, hdop: dop.horizontal, mode: mode,
                dgps: cycle.status == 2)
        }
        if let type = Self.timedType(sentence), type != .zda, Self.gpsdLatchesTime(sentence) {
            if gpsdEnders.contains(type) { cycle.gpsdEnded = true }
            lastLatched = type
        }
        // A sentence of a type learned to end cycles reports the cycle now, as gpsd does:
        // sentences after it in the same cycle only shape the next one. A cycle reported without
        // a position is reported again when a later ender of the same time brings one (a receiver
        // that sends its cycle twice, first invalid then valid: gpsd reports both).
        if let type = Self.timedType(sentence), cycle.time != nil,
            cycle.reported
                ? gpsdEnders.contains(type)
                    || (cycleEnders.contains(type) && !cycle.reportedPosition && mode >= .twoDimensional
                        && cycle.latitude != nil)
                : cycleEnders.contains(type) || (!estimateFollows && gpsdEnders.contains(type)),
            !holdsForEstimate(),
            let fix = makeFix()
        {
            markReported(fix)
            emit(fix)
        } else if gpsdEnders.isEmpty && setsMode && cycle.time != nil, let fix = makeFix() {
            // Before gpsd has learned where cycles end it reports at every sentence that sets the
            // position or the mode (gpsd.c: no reliable cycle end), so the last report of a
            // first cycle is at its last such sentence: a PGRME after the GSA is not in it.
            markReported(fix)
            emit(fix)
        }
    }

    /// Whether gpsd 3.22 registers this sentence's time for its cycle detector
    /// (`register_fractional_time`): `processRMC` does only for a valid ("A"/"D") RMC whose time
    /// and date both parse, so a receiver's leading "V" RMCs leave its GGA the first timed
    /// sentence, which gpsd then tags as a cycle ender too (`tr737A+.log`: a last cycle cut off
    /// after its GGA is reported there).
    private static func gpsdLatchesTime(_ sentence: NMEASentence) -> Bool {
        if case .rmc(_, let valid, _, _, _, _, let date, _) = sentence { return valid && date != nil }
        return true
    }

    private mutating func markReported(_ fix: Fix) {
        cycle.reported = true
        cycle.reportedPosition = fix.hasPosition
        cycle.reportedWithoutEstimate =
            fix.hasPosition && fix.mode >= .twoDimensional
            && FixErrors.NoSolution(dgps: cycle.status == 2).lacksHorizontal(fix.errors)
    }

    /// Whether a sentence of time `time` starts a new cycle (its time differs from the open one's).
    private func opensCycle(_ time: Double?) -> Bool {
        guard let time else { return false }
        guard cycle.open, let current = cycle.time else { return true }
        return abs(current - time) >= 0.01
    }

    /// gpsd's "an altitude in the fix" (`gpsdata.fix.altHAE`/`altMSL` in `processRMC` and
    /// `processGLL`): the fix gpsd has merged so far — the previous cycle's when this sentence
    /// starts the cycle (gpsd clears it only after the sentence is parsed; a no-fix GGA's
    /// altitude counts, so an RMC `A` right after it is 3D), else this cycle's.
    private func altitudeInFix(opens: Bool) -> Bool {
        opens ? previous.altitudeHAE != nil || cycle.altitudeMSL != nil : cycle.altitudeMSL != nil
    }

    /// A cycle that reached its ending sentence, of a receiver whose GST follows its fix, waits
    /// for the GST of its time (marked `awaitsEstimate`); true while it waits.
    private mutating func holdsForEstimate() -> Bool {
        guard estimateFollows, !cycle.reported, let time = cycle.time else { return false }
        if let gst = estimate, abs(gst.time - time) < 0.01 { return false }
        cycle.awaitsEstimate = true
        return true
    }

    /// A sentence's mode, as gpsd 3.22's `nmea_parse` lets it through: a 3D fix is not lowered
    /// to 2D while the cycle or the one before it has an altitude ("don't downgrade mode if
    /// holding previous fix"); no fix always goes through.
    private mutating func setMode(_ new: FixMode) {
        if mode == .threeDimensional, new != .noFix, new < .threeDimensional,
            cycle.altitudeMSL != nil || previous.altitudeHAE != nil || altitudeSeen
        {
            return
        }
        mode = new
    }

    /// gpsd's check of a GGA's time against the previous GGA's (`processGGA`): the same time
    /// (both empty included) latches; a different talker than the last GGA's skips the check.
    private mutating func latchGGA(time: Double?, talker: UInt8) {
        let previousTalker = lastGGATalker
        lastGGATalker = talker
        ggaLatched = previousTalker != 0 && previousTalker != talker ? false : time == lastGGATime
        if !ggaLatched { lastGGATime = time }
    }

    private static func timedType(_ sentence: NMEASentence) -> TimedType? {
        switch sentence {
        case .rmc(let time, _, _, _, _, _, _, _): time == nil ? nil : .rmc
        case .gga(let time, _, _, _, _, _, _, _, _): time == nil ? nil : .gga
        case .gll(let time, _, _, _): time == nil ? nil : .gll
        case .zda(let time, _, _, _): time == nil ? nil : .zda
        case .gbs(let time, _, _, _): time == nil ? nil : .gbs
        default: nil
        }
    }

    /// Emits the open cycle at the end of the input (a recording's end, standard input closing)
    /// unless it was reported already. A last cycle whose ending sentence never came is reported
    /// when it had a sentence gpsd ends cycles with (gpsd reported it there: e.g. a cycle cut off
    /// after its GGA, before its ZDA), and not otherwise (gpsd never reported it either).
    public mutating func finish() -> Fix? {
        defer {
            cycle = Cycle()
            errors = GPSDCycleErrors()
        }
        if cycle.reported || (!cycleEnders.isEmpty && !cycle.gpsdEnded && !cycle.awaitsEstimate) { return nil }
        return makeFix()
    }
}
