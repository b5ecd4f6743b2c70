import Foundation

/// A TPV as gpsd printed it, parsed independently of libgps (for comparing against our `Fix`).
struct ReferenceTPV {
    var mode: Int
    var time: Date?
    var timeText: String?
    var latitude: Double?
    var longitude: Double?

    /// Every `{"class":"TPV",…}` line of a gpsd JSON stream, in order.
    static func parse(_ text: String) -> [ReferenceTPV] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            guard line.hasPrefix("{\"class\":\"TPV\""),
                let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            else { return nil }
            let timeText = object["time"] as? String
            return ReferenceTPV(
                mode: object["mode"] as? Int ?? 0,
                time: timeText.flatMap(ISO8601.parse),
                timeText: timeText,
                latitude: object["lat"] as? Double,
                longitude: object["lon"] as? Double)
        }
    }
}

enum ISO8601 {
    /// Parses gpsd's `2034-08-16T03:07:19.000Z` (milliseconds optional).
    static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}
