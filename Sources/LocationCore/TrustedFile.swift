import FoundationEssentials
import Glibc

/// The one check for a file the package reads to make a decision (the policy first; README,
/// "Authorization on Linux"): it and its folder must be owned by root or the user running, and
/// writable by no one else; the file must be a regular file — not a link, a FIFO or a device —
/// of at most `maximumSize` bytes. Anything else is refused (its words name the fix).
enum TrustedFile {
    /// nil when `path` may be trusted; else what is wrong. A missing file is not checked here
    /// (the caller decides what a missing file means).
    static func problem(_ path: String, maximumSize: Int, administrator: Bool) -> FileProblem? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        let type = info.st_mode & S_IFMT
        if type == S_IFLNK { return .linkNotTrusted(path: path) }
        guard type == S_IFREG else { return .typeNotTrusted(path: path) }
        if let problem = ownership(info, of: path, isFolder: false, administrator: administrator) { return problem }
        guard info.st_size <= maximumSize else {
            return .tooLarge(path: path, size: Int(info.st_size), maximum: maximumSize)
        }
        let folder = Self.folder(of: path)
        var folderInfo = stat()
        guard stat(folder.isEmpty ? "." : folder, &folderInfo) == 0 else {
            return .folderUnexaminable(path: path, errno: errno)
        }
        return ownership(folderInfo, of: folder, isFolder: true, administrator: administrator)
    }

    /// Owned by root or the user running, writable by neither group nor others.
    private static func ownership(_ info: stat, of path: String, isFolder: Bool, administrator: Bool) -> FileProblem? {
        let owned = info.st_uid == 0 || info.st_uid == geteuid()
        guard owned, info.st_mode & 0o022 == 0 else {
            return .ownerNotTrusted(
                path: path, isFolder: isFolder, uid: info.st_uid, mode: info.st_mode & 0o777,
                administrator: administrator)
        }
        return nil
    }

    /// The folder part of `path` ("/etc/x" → "/etc", "/x" → "/", "x" → "").
    static func folder(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "" }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }
}
