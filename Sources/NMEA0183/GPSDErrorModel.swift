import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// gpsd 3.22's satellite picture and dilutions of precision, as its NMEA driver keeps them, so
/// the NMEA engine derives the same error estimates gpsd reports for the same sentences
/// (README, "The NMEA engine": the field table). Sources, all gpsd 3.22:
/// - which satellites are used: the PRNs of the GSAs in a row (`driver_nmea0183.c`,
///   `processGSA`), matched when a GSV names the satellite with a signal (`processGSV`);
/// - satellite numbers mapped per constellation as `nmeaid_to_prn` does (GLONASS 65–96,
///   Galileo 301–, BeiDou 401–, QZSS 193–), so a GSA's and a GSV's numbers meet;
/// - when a GSV set is complete, the X, Y (and T, G) DOPs are recomputed from the used
///   satellites' azimuths and elevations (`fill_dop` in `libgpsd_core.c`: the inverse of the
///   line-of-sight product matrix, at least four satellites); H, V and P DOPs come from the
///   receiver (GGA, GSA) when it reported them, else from that geometry — and, as in gpsd,
///   once set they are kept until the receiver sends new ones;
/// - errors at 95 %: epx = XDOP × H_UERE, epy = YDOP × H_UERE, epv = VDOP × V_UERE,
///   eph = HDOP × P_UERE, with UEREs 15 / 23 / 19 m, or 3.75 / 5.75 / 4.75 m when the fix
///   status is DGPS (`gpsd_error_model`).
struct GPSDSatellitePicture: Sendable {
    struct Dilutions: Sendable {
        var x: Double?
        var y: Double?
        var horizontal: Double?
        var vertical: Double?
        var position: Double?
        var time: Double?
        var geometric: Double?
    }

    private struct Entry: Sendable {
        var prn: Int
        var elevation: Double
        var azimuth: Double
        /// The GSV's signal-to-noise field as gpsd keeps it (a whole number; an empty field 0).
        var signal: Int
        var used: Bool
    }

    private(set) var dop = Dilutions()
    private var sky: [Entry] = []
    /// The used satellites' numbers (gpsd's `sats_used`), and the same as a set of bits.
    private(set) var usedCount = 0
    private var usedBits = SIMD16<UInt64>()
    /// The talker of the GSA just before, if the sentence just before was a GSA (0: none).
    private var lastGSATalker: UInt8 = 0
    /// The talker of the GSV just before, if the sentence just before was a GSV (0: none).
    private var lastGSVTalker: UInt8 = 0
    /// GSVs of a constellation other than GPS have been seen (never forgotten, as in gpsd).
    private var seenOtherGSV = false
    private var awaitedParts = 0
    /// Scratch for `geometryDiagonal`, and its last results by the directions they came from.
    private var directions: [UInt32] = []
    private var geometries: [(directions: [UInt32], diagonal: SIMD4<Double>?)] = []

    /// gpsd's limit of satellites in one picture (`MAXCHANNELS`).
    private static let maximumChannels = 140

    /// Called for every sentence that is neither a GSA nor a GSV: a later GSA or GSV starts
    /// afresh (gpsd's `last_gsa_talker`/`last_gsv_talker` reset).
    mutating func otherSentence() {
        lastGSATalker = 0
        lastGSVTalker = 0
    }

    /// GGA's HDOP.
    mutating func ggaDilution(_ horizontal: Double?) {
        if let horizontal { dop.horizontal = horizontal }
        lastGSATalker = 0
        lastGSVTalker = 0
    }

    /// A GSA gpsd ignores (after a GGA whose time did not advance): it only ends a GSV run.
    mutating func ignoredGSA() {
        lastGSVTalker = 0
    }

    /// One GSA: its DOPs, and the satellites it says are used.
    mutating func gsa(
        talker: UInt16, fieldCount: Int, pdop: Double?, hdop: Double?, vdop: Double?,
        used numbers: NMEAInlineList<12, Int16>, extra: Int?
    ) {
        lastGSVTalker = 0
        let second = UInt8(truncatingIfNeeded: talker)
        if fieldCount <= 19 {
            if let pdop { dop.position = pdop }
            if let hdop { dop.horizontal = hdop }
            if let vdop { dop.vertical = vdop }
        }
        if lastGSATalker == 0 || (second == lastGSATalker && second != UInt8(ascii: "N")) {
            usedCount = 0
            usedBits = SIMD16()
        }
        lastGSATalker = second
        let system = Self.constellation(of: second)
        func add(_ number: Int) {
            let prn = Self.prn(talker: talker, number: number, constellation: system)
            guard prn > 0, prn < 1024, usedCount < Self.maximumChannels else { return }
            usedCount += 1
            usedBits[prn >> 6] |= 1 << UInt64(prn & 63)
        }
        for number in numbers where number >= 1 { add(Int(number)) }
        if let extra, extra >= 1 { add(extra) }
    }

    /// One GSV part. When it completes a set, the computed DOPs are made anew.
    mutating func gsv(
        talker: UInt16, fieldCount: Int, total: Int, part: Int, satellites: NMEAInlineList<4, NMEASatellite>
    ) {
        lastGSATalker = 0
        let second = UInt8(truncatingIfNeeded: talker)
        guard fieldCount > 3, fieldCount % 4 == 0 || fieldCount % 4 == 1, part >= 1 else {
            sky.removeAll(keepingCapacity: true)
            return
        }
        awaitedParts = total
        var system = 0
        if part == 1 {
            // A GPS set (its L1 signal: a later L2 set in the same cycle is rare) starts afresh.
            if lastGSVTalker == 0 || second == UInt8(ascii: "P") { sky.removeAll(keepingCapacity: true) }
            lastGSVTalker = second
            system = Self.constellation(of: second)
            if second != UInt8(ascii: "P") { seenOtherGSV = true }
        }
        for satellite in satellites {
            if sky.count >= Self.maximumChannels {
                sky.removeAll(keepingCapacity: true)
                break
            }
            let prn = Self.prn(talker: talker, number: satellite.prn, constellation: system)
            // A number gpsd does not map is no satellite: its slot is taken by the next one
            // (`processGSV` counts a satellite in view only with a PRN).
            guard prn != 0 else { continue }
            // gpsd reads these with atoi: an empty field is 0, a fraction is cut.
            let signal = Int(satellite.signalToNoise ?? 0)
            sky.append(
                Entry(
                    prn: prn, elevation: Double(Int(satellite.elevation ?? 0)),
                    azimuth: Double(Int(satellite.azimuth ?? 0)), signal: signal,
                    used: prn > 0 && prn < 1024 && signal > 0 && usedBits[prn >> 6] & (1 << UInt64(prn & 63)) != 0))
        }
        guard part >= awaitedParts else { return }
        guard sky.contains(where: { $0.azimuth != 0 }) else {
            sky.removeAll(keepingCapacity: true)
            return
        }
        if seenOtherGSV && second == UInt8(ascii: "P") { return }
        dop.x = nil
        dop.y = nil
        dop.time = nil
        dop.geometric = nil
        fillDilutions()
        skyComplete = true
    }

    /// Set when a GSV completes the picture — where gpsd reports its SKY (`SATELLITE_SET`) —
    /// until `takeSkyView()` reads it.
    private(set) var skyComplete = false

    /// The picture as gpsd's SKY gives it (satellites in the GSVs' order, the DOPs now), once
    /// per completed picture; nil when none was completed since the last call.
    mutating func takeSkyView() -> SkyView? {
        guard skyComplete else { return nil }
        skyComplete = false
        let satellites = sky.map { satellite in
            let (constellation, number) = Self.identity(prn: satellite.prn)
            return Satellite(
                prn: satellite.prn, constellation: constellation, satelliteID: number,
                signalToNoise: Double(satellite.signal), elevation: satellite.elevation, azimuth: satellite.azimuth,
                used: satellite.used)
        }
        return SkyView(
            time: nil, satellites: satellites,
            dilution: DilutionOfPrecision(
                x: dop.x, y: dop.y, position: dop.position, horizontal: dop.horizontal, vertical: dop.vertical,
                time: dop.time, geometric: dop.geometric))
    }

    /// A gpsd PRN's constellation and number within it (gpsd's numbering ranges: GPS 1–63,
    /// GLONASS 65–96, SBAS 120–158, QZSS 193–202, Galileo 301–336, BeiDou 401–463, NavIC 501–).
    static func identity(prn: Int) -> (Constellation, Int) {
        switch prn {
        case 1...63: (.gps, prn)
        case 65...96: (.glonass, prn - 64)
        case 120...158: (.sbas, prn)
        case 193...202: (.qzss, prn - 192)
        case 301...336: (.galileo, prn - 300)
        case 401...463: (.beidou, prn - 400)
        case 501...: (.navic, prn - 500)
        default: (.unknown, prn)
        }
    }

    /// gpsd's `fill_dop`: the DOPs from the used satellites' geometry, where none is set.
    private mutating func fillDilutions() {
        guard let d = geometryDiagonal() else { return }
        if dop.x == nil { dop.x = d[0].squareRoot() }
        if dop.y == nil { dop.y = d[1].squareRoot() }
        if dop.horizontal == nil { dop.horizontal = (d[0] + d[1]).squareRoot() }
        if dop.vertical == nil { dop.vertical = d[2].squareRoot() }
        if dop.position == nil { dop.position = (d[0] + d[1] + d[2]).squareRoot() }
        if dop.time == nil { dop.time = d[3].squareRoot() }
        if dop.geometric == nil { dop.geometric = (d[0] + d[1] + d[2] + d[3]).squareRoot() }
    }

    /// The diagonal of the inverse of the used satellites' line-of-sight product matrix (rows:
    /// east, north, up, 1), or nil with fewer than four of them or a singular geometry. A pure
    /// function of the used satellites' whole-degree directions in order: the last few results
    /// are kept by those directions (a 10 Hz receiver's sky is the same cycle after cycle).
    private mutating func geometryDiagonal() -> SIMD4<Double>? {
        directions.removeAll(keepingCapacity: true)
        for satellite in sky where satellite.used && satellite.prn >= 1 {
            guard (0...359).contains(satellite.azimuth), abs(satellite.elevation) <= 90 else { continue }
            // Whole degrees (gpsd reads them with atoi).
            directions.append(UInt32(Int(satellite.azimuth) + 90) << 16 | UInt32(Int(satellite.elevation) + 90))
        }
        guard directions.count >= 4 else { return nil }
        if let hit = geometries.firstIndex(where: { $0.directions == directions }) { return geometries[hit].diagonal }
        var product = (SIMD4<Double>(), SIMD4<Double>(), SIMD4<Double>(), SIMD4<Double>())
        let table = Self.trigonometry
        for direction in directions {
            // Sines and cosines from a table.
            let azimuth = table[Int(direction >> 16)]
            let elevation = table[Int(direction & 0xFFFF)]
            let line = SIMD4(azimuth.sine * elevation.cosine, azimuth.cosine * elevation.cosine, elevation.sine, 1)
            product.0 += line * line[0]
            product.1 += line * line[1]
            product.2 += line * line[2]
            product.3 += line * line[3]
        }
        var diagonal: SIMD4<Double>?
        if let d = Self.inverseDiagonal(product), d[0] >= 0, d[1] >= 0, d[2] >= 0, d[3] >= 0 { diagonal = d }
        if geometries.count == 4 { geometries.removeFirst() }
        geometries.append((directions, diagonal))
        return diagonal
    }

    /// Sine and cosine of every whole degree from −90 to 359 (index: degrees + 90).
    private static let trigonometry: [(sine: Double, cosine: Double)] = (-90...359).map { degrees in
        let radians = Double(degrees) * .pi / 180
        return (sin(radians), cos(radians))
    }

    /// The diagonal of a 4 × 4 matrix's inverse (Gauss–Jordan with partial pivoting), or nil
    /// when it is singular by gpsd's test (|determinant| < 0.0001).
    static func inverseDiagonal(
        _ rows: (SIMD4<Double>, SIMD4<Double>, SIMD4<Double>, SIMD4<Double>)
    ) -> SIMD4<Double>? {
        var a = rows
        var inverse = (
            SIMD4<Double>(1, 0, 0, 0), SIMD4<Double>(0, 1, 0, 0), SIMD4<Double>(0, 0, 1, 0), SIMD4<Double>(0, 0, 0, 1)
        )
        func row(_ i: Int) -> (SIMD4<Double>, SIMD4<Double>) {
            switch i {
            case 0: (a.0, inverse.0)
            case 1: (a.1, inverse.1)
            case 2: (a.2, inverse.2)
            default: (a.3, inverse.3)
            }
        }
        func set(_ i: Int, _ value: (SIMD4<Double>, SIMD4<Double>)) {
            switch i {
            case 0: (a.0, inverse.0) = value
            case 1: (a.1, inverse.1) = value
            case 2: (a.2, inverse.2) = value
            default: (a.3, inverse.3) = value
            }
        }
        // gpsd's `matrix_invert` (matrix.c) calls a matrix singular when its determinant is
        // below 0.0001 — a poor four-satellite geometry gets no computed DOPs there, nor here.
        var determinant = 1.0
        for column in 0..<4 {
            var pivot = column
            for candidate in column + 1..<4 where abs(row(candidate).0[column]) > abs(row(pivot).0[column]) {
                pivot = candidate
            }
            guard abs(row(pivot).0[column]) > 1e-12 else { return nil }
            if pivot != column {
                let swapped = row(pivot)
                set(pivot, row(column))
                set(column, swapped)
                determinant = -determinant
            }
            let (pivotRow, pivotInverse) = row(column)
            let scale = pivotRow[column]
            determinant *= scale
            let normalized = (pivotRow / scale, pivotInverse / scale)
            set(column, normalized)
            for other in 0..<4 where other != column {
                let (r, i) = row(other)
                let factor = r[column]
                if factor != 0 { set(other, (r - normalized.0 * factor, i - normalized.1 * factor)) }
            }
        }
        guard abs(determinant) >= 0.0001 else { return nil }
        return SIMD4(inverse.0[0], inverse.1[1], inverse.2[2], inverse.3[3])
    }

    /// gpsd's constellation number for a talker's second letter (0: none, decided by number).
    private static func constellation(of second: UInt8) -> Int {
        switch second {
        case UInt8(ascii: "L"): 2
        case UInt8(ascii: "A"): 3
        case UInt8(ascii: "B"), UInt8(ascii: "D"): 4
        case UInt8(ascii: "Q"), UInt8(ascii: "Z"): 5
        case UInt8(ascii: "I"): 6
        default: 0
        }
    }

    /// A satellite number as gpsd numbers it (0: one gpsd does not use).
    static func prn(talker: UInt16, number: Int, constellation: Int) -> Int {
        guard number >= 1 else { return 0 }
        let first = UInt8(truncatingIfNeeded: talker >> 8)
        let second = UInt8(truncatingIfNeeded: talker)
        switch constellation {
        case 1:
            switch number {
            case ...64, 101...136, 152...157, 193...199, 201...264: return number
            default: return 0
            }
        case 2: return 64 + (number < 64 ? number : number - 64)
        case 3: return 300 + (number < 100 ? number : number - 100)
        case 4: return 400 + (number < 100 ? number : number - 200)
        case 5: return 192 + (number < 100 ? number : number - 192)
        case 6: return 500 + number
        case 0: break
        default: return 0
        }
        if number <= 32 {
            switch (first, second) {
            case (UInt8(ascii: "G"), UInt8(ascii: "A")): return 300 + number
            case (UInt8(ascii: "G"), UInt8(ascii: "B")), (UInt8(ascii: "B"), UInt8(ascii: "D")),
                (UInt8(ascii: "P"), UInt8(ascii: "Q")):
                return 400 + number
            case (UInt8(ascii: "G"), UInt8(ascii: "I")): return 500 + number
            case (UInt8(ascii: "G"), UInt8(ascii: "L")): return 64 + number
            case (UInt8(ascii: "G"), UInt8(ascii: "Q")), (UInt8(ascii: "Q"), UInt8(ascii: "Z")): return 192 + number
            default: return number
            }
        }
        switch number {
        case 33...96, 120...158, 173...182, 193...197, 301...356, 401...437: return number
        case 201...237: return number + 200
        default: return 0
        }
    }
}

/// gpsd 3.22's error model for one receiver cycle (`gpsd_error_model`), fed sentence by
/// sentence as gpsd feeds it: the 95 % errors a TPV carries, from the DOPs and the fix status.
struct GPSDCycleErrors: Sendable {
    var x: Double?
    var y: Double?
    var vertical: Double?
    var horizontal: Double?

    static let confidence = 2.45  // gpsd's GPSD_CONFIDENCE (CEP95_SIGMA)
    static let cep50 = 1.18  // CEP50_SIGMA: Garmin's PGRME figures are taken as 50 % CEP

    /// After one sentence (not a PGRME, whose errors stand for that sentence), with the DOPs
    /// gpsd holds now (nil: unknown), and `mode` and `dgps` as the cycle stands now.
    @inline(__always)
    mutating func update(
        xdop: Double?, ydop: Double?, vdop: Double?, hdop: Double?, mode: FixMode, dgps: Bool
    ) {
        guard mode >= .twoDimensional else { return }
        let (h, v, p) = dgps ? (3.75, 5.75, 4.75) : (15.0, 23.0, 19.0)
        if let xdop { x = xdop * h }
        if let ydop { y = ydop * h }
        if mode == .threeDimensional, vertical == nil, let vdop { vertical = vdop * v }
        if horizontal == nil, let hdop { horizontal = hdop * p }
    }

    /// GBS: the receiver's 1-σ errors, taken as they are (gpsd 3.22's `processGBS` sets epx, epy
    /// and epv from them unscaled, for the sentence they arrive in; epv stays for the cycle).
    mutating func gbs(latitude: Double?, longitude: Double?, altitude: Double?) {
        if let longitude { x = longitude }
        if let latitude { y = latitude }
        if let altitude { vertical = altitude }
    }

    /// Garmin's PGRME (estimated position errors, taken as 50 % CEP, scaled to gpsd's 95 %).
    mutating func pgrme(horizontal hpe: Double?, vertical vpe: Double?) {
        if let hpe {
            x = hpe / 2.0.squareRoot() * Self.confidence / Self.cep50
            y = x
        }
        if let vpe { vertical = vpe * Self.confidence / Self.cep50 }
    }
}
