import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc

/// Whether a gpsd on this machine is one that gpsd's own `gpsfake` started — so what it reports
/// is a recording played back, and locations from it are `isSimulatedBySoftware`.
///
/// gpsfake runs its gpsd as a child, with the port on the command line (`gpsd -b -N -S PORT
/// -F …`); a gpsd run by systemd is socket-activated (no `-S`) and is pid 1's child. Both facts
/// are in `/proc`, whose `cmdline` and `stat` files every user may read: the answer needs no
/// privilege and no guess from the device's name (a pseudo-terminal also carries real
/// receivers bridged with `socat`).
public enum GPSFakeDetection {
    /// True when `endpoint` is on the loopback interface and the gpsd listening on its port was
    /// started by gpsfake. Reads `proc` (a folder laid out like `/proc`) once.
    public static func feeds(_ endpoint: GPSDEndpoint, proc: String = "/proc") -> Bool {
        guard ["127.0.0.1", "localhost", "::1"].contains(endpoint.host) || endpoint.host.hasPrefix("127.") else {
            return false
        }
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: proc) else { return false }
        let port = String(endpoint.port)
        for entry in entries where Int32(entry) != nil {
            let arguments = commandLine(proc, entry)
            guard arguments.first.map({ lastPathComponent(of: $0) == "gpsd" }) == true,
                zip(arguments, arguments.dropFirst()).contains(where: { $0 == "-S" && $1 == port })
                    || arguments.contains("-S" + port),
                let parent = parentID(proc, entry)
            else { continue }
            if commandLine(proc, parent).contains(where: { lastPathComponent(of: $0) == "gpsfake" }) {
                return true
            }
        }
        return false
    }

    /// A process's arguments (`cmdline`: NUL-separated), or none when it cannot be read.
    private static func commandLine(_ proc: String, _ pid: String) -> [String] {
        guard let data = FileManager.default.contents(atPath: "\(proc)/\(pid)/cmdline") else { return [] }
        return data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The parent's process id, the second field after the `(name)` of `stat`.
    private static func parentID(_ proc: String, _ pid: String) -> String? {
        guard let text = try? String(contentsOfFile: "\(proc)/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? String(fields[1]) : nil
    }
}
