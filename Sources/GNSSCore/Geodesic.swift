import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

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
    let a3x: [Double]
    let c3x: [Double]

    static let order = 6
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
}
