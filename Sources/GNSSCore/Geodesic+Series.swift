import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

// Karney's series in the third flattening and the angle helpers `Geodesic` is built on: part
// of `Geodesic`, in a file of their own.
extension Geodesic {

    /// Horner evaluation of coefficients[offset ..< offset+degree+1] at x (highest power first).
    static func polynomial(_ coefficients: [Double], _ offset: Int, degree: Int, _ x: Double) -> Double {
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
    static func sinSeries<let count: Int>(_ sinx: Double, _ cosx: Double, _ c: InlineArray<count, Double>)
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

    static let c1Coefficients: [Double] = [
        -1, 6, -16, 32, -9, 64, -128, 2048, 9, -16, 768, 3, -5, 512, -7, 1280, -7, 2048,
    ]
    static let c2Coefficients: [Double] = [
        1, 2, 16, 32, 35, 64, 384, 2048, 15, 80, 768, 7, 35, 512, 63, 1280, 77, 2048,
    ]

    static func a1m1(_ eps: Double) -> Double {
        let eps2 = eps * eps
        let t = (((eps2 + 4) * eps2 + 64) * eps2) / 256
        return (t + eps) / (1 - eps)
    }

    static func c1(_ eps: Double) -> InlineArray<7, Double> {
        seriesCoefficients(c1Coefficients, eps)
    }

    static func a2m1(_ eps: Double) -> Double {
        let eps2 = eps * eps
        let t = (((-11 * eps2 - 28) * eps2 - 192) * eps2) / 256
        return (t - eps) / (1 + eps)
    }

    static func c2(_ eps: Double) -> InlineArray<7, Double> {
        seriesCoefficients(c2Coefficients, eps)
    }

    /// C1 and C2: c[l] = eps^l · P_l(eps²) / d_l for l = 1…6.
    static func seriesCoefficients(_ coefficients: [Double], _ eps: Double) -> InlineArray<7, Double> {
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

    static func a3Coefficients(n: Double) -> [Double] {
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

    func a3(_ eps: Double) -> Double { Self.polynomial(a3x, 0, degree: Self.order - 1, eps) }

    static func c3Coefficients(n: Double) -> [Double] {
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

    func c3(_ eps: Double) -> InlineArray<6, Double> {
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

    static func astroid(_ x: Double, _ y: Double) -> Double {
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

    static func normalize(_ s: inout Double, _ c: inout Double) {
        let h = hypot(s, c)
        s /= h
        c /= h
    }

    static func latitudeFix(_ x: Double) -> Double { abs(x) > 90 ? .nan : x }

    /// Rounds tiny angles so that very small values do not lose symmetry (to 1/16 of 2^-52-ish).
    static func angleRound(_ x: Double) -> Double {
        let z = 1.0 / 16
        var y = abs(x)
        let w = z - y
        y = w > 0 ? z - w : y
        return x < 0 ? -y : y
    }

    /// Error-free sum: (s, t) with s = fl(u + v) and s + t = u + v exactly.
    static func twoSum(_ u: Double, _ v: Double) -> (Double, Double) {
        let s = u + v
        var up = s - v
        var vpp = s - up
        up -= u
        vpp -= v
        return (s, -(up + vpp))
    }

    /// y − x reduced to [−180, 180], with the rounding error.
    static func angleDifference(_ x: Double, _ y: Double) -> (Double, Double) {
        var (d, t) = twoSum(remainder(-x, 360), remainder(y, 360))
        (d, t) = twoSum(remainder(d, 360), t)
        if d == 0 || abs(d) == 180 {
            d = (t == 0 ? (y - x) : -t) < 0 ? -abs(d) : abs(d)
        }
        return (d, t)
    }

    /// sin and cos of an angle in degrees, exact at multiples of 90°.
    static func sinCosDegrees(_ x: Double) -> (Double, Double) {
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
