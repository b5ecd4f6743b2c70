import FoundationEssentials
import GNSSCore
import Glibc

/// A note from GPSLocation that is not an error for the app: a fix that was dropped and why, a
/// receiver clock that stepped, an authorization request that cannot work. The core gives its
/// `code` and `facts`; the words (`message`, `description`) are LocationWords'.
public struct LocationDiagnostic: Sendable, Hashable {
    /// A stable camelCase name (`noFix`, `timeJumped`, `authorizationRequest`, …), the same as
    /// the `code` of gpsloc's NDJSON diagnostic lines.
    public let code: String
    /// What happened, with its values.
    public let facts: Facts

    /// A diagnostic with its stable `code` and what happened.
    public init(code: String, _ facts: Facts) {
        self.code = code
        self.facts = facts
    }

    /// A diagnostic with its stable `code` and the caller's words (`Facts.text`).
    public init(code: String, message: String) {
        self.init(code: code, .text(message))
    }
}

/// Receives GPSLocation's diagnostics. The library never writes to stderr by itself: a daemon
/// passes its own handler (its logger); the default writes one line to stderr.
public typealias DiagnosticsHandler = @Sendable (LocationDiagnostic) -> Void

/// Ready-made diagnostics handlers.
public enum Diagnostics {
    /// One line per diagnostic on standard error: `GPSLocation: message [code]`. The words are
    /// LocationWords' (its `description` of a diagnostic, found at run time as every face links
    /// it); a program with the core alone would print the code and facts as values.
    public static let standardError: DiagnosticsHandler = { diagnostic in
        // A closed stderr loses the line; it never stops the app (FileHandle.write would trap).
        DescriptorWrite.write("GPSLocation: \(diagnostic)\n", to: STDERR_FILENO)
    }

    /// Drops every diagnostic.
    public static let discard: DiagnosticsHandler = { _ in }
}
