import Foundation

// CoreLocation's basic types, with Apple's names and values, so CoreLocation code ports to
// Linux by changing its import. Invalid values use Apple's negative markers.

/// The `NSError` domain of every `CLError` (`(error as NSError).domain`).
public let kCLErrorDomain = "kCLErrorDomain"

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
