import FoundationEssentials
import GNSSCore
import Glibc
import LocationCore

extension LocationAuthorizer {
    /// The person at this process's terminal answers (questions on stderr, answers on stdin):
    /// allow once / while running / always / don't allow, then precise or approximate. Nil —
    /// nobody asked — when stdin is not a terminal or closes before an answer. Approximate is
    /// the default: only an explicit "y" gives the precise location. "Once" is temporary (not
    /// stored).
    public static func terminalPrompt(usageDescription: String?) -> AuthorizationPrompt {
        { appID, wantsAlways in
            guard isatty(STDIN_FILENO) != 0 else { return nil }
            DescriptorWrite.write(
                question(appID: appID, usageDescription: usageDescription, wantsAlways: wantsAlways),
                to: STDERR_FILENO)
            guard let answer = readLine()?.trimmingWhitespace().lowercased().first else { return nil }
            let status: CLAuthorizationStatus
            switch answer {
            case "o", "w": status = .authorizedWhenInUse
            case "a": status = .authorizedAlways
            case "d", "n": return AuthorizationDecision(status: .denied)
            default:
                DescriptorWrite.write("Not an answer: nothing is decided.\n", to: STDERR_FILENO)
                return nil
            }
            DescriptorWrite.write("Precise location? [y/N] (no: approximate, a 2 km grid): ", to: STDERR_FILENO)
            let precise = readLine()?.trimmingWhitespace().lowercased().first == "y"
            return AuthorizationDecision(
                status: status, accuracy: precise ? .fullAccuracy : .reducedAccuracy, isTemporary: answer == "o")
        }
    }

    /// The question `terminalPrompt` asks. The app id and the usage description come from the
    /// asking program (through gpslocd, from another process): shown with every control and
    /// bidirectional character escaped (`TerminalText`), so they cannot erase, rewrite or
    /// reorder the line the person answers.
    public static func question(appID: String, usageDescription: String?, wantsAlways: Bool) -> String {
        var question = "\"\(TerminalText.escaped(appID))\" would like to use this machine's location"
        if let usageDescription { question += ": \(TerminalText.escaped(usageDescription))" }
        question += "\nAllow? [o]nce / [w]hile running / [a]lways / [d]on't allow"
        if wantsAlways { question += " (it asks for always)" }
        return question + ": "
    }
}
