import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

// What gpslocd writes: replies, protocol errors and the audit log. Part of `BrokerService`, in a
// file of its own.
extension BrokerService {
    func reply(
        _ client: BrokerClient, _ id: Int, ok: Bool, message: String, decision: AuthorizationDecision? = nil,
        rows: [String]? = nil
    ) {
        var line = BrokerLine("REPLY")
        line.add("id", id)
        line.add("ok", ok)
        line.add("message", message)
        line.add("status", decision?.status.name)
        line.add("accuracy", decision?.accuracy.name)
        if let rows { line.addRaw("rows", "[" + rows.joined(separator: ",") + "]") }
        client.send(line.line)
    }

    func errorLine(_ message: String) -> String {
        var line = BrokerLine("ERROR")
        line.add("message", message)
        return line.line
    }

    static func isValidLabel(_ label: String) -> Bool {
        (1...128).contains(label.utf8.count)
            && label.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-@".contains($0)) }
    }

    /// One line in `STATE/audit.log` (who connected, who decided what).
    /// Never through a link (`O_NOFOLLOW`: a link planted there would make gpslocd append to
    /// another file), and at most `auditLimit` bytes: past it the log moves to `audit.log.1`
    /// (the one before that is dropped), so connection churn cannot fill the disk.
    func audit(_ text: String) {
        let line = "\(iso8601(Date())) \(text)\n"
        let path = stateDirectory.appendingPathComponent("audit.log").path
        var fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return }
        var status = stat()
        if fstat(fd, &status) == 0, status.st_mode & S_IFMT != S_IFREG {
            close(fd)
            return
        }
        if status.st_size >= Self.auditLimit {
            close(fd)
            rename(path, path + ".1")
            fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { return }
        }
        DescriptorWrite.write(line, to: fd)
        close(fd)
    }

    /// The audit log's size before it moves to `audit.log.1`.
    static let auditLimit = 1 << 20

    func iso8601(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
    }
}
