import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc

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
            ? "\(fixedDecimal(metres, decimals: decimals)) m"
            : "\(fixedDecimal(metres / 0.3048, decimals: decimals)) ft"
    }

    /// A speed: m/s with km/h, miles per hour, or knots.
    func speed(_ metresPerSecond: Double, brief: Bool = false) -> String {
        switch self {
        case .metric:
            brief
                ? "\(fixedDecimal(metresPerSecond, decimals: 1)) m/s"
                : "\(fixedDecimal(metresPerSecond, decimals: 2)) m/s (\(fixedDecimal(metresPerSecond * 3.6, decimals: 1)) km/h)"
        case .imperial: "\(fixedDecimal(metresPerSecond * 3600 / 1609.344, decimals: 1)) mph"
        case .nautical: "\(fixedDecimal(metresPerSecond * 3600 / 1852, decimals: 1)) kn"
        }
    }
}
