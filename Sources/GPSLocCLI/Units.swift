import Foundation

/// The units the table and the text lines show (`--units`, else `GPSD_UNITS`, as cgps reads it;
/// default metric). NDJSON and GPX are always SI: metres and metres per second.
enum Units: String, CaseIterable, Sendable {
    case metric, imperial, nautical

    /// `--units NAME`, else the `GPSD_UNITS` environment variable (gpsd's clients' setting).
    static func resolve(
        _ flag: String?, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(UsageError) -> Units {
        if let flag {
            guard let units = Units(rawValue: flag) else {
                throw UsageError("--units must be metric, imperial or nautical, not \(flag)")
            }
            return units
        }
        return environment["GPSD_UNITS"].flatMap(Units.init(rawValue:)) ?? .metric
    }

    /// A length: metres, or feet (imperial and nautical, as cgps shows altitudes).
    func length(_ metres: Double, decimals: Int = 1) -> String {
        self == .metric
            ? String(format: "%.\(decimals)f m", metres) : String(format: "%.\(decimals)f ft", metres / 0.3048)
    }

    /// A speed: m/s with km/h, miles per hour, or knots.
    func speed(_ metresPerSecond: Double, brief: Bool = false) -> String {
        switch self {
        case .metric:
            brief
                ? String(format: "%.1f m/s", metresPerSecond)
                : String(format: "%.2f m/s (%.1f km/h)", metresPerSecond, metresPerSecond * 3.6)
        case .imperial: String(format: "%.1f mph", metresPerSecond * 3600 / 1609.344)
        case .nautical: String(format: "%.1f kn", metresPerSecond * 3600 / 1852)
        }
    }
}
