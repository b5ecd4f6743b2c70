/// `value` with exactly `decimals` digits after the point, rounded half away from zero — what
/// `String(format: "%.Nf")` prints for the values this package formats (coordinates, metres,
/// seconds), without Foundation's formatter (the light binaries link FoundationEssentials only).
/// Not finite: "nan", "inf" or "-inf", as printf does.
package func fixedDecimal(_ value: Double, decimals: Int) -> String {
    guard value.isFinite else { return value.isNaN ? "nan" : (value < 0 ? "-inf" : "inf") }
    var scale = 1.0
    for _ in 0..<max(decimals, 0) { scale *= 10 }
    let scaled = (abs(value) * scale).rounded(.toNearestOrAwayFromZero)
    // Beyond 2^63 the digits are the double's own: Swift's shortest description is exact enough.
    guard scaled < 9.2e18 else { return String(value) }
    let units = UInt64(scaled)
    let whole = units / UInt64(scale)
    var text = (value < 0 && units > 0 ? "-" : "") + String(whole)
    if decimals > 0 {
        let fraction = String(units % UInt64(scale))
        text += "." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }
    return text
}

/// `value` as `String(format: "%g")` prints it: six significant digits, no trailing zeros, no
/// point for a whole number; below 0.0001 or from a million on, as a mantissa and an exponent of
/// at least two digits ("5e+09").
package func significantDecimal(_ value: Double) -> String {
    guard value.isFinite, value != 0 else { return value == 0 ? "0" : fixedDecimal(value, decimals: 0) }
    let magnitude = abs(value)
    guard magnitude >= 0.0001, magnitude < 999_999.5 else {
        var exponent = 0
        var mantissa = magnitude
        while mantissa >= 10 {
            mantissa /= 10
            exponent += 1
        }
        while mantissa < 1 {
            mantissa *= 10
            exponent -= 1
        }
        if (mantissa * 100_000).rounded() >= 1_000_000 {
            mantissa /= 10
            exponent += 1
        }
        let digits = significantDecimal(mantissa)
        let power = String(abs(exponent))
        return (value < 0 ? "-" : "") + digits + "e" + (exponent < 0 ? "-" : "+")
            + (power.count < 2 ? "0" : "") + power
    }
    var digitsBefore = 0
    var scaled = magnitude
    while scaled >= 1 {
        scaled /= 10
        digitsBefore += 1
    }
    var leadingZeros = 0
    if digitsBefore == 0 {
        var small = magnitude
        while small < 0.1 {
            small *= 10
            leadingZeros += 1
        }
    }
    var text = fixedDecimal(value, decimals: max(0, 6 - digitsBefore) + leadingZeros)
    if text.contains(".") {
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
    }
    return text
}
