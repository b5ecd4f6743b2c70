import FoundationEssentials
import Glibc

/// Replacing a private file whole: the data goes to a fresh temporary name beside it, opened
/// with `O_EXCL|O_NOFOLLOW` and mode 0600 (never a planted file or link), is synced, renamed
/// over the file, and the folder synced — a reader sees the old file or the new one, never a
/// part. Used by the decision store, the reduced-accuracy state and the last-location cache.
/// Reading goes through `read` and `folderProblem`: a folder of the user's closed to others, a
/// regular file of the user's of bounded size, never a link or a FIFO. `folderProblem` is the one
/// folder check of every private store: decisions, monitors, reduced accuracy, last locations.
public enum PrivateFile {
    /// The user's base folder of one XDG kind, with `gpslocation/` and `subpath` below it: the
    /// variable (`XDG_CONFIG_HOME`, `XDG_CACHE_HOME`, `XDG_STATE_HOME`) when it names an
    /// absolute path, else its default below `$HOME` (`.config`, `.cache`, `.local/state`), as
    /// the XDG Base Directory Specification says (a relative value is invalid and ignored).
    /// The one place every store finds its folder.
    public enum BaseDirectory: String, Sendable {
        /// `XDG_CONFIG_HOME` (`~/.config`).
        case config = "XDG_CONFIG_HOME"
        /// `XDG_CACHE_HOME` (`~/.cache`).
        case cache = "XDG_CACHE_HOME"
        /// `XDG_STATE_HOME` (`~/.local/state`).
        case state = "XDG_STATE_HOME"

        var fallback: String {
            switch self {
            case .config: ".config"
            case .cache: ".cache"
            case .state: ".local/state"
            }
        }
    }

    /// The user's folder `base`/`subpath` (the XDG variable when absolute, else its default).
    public static func userDirectory(_ base: BaseDirectory, _ subpath: String = "") -> URL {
        let environment = ProcessInfo.processInfo.environment
        let root: URL
        if let value = environment[base.rawValue], value.hasPrefix("/") {
            root = URL(fileURLWithPath: value)
        } else {
            root = URL(fileURLWithPath: environment["HOME"] ?? homeDirectory()).appendingPathComponent(base.fallback)
        }
        let folder = root.appendingPathComponent("gpslocation")
        return subpath.isEmpty ? folder : folder.appendingPathComponent(subpath)
    }

    /// What is wrong with `directory` as a private folder; nil: a folder of the user's that no
    /// one else can write to (the package creates them 0700).
    public static func folderProblem(_ directory: URL) -> FileProblem? {
        var info = stat()
        guard lstat(directory.path, &info) == 0 else { return .folderMissing(path: directory.path, errno: errno) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else { return .notAFolder(path: directory.path) }
        guard info.st_uid == geteuid() else { return .folderOfAnotherUser(path: directory.path) }
        guard info.st_mode & 0o022 == 0 else { return .folderOpenToOthers(path: directory.path) }
        return nil
    }

    /// The contents of `url` when it is a regular file of the user's of at most `maximumSize`
    /// bytes in a private folder; nil otherwise (missing, a link, a FIFO — opened without
    /// blocking —, someone else's, too large).
    public static func read(_ url: URL, maximumSize: Int) -> Data? {
        guard folderProblem(url.deletingLastPathComponent()) == nil,
            case .success(let descriptor) = openRegular(url.path, flags: O_RDONLY)
        else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_uid == geteuid(), info.st_size <= maximumSize else { return nil }
        return readAll(descriptor, maximumSize: maximumSize)
    }

    /// Up to `maximumSize` bytes from `descriptor`, to its end; nil when it is empty or a read
    /// fails.
    static func readAll(_ descriptor: Int32, maximumSize: Int) -> Data? {
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while data.count < maximumSize {
            let count = Glibc.read(descriptor, &buffer, min(buffer.count, maximumSize - data.count))
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[..<count])
        }
        return data.isEmpty ? nil : data
    }

    /// The system's code (`errno`) behind a FileManager error, or 0 when it has none: a
    /// `FileProblem` carries the code, and LocationWords gives `strerror`'s words for it.
    static func systemCode(_ error: any Error) -> Int32 {
        if let error = error as? CocoaError, let posix = error.underlying as? POSIXError { return posix.code.rawValue }
        if let posix = error as? POSIXError { return posix.code.rawValue }
        return 0
    }

    /// The user's home folder from the password database, when `HOME` is not set.
    private static func homeDirectory() -> String {
        guard let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir else { return "/" }
        return String(cString: directory)
    }

    /// Opens `path` only if it is a regular file (created 0600 with `O_CREAT`): never follows a
    /// link, and opens without blocking, so a FIFO or a device planted in a file's place is
    /// refused at once instead of hanging the caller (a FIFO's open waits for a writer). The
    /// descriptor is returned in blocking mode. The one way every store opens its files.
    /// `ENOENT` is `.failure` with `missing` true.
    static func openRegular(_ path: String, flags: Int32) -> Result<Int32, FileProblem> {
        let descriptor = open(path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return .failure(.cannotOpen(path: path, errno: errno)) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(descriptor)
            return .failure(.notRegularFile(path: path))
        }
        _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) & ~O_NONBLOCK)
        return .success(descriptor)
    }

    /// Replaces `url` with `data` atomically (a 0600 temporary file, synced, renamed over it).
    /// Temporary files of `url` that a program which has ended left behind (killed, or exited
    /// while a hung disk held its write) are removed first.
    public static func replace(_ url: URL, with data: Data) throws(FileProblem) {
        let folder = url.deletingLastPathComponent()
        removeAbandoned(of: url.lastPathComponent, in: folder.path)
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UUID().uuidString).tmp")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .cannotWrite(path: temporary.path, errno: errno)
        }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == data.count, synced else {
            unlink(temporary.path)
            throw .incompleteWrite(path: temporary.path)
        }
        guard rename(temporary.path, url.path) == 0 else {
            let code = errno
            unlink(temporary.path)
            throw .cannotReplace(path: url.path, errno: code)
        }
        let folderDescriptor = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }

    /// A temporary file is abandoned when the process that made it has ended and it is older than
    /// this: never one being written now (a process in another PID namespace sharing the folder
    /// could look ended), however slow the disk.
    static let abandonedAge: TimeInterval = 600

    /// Removes `.NAME.PID.UUID.tmp` files in `folder` whose process has ended and which are older
    /// than `abandonedAge`: each program stopped while its write waited for the disk left one,
    /// and a slow disk saw them pile up.
    static func removeAbandoned(of name: String, in folder: String, now: Date = Date()) {
        guard let directory = opendir(folder) else { return }
        defer { closedir(directory) }
        let prefix = "." + name + "."
        while let entry = readdir(directory) {
            let entryName = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            guard entryName.hasPrefix(prefix), entryName.hasSuffix(".tmp") else { continue }
            let parts = entryName.dropFirst(prefix.count).split(separator: ".")
            guard parts.count == 3, let pid = pid_t(parts[0]), pid > 0, pid != getpid() else { continue }
            // Still running (or not ours to signal, EPERM: running as someone else): kept.
            if kill(pid, 0) == 0 || errno != ESRCH { continue }
            let path = folder + "/" + entryName
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, info.st_uid == geteuid(),
                now.timeIntervalSince1970 - Double(info.st_mtim.tv_sec) > abandonedAge
            else { continue }
            unlink(path)
        }
    }
}
