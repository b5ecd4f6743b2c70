import FoundationEssentials
import Glibc
import LocationCore

// The words of the kept and trusted files' problems, each with the command that fixes it.

extension FileProblem: CustomStringConvertible {
    /// What is wrong, naming the file and what to do.
    public var description: String {
        switch self {
        case .folderMissing(let path, let code):
            return "\(path) cannot be created (\(Self.system(code)))"
        case .notAFolder(let path):
            return "\(path) is not a folder — remove it (`rm \(path)`)"
        case .folderOfAnotherUser(let path):
            return "\(path) belongs to another user — `chown $(id -u) \(path)`"
        case .folderOpenToOthers(let path):
            return "\(path) can be written by other users — `chmod 700 \(path)`"
        case .cannotCreate(let path, let code):
            return "cannot create \(path): \(Self.system(code)) — check the folder's permissions"
        case .cannotOpen(let path, let code):
            return "cannot open \(path): "
                + (code == ELOOP ? "it is a symbolic link, never followed" : Self.system(code))
        case .notRegularFile(let path):
            return "\(path) is not a regular file (a FIFO, a device or a folder?) — move it away"
        case .cannotWrite(let path, let code):
            return "cannot write \(path): \(Self.system(code))"
        case .incompleteWrite(let path):
            return "could not write all of \(path) (disk full?)"
        case .cannotReplace(let path, let code):
            return "cannot replace \(path): \(Self.system(code))"
        case .cannotLock(let path, let code):
            return "cannot lock \(path): \(Self.system(code))"
        case .cannotRead(let path, let code):
            return "\(path) cannot be read: \(Self.system(code))"
        case .cannotRemove(let path, let code):
            return "cannot remove \(path): \(Self.system(code))"
        case .linkNotTrusted(let path):
            return "\(path) is a symbolic link — only a regular file is trusted: replace the link with the file itself"
        case .typeNotTrusted(let path):
            return "\(path) is not a regular file (a FIFO, device or folder) — replace it with a regular file"
        case .ownerNotTrusted(let path, let isFolder, let uid, let mode, let administrator):
            let sudo = administrator ? "sudo " : ""
            let owner = administrator ? "root:" : "$(id -u)"
            let fix = "\(sudo)chown \(owner) \(path) && \(sudo)chmod \(isFolder ? 755 : 644) \(path)"
            return "the \(isFolder ? "folder" : "file") \(path) is owned by uid \(uid) with mode "
                + "\(String(mode, radix: 8)): another user could have changed it, so it is not trusted — run `\(fix)`"
        case .tooLarge(let path, let size, let maximum):
            return "\(path) is \(size) bytes, more than the \(maximum) allowed — it is not read"
        case .folderUnexaminable(let path, let code):
            return "the folder of \(path) cannot be examined (\(Self.system(code)))"
        case .damagedSecret(let path):
            return "\(path) is damaged — remove it (`rm \(path)`): a new secret is drawn, and every reduced location "
                + "moves to the new grid once"
        case .secretMissing:
            return "no secret"
        case .secretNotEncodable:
            return "the secret cannot be encoded"
        case .stateNotEncodable(let app):
            return "the state of \(app) cannot be encoded"
        case .storeFolder(.cannotCreate(let path, let code)):
            return "cannot create \(path): \(Self.system(code)) — check the folder's permissions"
        case .storeFolder(let problem):
            return "the authorization store's folder: \(problem); nothing is read or written there"
        case .storeUnusable(let path, let why, let movedAside):
            return "the authorization store \(path) could not be used: \(why)"
                + (movedAside.map { "; it was moved aside to \($0) for inspection" } ?? "")
                + " — apps without a readable decision are treated as not determined; grant again with "
                + "`gpsloc auth grant APP`"
        case .storeTooLarge(let megabytes):
            return "it is larger than \(megabytes) MB, far more than any store"
        case .storeInvalid(let salvaged):
            return "it is not valid (\(salvaged) decision(s) could still be read and are kept)"
        case .storeNotEncodable:
            return "the decisions cannot be encoded"
        case .invalidEntry(let app, let status, let accuracy):
            return "the authorization store's entry for \(app) (status \"\(status)\", accuracy \"\(accuracy)\") is not "
                + "a valid decision — \(app) is treated as not determined (nothing is delivered); grant again with "
                + "`gpsloc auth grant \(app)`"
        case .badAppID(let app):
            return "the app id \(app) cannot name a folder: use letters, digits, '.', '_', '-'"
        case .badMonitorName(let bytes):
            return "a monitor name must be 1 to 200 bytes, not \(bytes)"
        case .notAMonitorFile(let problem):
            return "\(problem) (not a monitor file)"
        case .monitorTooLarge(let path, let megabytes):
            return "\(path) is larger than \(megabytes) MB — not a monitor file; move it away"
        case .newerMonitorFormat(let path, let version):
            return "\(path) is a monitor file of a newer GPSLocation (format \(version)) — its conditions are not "
                + "monitored; update GPSLocation or remove the file"
        case .unreadableMonitor(let path, let detail):
            return "\(path) is not a monitor file GPSLocation can read (\(detail)) — its conditions are not "
                + "monitored; remove it or fix it with `gpsloc monitor`"
        case .monitorNotEncodable(let monitor, let detail):
            return "cannot encode the monitor \(monitor): \(detail)"
        case .monitorTooBig(let monitor, let megabytes, let conditions, let maximum):
            return "the monitor \(monitor) would take \(megabytes) MB with \(conditions) conditions, more than the "
                + "\(maximum) MB a monitor file may have — nothing was changed; split the conditions over several "
                + "monitors"
        case .monitorFolder(.cannotCreate(let path, let code)):
            return "cannot create \(path): \(Self.system(code))"
        case .monitorFolder(let problem):
            return "the monitor folder: \(problem); nothing is read or written there"
        case .policyNotTrusted(let problem):
            return "the location policy is not trusted: \(problem); location services are treated as off until then"
        case .policyUnknownKeys(let path, let keys):
            return "the location policy \(path) has unknown key(s) \(keys.joined(separator: ", ")) (the keys are "
                + "locationServicesEnabled, brokerRequired, restricted and granted, each grant with status and "
                + "accuracy) — location services are treated as off until an administrator fixes it"
        case .policyUnreadable(let path):
            return "the location policy \(path) could not be read or is invalid — location services are treated as "
                + "off until an administrator fixes it (see the README for its format)"
        case .policyGrantsIgnored(let additional, let apps, let path):
            return "GPSLOCATION_POLICY (\(additional)) can only add restrictions: its grants for "
                + "\(apps.joined(separator: ", ")) are ignored — grant in \(path) or with `gpsloc auth grant`"
        case .several(let problems):
            return problems.map(\.description).joined(separator: "; ")
        case .cannotWatch(let folder, let code):
            return "cannot watch \(folder) for changes (\(Self.system(code)))"
        case .inotifyUnavailable(let code):
            return "inotify is not available (\(Self.system(code)))"
        }
    }

    /// The system's words for `code` (`strerror`); "unknown cause" for 0.
    static func system(_ code: Int32) -> String {
        code == 0 ? "unknown cause" : String(cString: strerror(code))
    }
}
