import FoundationEssentials
import Glibc

/// The one check for a file the package reads to make a decision (the policy first; README,
/// "Authorization on Linux"): it and its folder must be owned by root or the user running, and
/// writable by no one else; the file must be a regular file — not a link, a FIFO or a device —
/// of at most `maximumSize` bytes. Anything else is refused with the command that fixes it.
enum TrustedFile {
    /// nil when `path` may be trusted; else what is wrong and how to fix it. A missing file is
    /// not checked here (the caller decides what a missing file means).
    static func problem(_ path: String, maximumSize: Int, administrator: Bool) -> String? {
        let sudo = administrator ? "sudo " : ""
        let owner = administrator ? "root:" : "$(id -u)"
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        let type = info.st_mode & S_IFMT
        if type == S_IFLNK {
            return "\(path) is a symbolic link — only a regular file is trusted: replace the link with the file itself"
        }
        guard type == S_IFREG else {
            return "\(path) is not a regular file (a FIFO, device or folder) — replace it with a regular file"
        }
        if let problem = ownership(
            info, of: path, what: "file", fix: "\(sudo)chown \(owner) \(path) && \(sudo)chmod 644 \(path)")
        {
            return problem
        }
        guard info.st_size <= maximumSize else {
            return "\(path) is \(info.st_size) bytes, more than the \(maximumSize) allowed — it is not read"
        }
        let folder = Self.folder(of: path)
        var folderInfo = stat()
        guard stat(folder.isEmpty ? "." : folder, &folderInfo) == 0 else {
            return "the folder of \(path) cannot be examined (\(String(cString: strerror(errno))))"
        }
        return ownership(
            folderInfo, of: folder, what: "folder", fix: "\(sudo)chown \(owner) \(folder) && \(sudo)chmod 755 \(folder)"
        )
    }

    /// Owned by root or the user running, writable by neither group nor others.
    private static func ownership(_ info: stat, of path: String, what: String, fix: String) -> String? {
        let owned = info.st_uid == 0 || info.st_uid == geteuid()
        guard owned, info.st_mode & 0o022 == 0 else {
            return
                "the \(what) \(path) is owned by uid \(info.st_uid) with mode \(String(info.st_mode & 0o777, radix: 8)): "
                + "another user could have changed it, so it is not trusted — run `\(fix)`"
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
