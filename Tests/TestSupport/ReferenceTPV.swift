import Foundation

/// A TPV as gpsd printed it, parsed independently of libgps (for comparing against our `Fix`).
public struct ReferenceTPV {
    public var mode: Int
    public var time: Date?
    public var timeText: String?
    public var latitude: Double?
    public var longitude: Double?
    /// Every other number of the report by its gpsd name (`altHAE`, `altMSL`, `speed`, `track`,
    /// `climb`, `epx`, `epy`, `epv`, `eph`, `eps`, `epd`, `status`, …).
    public var numbers: [String: Double] = [:]

    /// Every `{"class":"TPV",…}` line of a gpsd JSON stream, in order.
    public static func parse(_ text: String) -> [ReferenceTPV] {
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
                longitude: object["lon"] as? Double,
                numbers: object.compactMapValues { ($0 as? NSNumber)?.doubleValue })
        }
    }
}

public enum ISO8601 {
    /// Parses gpsd's `2034-08-16T03:07:19.000Z` (milliseconds optional).
    public static func parse(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }
}

/// Both nil, or both present and within `tolerance`.
public func nearlyEqual(_ a: Double?, _ b: Double?, tolerance: Double = 1e-9) -> Bool {
    switch (a, b) {
    case (nil, nil): true
    case (let x?, let y?): abs(x - y) <= tolerance
    default: false
    }
}
