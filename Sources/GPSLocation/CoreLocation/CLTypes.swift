import Foundation

// CoreLocation's basic types, with Apple's names and values, so CoreLocation code ports to
// Linux by changing its import. Invalid values use Apple's negative markers.

/// The best the receiver gives, for navigation (−2, Apple's value): every fix qualifies.
public let kCLLocationAccuracyBestForNavigation: CLLocationAccuracy = -2
/// The best the receiver gives (−1, Apple's value): every fix qualifies.
public let kCLLocationAccuracyBest: CLLocationAccuracy = -1
/// Within 10 m.
public let kCLLocationAccuracyNearestTenMeters: CLLocationAccuracy = 10
/// Within 100 m.
public let kCLLocationAccuracyHundredMeters: CLLocationAccuracy = 100
/// Within 1 km.
public let kCLLocationAccuracyKilometer: CLLocationAccuracy = 1000
/// Within 3 km.
public let kCLLocationAccuracyThreeKilometers: CLLocationAccuracy = 3000
/// Approximate locations: as `desiredAccuracy`, a manager with full accuracy authorization is
/// served as if it had reduced accuracy (Apple's documented use). Apple documents no number;
/// its value there is 6,380,000 (about the Earth's radius), distinct from every tier, and so
/// here. Compare it by value with this constant only.
public let kCLLocationAccuracyReduced: CLLocationAccuracy = 6_380_000
/// Deliver every location, however little it moved.
public let kCLDistanceFilterNone: CLLocationDistance = -1
/// The largest distance: a region or filter that never triggers.
public let CLLocationDistanceMax: CLLocationDistance = .greatestFiniteMagnitude
/// The largest time interval: a deferral that never times out.
public let CLTimeIntervalMax: TimeInterval = .greatestFiniteMagnitude
/// The `NSError` domain of every `CLError` (`(error as NSError).domain`).
public let kCLErrorDomain = "kCLErrorDomain"

/// What the device is doing: decides how long a stop lasts before live updates pause
/// (Apple's raw values).
public enum CLActivityType: Int, Sendable {
    /// No particular activity (the default).
    case other = 1
    /// Driving: pauses only after a longer stop.
    case automotiveNavigation = 2
    /// Walking, running, cycling.
    case fitness = 3
    /// Other vehicles: boats, trains.
    case otherNavigation = 4
    /// Flying: never paused automatically.
    case airborne = 5
}


/// Bridged like Apple's: `(error as NSError).domain` is `kCLErrorDomain`, `.code` the code's raw
/// value, `localizedDescription` our explanation, and the lower-level cause is
/// `NSUnderlyingErrorKey`.
extension CLError: CustomNSError {
    /// `kCLErrorDomain`.
    public static var errorDomain: String { kCLErrorDomain }
    /// The code's raw value, as Apple's.
    public var errorCode: Int { code.rawValue }
    /// The explanation, the suggested command and the underlying error, under Foundation's keys.
    public var errorUserInfo: [String: Any] {
        var info: [String: Any] = [NSLocalizedDescriptionKey: description]
        if let suggestion = recoverySuggestion { info[NSLocalizedRecoverySuggestionErrorKey] = suggestion }
        if let underlyingError { info[NSUnderlyingErrorKey] = underlyingError as NSError }
        return info
    }
}

extension CLError: LocalizedError {
    /// The explanation (what `error.localizedDescription` shows).
    public var errorDescription: String? { description }
    /// The command that fixes it, when the explanation names one (the first quoted command in it).
    public var recoverySuggestion: String? {
        let parts = message.split(separator: "`", omittingEmptySubsequences: false)
        guard parts.count >= 3, !parts[1].isEmpty else { return nil }
        return "Run `\(parts[1])`."
    }
}

