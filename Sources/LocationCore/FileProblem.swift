import FoundationEssentials
import Glibc

/// What is wrong with a file or folder the core keeps (decisions, reduced accuracy's secret,
/// monitors) or trusts (the policy), as values: LocationWords says each with the command that
/// fixes it. `errno` values are the system's codes (their words are `strerror`'s).
public indirect enum FileProblem: Error, Sendable, Hashable {
    // Private folders and files (`PrivateFile`).
    /// The folder is not there and could not be made (`lstat` failed).
    case folderMissing(path: String, errno: Int32)
    /// The path of a private folder is something else.
    case notAFolder(path: String)
    /// The private folder belongs to another user.
    case folderOfAnotherUser(path: String)
    /// Other users can write in the private folder.
    case folderOpenToOthers(path: String)
    /// A folder could not be created (`errno` 0: no system code).
    case cannotCreate(path: String, errno: Int32)
    /// A file could not be opened (`ELOOP`: a symbolic link, never followed).
    case cannotOpen(path: String, errno: Int32)
    /// A kept file is a FIFO, a device or a folder.
    case notRegularFile(path: String)
    /// A temporary file could not be written.
    case cannotWrite(path: String, errno: Int32)
    /// Not all of a file could be written (the disk is full?).
    case incompleteWrite(path: String)
    /// A file could not be renamed over the old one.
    case cannotReplace(path: String, errno: Int32)
    /// A lock file could not be locked.
    case cannotLock(path: String, errno: Int32)
    /// A file could not be read.
    case cannotRead(path: String, errno: Int32)
    /// A file could not be removed.
    case cannotRemove(path: String, errno: Int32)

    // Trusted files (`TrustedFile`: the policy).
    /// A trusted file is a symbolic link.
    case linkNotTrusted(path: String)
    /// A trusted file is not a regular file.
    case typeNotTrusted(path: String)
    /// A trusted file (or its folder) is owned or writable by someone else; `administrator`:
    /// root's file (the fix needs sudo).
    case ownerNotTrusted(path: String, isFolder: Bool, uid: UInt32, mode: UInt32, administrator: Bool)
    /// A file larger than it may be.
    case tooLarge(path: String, size: Int, maximum: Int)
    /// A trusted file's folder cannot be examined.
    case folderUnexaminable(path: String, errno: Int32)

    // Reduced accuracy's store.
    /// The secret's file is damaged.
    case damagedSecret(path: String)
    /// No secret to reduce with (none was read or made).
    case secretMissing
    /// The secret could not be encoded.
    case secretNotEncodable
    /// An app's reduced-accuracy state could not be encoded.
    case stateNotEncodable(app: String)

    // The decision store.
    /// The decision store's folder cannot be used.
    case storeFolder(FileProblem)
    /// The decision store cannot be used (`why`); moved aside to `movedAside` when it could be.
    case storeUnusable(path: String, why: FileProblem, movedAside: String?)
    /// The decision store is larger than any store (`megabytes` allowed).
    case storeTooLarge(megabytes: Int)
    /// The decision store is not valid; `salvaged` decisions could still be read.
    case storeInvalid(salvaged: Int)
    /// The decisions could not be encoded.
    case storeNotEncodable
    /// One app's stored decision is not a valid one.
    case invalidEntry(app: String, status: String, accuracy: String)

    // Monitor files (`MonitorStore`).
    /// An app id that cannot name a folder.
    case badAppID(app: String)
    /// A monitor name of `bytes` bytes (1 to 200 are allowed).
    case badMonitorName(bytes: Int)
    /// A monitor file that cannot be opened (`why`).
    case notAMonitorFile(FileProblem)
    /// A monitor file larger than `megabytes`.
    case monitorTooLarge(path: String, megabytes: Int)
    /// A monitor file of a newer format.
    case newerMonitorFormat(path: String, version: Int)
    /// A monitor file that does not decode (`detail`: the decoder's account).
    case unreadableMonitor(path: String, detail: String)
    /// A monitor that could not be encoded (`detail`: the encoder's account).
    case monitorNotEncodable(monitor: String, detail: String)
    /// A monitor of `conditions` conditions that would take `megabytes`, over `maximum`.
    case monitorTooBig(monitor: String, megabytes: Int, conditions: Int, maximum: Int)
    /// The monitors' folder cannot be used.
    case monitorFolder(FileProblem)

    // The administrator's policy (`LocationPolicy`).
    /// The policy file is not trusted (`why`): services are off.
    case policyNotTrusted(FileProblem)
    /// The policy has unknown keys: services are off.
    case policyUnknownKeys(path: String, keys: [String])
    /// The policy could not be read or is invalid: services are off.
    case policyUnreadable(path: String)
    /// `GPSLOCATION_POLICY`'s file (`additional`) granted `apps`: ignored (grants belong in `path`).
    case policyGrantsIgnored(additional: String, apps: [String], path: String)
    /// More than one problem.
    case several([FileProblem])

    // Following files live (`FileChangeWatcher`).
    /// A folder cannot be watched for changes.
    case cannotWatch(folder: String, errno: Int32)
    /// inotify is not available.
    case inotifyUnavailable(errno: Int32)

    /// The file does not exist (`ENOENT` when opening it).
    public var isMissing: Bool {
        if case .cannotOpen(_, let code) = self { code == ENOENT } else { false }
    }
}
