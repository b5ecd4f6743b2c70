import FoundationEssentials
import GNSSCore
import Glibc

/// A note from GPSLocation that is not an error for the app: a fix that was dropped and why, a
/// receiver clock that stepped, an authorization request that cannot work.
public struct LocationDiagnostic: Sendable, Equatable, CustomStringConvertible {
    /// A stable camelCase name (`noFix`, `timeJumped`, `authorizationRequest`, …), the same as
    /// the `code` of gpsloc's NDJSON diagnostic lines.
    public let code: String
    /// What happened, in words.
    public let message: String

    /// A diagnostic with its stable `code` and its `message`.
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }

    /// `message [code]`.
    public var description: String { "\(message) [\(code)]" }
}

/// Receives GPSLocation's diagnostics. The library never writes to stderr by itself: a daemon
/// passes its own handler (its logger); the default writes one line to stderr.
public typealias DiagnosticsHandler = @Sendable (LocationDiagnostic) -> Void

/// Ready-made diagnostics handlers.
public enum Diagnostics {
    /// One line per diagnostic on standard error: `GPSLocation: message [code]`.
    public static let standardError: DiagnosticsHandler = { diagnostic in
        // A closed stderr loses the line; it never stops the app (FileHandle.write would trap).
        DescriptorWrite.write("GPSLocation: \(diagnostic)\n", to: STDERR_FILENO)
    }

    /// Drops every diagnostic.
    public static let discard: DiagnosticsHandler = { _ in }
}
