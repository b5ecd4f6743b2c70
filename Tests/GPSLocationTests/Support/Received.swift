import Foundation
import GNSSCore
import GPSLocation
import TestSupport

/// What the app (or gpsloc) received, in a form both paths can produce.
struct Received: Equatable {
    var locations: [String] = []
    var errors: [String] = []
    var diagnostics: [String] = []

    /// timestamp, position (1e-9°) and accuracy of one location.
    static func key(timestamp: Date, latitude: Double, longitude: Double, horizontal: Double?) -> String {
        String(
            format: "%@ %.9f %.9f %.3f", iso8601Milliseconds(timestamp), latitude, longitude, horizontal ?? -1)
    }

    /// Each run has its own gpsfake port.
    static func withoutPort(_ message: String) -> String {
        message.replacingOccurrences(of: #"127\.0\.0\.1:\d+"#, with: "127.0.0.1:PORT", options: .regularExpression)
            .replacingOccurrences(of: #"/dev/pts/\d+"#, with: "/dev/pts/N", options: .regularExpression)
    }

    static func fromNDJSON(_ text: String) -> Received {
        var received = Received()
        for line in GPSLocBinary.jsonLines(text) {
            switch line["type"] as? String {
            case "location":
                let timestamp = ISO8601.parse(line["timestamp"] as! String)!
                received.locations.append(
                    key(
                        timestamp: timestamp, latitude: line["latitude"] as! Double,
                        longitude: line["longitude"] as! Double, horizontal: line["horizontalAccuracy"] as? Double))
            case "error":
                received.errors.append(withoutPort(line["message"] as! String))
            case "diagnostic":
                let code = line["code"] as! String
                // The replay's own labels and input statistics are the command's, not the engine's.
                if !["replay", "pacing"].contains(code) { received.diagnostics.append(code) }
            default:
                break
            }
        }
        return received
    }
}
