import Foundation
import GNSSCore

/// One decoded gpsd JSON object, as Swift values.
public enum GPSDReport: Sendable, Equatable {
    /// A TPV report.
    case fix(Fix)
    /// A SKY report.
    case sky(SkyView)
    /// A DEVICE report (activation or deactivation).
    case device(DeviceEvent)
    /// A DEVICES report: the devices gpsd has active, sent in reply to WATCH (so a client that
    /// connects to a running gpsd learns its receivers without waiting for an activation).
    case devices([DeviceEvent])
    /// Another class (VERSION, WATCH, GST, …), by name.
    case other(className: String)
}

/// Reading fields from gpsd's raw JSON lines where libgps cannot (e.g. DEVICE deactivation).
package enum GPSDRawJSON {
    /// The value of `"class":"…"`, which gpsd always writes first.
    package static func className(_ line: Substring) -> Substring? { stringField("class", in: line) }

    /// The string value of `"key":"…"` (no escapes expected in gpsd's class, path or driver fields).
    package static func stringField(_ key: String, in line: Substring) -> Substring? {
        guard let keyRange = line.range(of: "\"\(key)\":\"") else { return nil }
        let rest = line[keyRange.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return rest[..<end]
    }

    /// True for gpsd's deactivation message, `"activated":0`, which libgps 3.22 fails to decode.
    package static func isDeactivation(_ line: Substring) -> Bool {
        guard let range = line.range(of: "\"activated\":") else { return false }
        let value = line[range.upperBound...].prefix(while: { $0 != "," && $0 != "}" })
        return value == "0" || value == "0.0"
    }
}
