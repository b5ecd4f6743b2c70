import Foundation

/// The receiver's own 1σ estimates (GST: latitude, longitude, altitude error) by time of day in
/// milliseconds, read from a recording's text with a plain split (not the project's parser).
/// Every epoch with a GST carries it on both paths, the one whose GST first comes after its fix
/// included (#49: its epoch is still open then); gpsd 3.22's TPV does not.
public enum ReceiverEstimates {
    public static func parse(_ log: String) -> [Int: (latitude: Double, longitude: Double, altitude: Double?)] {
        var estimates: [Int: (Double, Double, Double?)] = [:]
        func key(_ field: Substring) -> Int? {
            guard field.count >= 6, let hh = Int(field.prefix(2)), let mm = Int(field.dropFirst(2).prefix(2)),
                let ss = Double(field.dropFirst(4))
            else { return nil }
            return Int(((Double(hh * 3600 + mm * 60) + ss) * 1000).rounded())
        }
        for line in log.split(whereSeparator: \.isNewline) {
            let type = line.dropFirst(3).prefix(4)
            let body = line.split(separator: "*")[0]
            let fields = body.split(separator: ",", omittingEmptySubsequences: false)
            guard type == "GST,", fields.count >= 9, let time = key(fields[1]),
                let latitude = Double(fields[6]), let longitude = Double(fields[7])
            else { continue }
            estimates[time] = (latitude, longitude, Double(fields[8]))
        }
        return estimates
    }

    /// A time's milliseconds of its UTC day: the key above (gpsd moves pre-2019 dates by 1024
    /// weeks, the receiver's date stays; the time of day is the same).
    public static func key(_ date: Date) -> Int {
        let milliseconds = Int((date.timeIntervalSince1970 * 1000).rounded())
        return ((milliseconds % 86_400_000) + 86_400_000) % 86_400_000
    }
}
