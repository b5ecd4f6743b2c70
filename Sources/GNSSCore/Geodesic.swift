import Foundation

/// Geodesic distance on an ellipsoid by Karney's method (C. F. F. Karney, "Algorithms for
/// geodesics", J. Geodesy 87, 43–55, 2013): series in the third flattening to sixth order,
/// Newton's method on the azimuth with a bisection fallback, and the astroid start for
/// nearly antipodal points. Accurate to about 15 nm on WGS 84 for any pair of points,
/// antipodal ones included, where Vincenty's iteration fails to converge.
///
/// Only the inverse distance (`s12`) is computed; the code follows the structure of the
/// published algorithm, written here for Swift.
public struct Geodesic: Sendable {
    public static let wgs84 = Geodesic(equatorialRadius: wgs84Radius, flattening: wgs84Flattening)
    /// WGS 84's two defining figures (also for `nearbyDistanceOnWGS84`, which needs only them).
    static let wgs84Radius = 6_378_137.0
    static let wgs84Flattening = 1 / 298.257_223_563

    public let equatorialRadius: Double
    public let flattening: Double
    private let f1: Double  // 1 − f
    let e2: Double  // eccentricity squared
    private let ep2: Double  // second eccentricity squared
    private let n: Double  // third flattening
    private let b: Double  // polar semi-axis
    private let etol2: Double
    private let a3x: [Double]
    private let c3x: [Double]

    private static let order = 6
    private static let tiny = Double.leastNormalMagnitude.squareRoot()
    private static let tol0 = Double.ulpOfOne
    private static let tol1 = 200 * tol0
    private static let tol2 = tol0.squareRoot()
    private static let tolb = tol0 * tol2
    private static let xthresh = 1000 * tol2
    private static let maxit1 = 20
    private static let maxit2 = maxit1 + Double.significandBitCount + 1 + 10

    /// An oblate ellipsoid (or a sphere): `flattening` must be in [0, 1).
    public init(equatorialRadius: Double, flattening: Double) {
        precondition(flattening >= 0 && flattening < 1, "Geodesic supports oblate ellipsoids only")
        self.equatorialRadius = equatorialRadius
        self.flattening = flattening
        f1 = 1 - flattening
        e2 = flattening * (2 - flattening)
        ep2 = e2 / (f1 * f1)
        n = flattening / (2 - flattening)
        b = equatorialRadius * f1
        etol2 = 0.1 * Self.tol2 / (max(0.001, abs(flattening)) * min(1, 1 - flattening / 2) / 2).squareRoot()
        a3x = Self.a3Coefficients(n: n)
        c3x = Self.c3Coefficients(n: n)
    }

    /// The length in metres of the shortest path on the ellipsoid between two points (degrees).
    public func distance(latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double) -> Double {
        var (lon12, lon12s) = Self.angleDifference(longitude1, longitude2)
        let lonSign: Double = lon12 >= 0 ? 1 : -1
        lon12 = lonSign * Self.angleRound(lon12)
        lon12s = Self.angleRound((180 - lon12) - lonSign * lon12s)
        let lam12 = lon12 * .pi / 180
        var slam12: Double
        var clam12: Double
        if lon12 > 90 {
            (slam12, clam12) = Self.sinCosDegrees(lon12s)
            clam12 = -clam12
        } else {
            (slam12, clam12) = Self.sinCosDegrees(lon12)
        }

        var lat1 = Self.angleRound(Self.latitudeFix(latitude1))
        var lat2 = Self.angleRound(Self.latitudeFix(latitude2))
        if abs(lat1) < abs(lat2) { swap(&lat1, &lat2) }
        let latSign: Double = lat1 < 0 ? 1 : -1
        lat1 *= latSign
        lat2 *= latSign

        var (sbet1, cbet1) = Self.sinCosDegrees(lat1)
        sbet1 *= f1
        Self.normalize(&sbet1, &cbet1)
        cbet1 = max(Self.tiny, cbet1)
        var (sbet2, cbet2) = Self.sinCosDegrees(lat2)
        sbet2 *= f1
        Self.normalize(&sbet2, &cbet2)
        cbet2 = max(Self.tiny, cbet2)

        if cbet1 < -sbet1 {
            if cbet2 == cbet1 { sbet2 = sbet2 < 0 ? sbet1 : -sbet1 }
        } else if abs(sbet2) == -sbet1 {
            cbet2 = cbet1
        }
        let dn1 = (1 + ep2 * sbet1 * sbet1).squareRoot()
        let dn2 = (1 + ep2 * sbet2 * sbet2).squareRoot()

        var salp1 = 0.0
        var calp1 = 0.0
        var s12x = Double.nan
        var meridian = lat1 == -90 || slam12 == 0

        if meridian {
            calp1 = clam12
            salp1 = slam12
            let calp2 = 1.0
            let ssig1 = sbet1
            let csig1 = calp1 * cbet1
            let ssig2 = sbet2
            let csig2 = calp2 * cbet2
            var sig12 = atan2(max(0, csig1 * ssig2 - ssig1 * csig2), csig1 * csig2 + ssig1 * ssig2)
            let lengths = self.lengths(
                eps: n, sig12: sig12, ssig1: ssig1, csig1: csig1, dn1: dn1, ssig2: ssig2, csig2: csig2, dn2: dn2)
            var s = lengths.s12b
            var m = lengths.m12b
            if sig12 < 1 || m >= 0 {
                if sig12 < 3 * Self.tiny || (sig12 < Self.tol0 && (s < 0 || m < 0)) {
                    sig12 = 0
                    s = 0
                    m = 0
                }
                s12x = s * b
            } else {
                meridian = false
            }
        }

        if !meridian && sbet1 == 0 && (flattening <= 0 || lon12s >= flattening * 180) {
            // Along the equator.
            s12x = equatorialRadius * lam12
        } else if !meridian {
            let start = inverseStart(
                sbet1: sbet1, cbet1: cbet1, dn1: dn1, sbet2: sbet2, cbet2: cbet2, dn2: dn2, lam12: lam12,
                slam12: slam12, clam12: clam12)
            salp1 = start.salp1
            calp1 = start.calp1
            if start.sig12 >= 0 {
                s12x = start.sig12 * b * start.dnm
            } else {
                var tripn = false
                var tripb = false
                var salp1a = Self.tiny
                var calp1a = 1.0
                var salp1b = Self.tiny
                var calp1b = -1.0
                var result: LambdaResult
                var iteration = 0
                repeat {
                    result = lambda12(
                        sbet1: sbet1, cbet1: cbet1, dn1: dn1, sbet2: sbet2, cbet2: cbet2, dn2: dn2, salp1: salp1,
                        calp1: calp1, slam120: slam12, clam120: clam12, diffp: iteration < Self.maxit1)
                    let v = result.lam12
                    if tripb || !(abs(v) >= (tripn ? 8 : 1) * Self.tol0) { break }
                    if v > 0 && (iteration > Self.maxit1 || calp1 / salp1 > calp1b / salp1b) {
                        salp1b = salp1
                        calp1b = calp1
                    } else if v < 0 && (iteration > Self.maxit1 || calp1 / salp1 < calp1a / salp1a) {
                        salp1a = salp1
                        calp1a = calp1
                    }
                    iteration += 1
                    if iteration - 1 < Self.maxit1 && result.dlam12 > 0 {
                        let dalp1 = -v / result.dlam12
                        if abs(dalp1) < .pi {
                            let sdalp1 = sin(dalp1)
                            let cdalp1 = cos(dalp1)
                            let nsalp1 = salp1 * cdalp1 + calp1 * sdalp1
                            if nsalp1 > 0 {
                                calp1 = calp1 * cdalp1 - salp1 * sdalp1
                                salp1 = nsalp1
                                Self.normalize(&salp1, &calp1)
                                tripn = abs(v) <= 16 * Self.tol0
                                continue
                            }
                        }
                    }
                    salp1 = (salp1a + salp1b) / 2
                    calp1 = (calp1a + calp1b) / 2
                    Self.normalize(&salp1, &calp1)
                    tripn = false
                    tripb =
                        abs(salp1a - salp1) + (calp1a - calp1) < Self.tolb
                        || abs(salp1 - salp1b) + (calp1 - calp1b) < Self.tolb
                } while iteration < Self.maxit2
                let lengths = self.lengths(
                    eps: result.eps, sig12: result.sig12, ssig1: result.ssig1, csig1: result.csig1, dn1: dn1,
                    ssig2: result.ssig2, csig2: result.csig2, dn2: dn2)
                s12x = lengths.s12b * b
            }
        }
        return 0 + s12x
    }

    // MARK: - Pieces of the inverse problem

    private func lengths(
        eps: Double, sig12: Double, ssig1: Double, csig1: Double, dn1: Double, ssig2: Double, csig2: Double,
        dn2: Double
    ) -> (s12b: Double, m12b: Double) {
        let c1 = Self.c1(eps)
        let c2 = Self.c2(eps)
        let a1m1 = Self.a1m1(eps)
        let a2m1 = Self.a2m1(eps)
        let m0x = a1m1 - a2m1
        let a1 = 1 + a1m1
        let a2 = 1 + a2m1
        let b1 = Self.sinSeries(ssig2, csig2, c1) - Self.sinSeries(ssig1, csig1, c1)
        let b2 = Self.sinSeries(ssig2, csig2, c2) - Self.sinSeries(ssig1, csig1, c2)
        let s12b = a1 * (sig12 + b1)
        let j12 = m0x * sig12 + (a1 * b1 - a2 * b2)
        let m12b = dn2 * (csig1 * ssig2) - dn1 * (ssig1 * csig2) - csig1 * csig2 * j12
        return (s12b, m12b)
    }

    private struct StartValues {
        var sig12: Double
        var salp1: Double
        var calp1: Double
        var dnm: Double
    }

    private func inverseStart(
        sbet1: Double, cbet1: Double, dn1: Double, sbet2: Double, cbet2: Double, dn2: Double, lam12: Double,
        slam12: Double, clam12: Double
    ) -> StartValues {
        var sig12 = -1.0
        var dnm = Double.nan
        let sbet12 = sbet2 * cbet1 - cbet2 * sbet1
        let cbet12 = cbet2 * cbet1 + sbet2 * sbet1
        let sbet12a = sbet2 * cbet1 + cbet2 * sbet1
        let shortLine = cbet12 >= 0 && sbet12 < 0.5 && cbet2 * lam12 < 0.5
        var somg12: Double
        var comg12: Double
        if shortLine {
            var sbetm2 = (sbet1 + sbet2) * (sbet1 + sbet2)
            sbetm2 /= sbetm2 + (cbet1 + cbet2) * (cbet1 + cbet2)
            dnm = (1 + ep2 * sbetm2).squareRoot()
            let omg12 = lam12 / (f1 * dnm)
            somg12 = sin(omg12)
            comg12 = cos(omg12)
        } else {
            somg12 = slam12
            comg12 = clam12
        }
        var salp1 = cbet2 * somg12
        var calp1 =
            comg12 >= 0
            ? sbet12 + cbet2 * sbet1 * somg12 * somg12 / (1 + comg12)
            : sbet12a - cbet2 * sbet1 * somg12 * somg12 / (1 - comg12)
        let ssig12 = (salp1 * salp1 + calp1 * calp1).squareRoot()
        let csig12 = sbet1 * sbet2 + cbet1 * cbet2 * comg12

        if shortLine && ssig12 < etol2 {
            sig12 = atan2(ssig12, csig12)
        } else if abs(n) > 0.1 || csig12 >= 0 || ssig12 >= 6 * abs(n) * .pi * cbet1 * cbet1 {
            // The spherical starting guess is good enough.
        } else {
            // Nearly antipodal: scale to the astroid problem.
            let lam12x = atan2(-slam12, -clam12)
            let k2 = sbet1 * sbet1 * ep2
            let eps = k2 / (2 * (1 + (1 + k2).squareRoot()) + k2)
            let lamScale = flattening * cbet1 * a3(eps) * .pi
            let betScale = lamScale * cbet1
            let x = lam12x / lamScale
            let y = sbet12a / betScale
            if y > -Self.tol1 && x > -1 - Self.xthresh {
                salp1 = min(1, -x)
                calp1 = -(1 - salp1 * salp1).squareRoot()
            } else {
                let k = Self.astroid(x, y)
                let omg12a = lamScale * (-x * k / (1 + k))
                somg12 = sin(omg12a)
                comg12 = -cos(omg12a)
                salp1 = cbet2 * somg12
                calp1 = sbet12a - cbet2 * sbet1 * somg12 * somg12 / (1 - comg12)
            }
        }
        if !(salp1 <= 0) {
            Self.normalize(&salp1, &calp1)
        } else {
            salp1 = 1
            calp1 = 0
        }
        return StartValues(sig12: sig12, salp1: salp1, calp1: calp1, dnm: dnm)
    }

    private struct LambdaResult {
        var lam12: Double
        var sig12: Double
        var ssig1: Double
        var csig1: Double
        var ssig2: Double
        var csig2: Double
        var eps: Double
        var dlam12: Double
    }

    private func lambda12(
        sbet1: Double, cbet1: Double, dn1: Double, sbet2: Double, cbet2: Double, dn2: Double, salp1: Double,
        calp1 calp1In: Double, slam120: Double, clam120: Double, diffp: Bool
    ) -> LambdaResult {
        var calp1 = calp1In
        if sbet1 == 0 && calp1 == 0 { calp1 = -Self.tiny }
        let salp0 = salp1 * cbet1
        let calp0 = hypot(calp1, salp1 * sbet1)
        var ssig1 = sbet1
        let somg1 = salp0 * sbet1
        var csig1 = calp1 * cbet1
        let comg1 = csig1
        Self.normalize(&ssig1, &csig1)

        let calp2 =
            cbet2 != cbet1 || abs(sbet2) != -sbet1
            ? (calp1 * cbet1 * calp1 * cbet1
                + (cbet1 < -sbet1 ? (cbet2 - cbet1) * (cbet1 + cbet2) : (sbet1 - sbet2) * (sbet1 + sbet2)))
                .squareRoot() / cbet2
            : abs(calp1)
        var ssig2 = sbet2
        let somg2 = salp0 * sbet2
        var csig2 = calp2 * cbet2
        let comg2 = csig2
        Self.normalize(&ssig2, &csig2)

        let sig12 = atan2(max(0, csig1 * ssig2 - ssig1 * csig2), csig1 * csig2 + ssig1 * ssig2)
        let somg12 = max(0, comg1 * somg2 - somg1 * comg2)
        let comg12 = comg1 * comg2 + somg1 * somg2
        let eta = atan2(somg12 * clam120 - comg12 * slam120, comg12 * clam120 + somg12 * slam120)
        let k2 = calp0 * calp0 * ep2
        let eps = k2 / (2 * (1 + (1 + k2).squareRoot()) + k2)
        let c3 = c3(eps)
        let b312 = Self.sinSeries(ssig2, csig2, c3) - Self.sinSeries(ssig1, csig1, c3)
        let domg12 = -flattening * a3(eps) * salp0 * (sig12 + b312)
        let lam12 = eta + domg12

        var dlam12 = 0.0
        if diffp {
            if calp2 == 0 {
                dlam12 = -2 * f1 * dn1 / sbet1
            } else {
                let lengths = self.lengths(
                    eps: eps, sig12: sig12, ssig1: ssig1, csig1: csig1, dn1: dn1, ssig2: ssig2, csig2: csig2, dn2: dn2)
                dlam12 = lengths.m12b * f1 / (calp2 * cbet2)
            }
        }
        return LambdaResult(
            lam12: lam12, sig12: sig12, ssig1: ssig1, csig1: csig1, ssig2: ssig2, csig2: csig2, eps: eps,
            dlam12: dlam12)
    }

    // MARK: - Series

    /// Horner evaluation of coefficients[offset ..< offset+degree+1] at x (highest power first).
    private static func polynomial(_ coefficients: [Double], _ offset: Int, degree: Int, _ x: Double) -> Double {
        var y = degree < 0 ? 0 : coefficients[offset]
        var index = offset
        var remaining = degree
        while remaining > 0 {
            remaining -= 1
            index += 1
            y = y * x + coefficients[index]
        }
        return y
    }

    /// Clenshaw summation of Σ_{l=1}^{n} c[l] sin(2lσ), with c[0] unused.
    private static func sinSeries<let count: Int>(_ sinx: Double, _ cosx: Double, _ c: InlineArray<count, Double>)
        -> Double
    {
        var index = c.count
        var count = c.count - 1
        let ar = 2 * (cosx - sinx) * (cosx + sinx)
        var y0 = 0.0
        var y1 = 0.0
        if count & 1 != 0 {
            index -= 1
            y0 = c[index]
        }
        count /= 2
        while count > 0 {
            count -= 1
            index -= 1
            y1 = ar * y0 - y1 + c[index]
            index -= 1
            y0 = ar * y1 - y0 + c[index]
        }
        return 2 * sinx * cosx * y0
    }

    private static let c1Coefficients: [Double] = [
        -1, 6, -16, 32, -9, 64, -128, 2048, 9, -16, 768, 3, -5, 512, -7, 1280, -7, 2048,
    ]
    private static let c2Coefficients: [Double] = [
        1, 2, 16, 32, 35, 64, 384, 2048, 15, 80, 768, 7, 35, 512, 63, 1280, 77, 2048,
    ]

    private static func a1m1(_ eps: Double) -> Double {
        let eps2 = eps * eps
        let t = (((eps2 + 4) * eps2 + 64) * eps2) / 256
        return (t + eps) / (1 - eps)
    }

    private static func c1(_ eps: Double) -> InlineArray<7, Double> {
        seriesCoefficients(c1Coefficients, eps)
    }

    private static func a2m1(_ eps: Double) -> Double {
        let eps2 = eps * eps
        let t = (((-11 * eps2 - 28) * eps2 - 192) * eps2) / 256
        return (t - eps) / (1 + eps)
    }

    private static func c2(_ eps: Double) -> InlineArray<7, Double> {
        seriesCoefficients(c2Coefficients, eps)
    }

    /// C1 and C2: c[l] = eps^l · P_l(eps²) / d_l for l = 1…6.
    private static func seriesCoefficients(_ coefficients: [Double], _ eps: Double) -> InlineArray<7, Double> {
        var c = InlineArray<7, Double>(repeating: 0)
        let eps2 = eps * eps
        var d = eps
        var offset = 0
        for l in 1...order {
            let m = (order - l) / 2
            c[l] = d * polynomial(coefficients, offset, degree: m, eps2) / coefficients[offset + m + 1]
            offset += m + 2
            d *= eps
        }
        return c
    }

    private static func a3Coefficients(n: Double) -> [Double] {
        let coefficients: [Double] = [-3, 128, -2, -3, 64, -1, -3, -1, 16, 3, -1, -2, 8, 1, -1, 2, 1, 1]
        var result: [Double] = []
        var offset = 0
        for j in stride(from: order - 1, through: 0, by: -1) {
            let m = min(order - j - 1, j)
            result.append(polynomial(coefficients, offset, degree: m, n) / coefficients[offset + m + 1])
            offset += m + 2
        }
        return result
    }

    private func a3(_ eps: Double) -> Double { Self.polynomial(a3x, 0, degree: Self.order - 1, eps) }

    private static func c3Coefficients(n: Double) -> [Double] {
        let coefficients: [Double] = [
            3, 128, 2, 5, 128, -1, 3, 3, 64, -1, 0, 1, 8, -1, 1, 4,
            5, 256, 1, 3, 128, -3, -2, 3, 64, 1, -3, 2, 32,
            7, 512, -10, 9, 384, 5, -9, 5, 192,
            7, 512, -14, 7, 512,
            21, 2560,
        ]
        var result: [Double] = []
        var offset = 0
        for l in 1..<order {
            for j in stride(from: order - 1, through: l, by: -1) {
                let m = min(order - j - 1, j)
                result.append(polynomial(coefficients, offset, degree: m, n) / coefficients[offset + m + 1])
                offset += m + 2
            }
        }
        return result
    }

    private func c3(_ eps: Double) -> InlineArray<6, Double> {
        var c = InlineArray<6, Double>(repeating: 0)
        var multiplier = 1.0
        var offset = 0
        for l in 1..<Self.order {
            let m = Self.order - l - 1
            multiplier *= eps
            c[l] = multiplier * Self.polynomial(c3x, offset, degree: m, eps)
            offset += m + 1
        }
        return c
    }

    private static func astroid(_ x: Double, _ y: Double) -> Double {
        let p = x * x
        let q = y * y
        let r = (p + q - 1) / 6
        guard !(q == 0 && r <= 0) else { return 0 }
        let s = p * q / 4
        let r2 = r * r
        let r3 = r * r2
        let disc = s * (s + 2 * r3)
        var u = r
        if disc >= 0 {
            var t3 = s + r3
            t3 += t3 < 0 ? -disc.squareRoot() : disc.squareRoot()
            let t = cbrt(t3)
            u += t + (t != 0 ? r2 / t : 0)
        } else {
            let angle = atan2((-disc).squareRoot(), -(s + r3))
            u += 2 * r * cos(angle / 3)
        }
        let v = (u * u + q).squareRoot()
        let uv = u < 0 ? q / (v - u) : u + v
        let w = (uv - q) / (2 * v)
        return uv / ((uv + w * w).squareRoot() + w)
    }

    // MARK: - Exact angle helpers

    private static func normalize(_ s: inout Double, _ c: inout Double) {
        let h = hypot(s, c)
        s /= h
        c /= h
    }

    private static func latitudeFix(_ x: Double) -> Double { abs(x) > 90 ? .nan : x }

    /// Rounds tiny angles so that very small values do not lose symmetry (to 1/16 of 2^-52-ish).
    private static func angleRound(_ x: Double) -> Double {
        let z = 1.0 / 16
        var y = abs(x)
        let w = z - y
        y = w > 0 ? z - w : y
        return x < 0 ? -y : y
    }

    /// Error-free sum: (s, t) with s = fl(u + v) and s + t = u + v exactly.
    private static func twoSum(_ u: Double, _ v: Double) -> (Double, Double) {
        let s = u + v
        var up = s - v
        var vpp = s - up
        up -= u
        vpp -= v
        return (s, -(up + vpp))
    }

    /// y − x reduced to [−180, 180], with the rounding error.
    private static func angleDifference(_ x: Double, _ y: Double) -> (Double, Double) {
        var (d, t) = twoSum(remainder(-x, 360), remainder(y, 360))
        (d, t) = twoSum(remainder(d, 360), t)
        if d == 0 || abs(d) == 180 {
            d = (t == 0 ? (y - x) : -t) < 0 ? -abs(d) : abs(d)
        }
        return (d, t)
    }

    /// sin and cos of an angle in degrees, exact at multiples of 90°.
    private static func sinCosDegrees(_ x: Double) -> (Double, Double) {
        var r = remainder(x, 360)
        let q = Int((r / 90).rounded())
        r -= 90 * Double(q)
        r *= .pi / 180
        let s = sin(r)
        let c = cos(r)
        switch ((q % 4) + 4) % 4 {
        case 0: return (s, c + 0)
        case 1: return (c, 0 - s)
        case 2: return (0 - s, 0 - c)
        default: return (0 - c, s + 0)
        }
    }
}
