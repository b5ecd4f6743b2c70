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
