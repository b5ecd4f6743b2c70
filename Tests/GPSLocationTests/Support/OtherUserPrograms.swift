import Foundation
import TestSupport

/// The built programs a test runs as another user (nobody, gpslocd's uid, an app's uid), copied
/// where that user can reach them. A checkout under `/root`, in a Debian 12 home (0700), in
/// `mktemp -d` or behind any folder others cannot enter holds programs only its owner can run:
/// `setpriv --reuid=65534 .build/debug/geofenced` fails there with "Permission denied" (#48).
/// So each test copies what it runs into a folder of its own under the temporary folder (0755,
/// programs 0755) and removes it when done: the same path whether the checkout is private or not.
struct OtherUserPrograms {
    let folder: URL

    /// Copies each of `names` (built in `.build/debug`) into a fresh folder every user can enter.
    init(_ names: [String]) throws {
        let base = Self.reachableTemporaryFolder
        folder = base.appendingPathComponent("gpslocation-programs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        guard chmod(folder.path, 0o755) == 0 else {
            throw OtherUserError("could not open \(folder.path) to other users (chmod 755 failed: errno \(errno))")
        }
        for name in names {
            let source = Paths.packageRoot.appendingPathComponent(".build/debug/\(name)")
            let copy = folder.appendingPathComponent(name)
            // Copied by cp, not in this process: a file this process held open for writing would
            // be inherited by every child another test spawns meanwhile, and exec of the copy
            // fails with "Text file busy" (ETXTBSY) until that child has exec'd (seen with both
            // cores busy).
            let cp = Process()
            cp.executableURL = URL(fileURLWithPath: "/bin/cp")
            cp.arguments = [source.path, copy.path]
            try cp.run()
            cp.waitUntilExit()
            guard cp.terminationStatus == 0 else {
                throw OtherUserError("cp \(source.path) \(copy.path) failed (status \(cp.terminationStatus))")
            }
            guard chmod(copy.path, 0o755) == 0 else {
                throw OtherUserError("could not make \(copy.path) executable by other users (errno \(errno))")
            }
        }
    }

    /// The copy of `name`.
    func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    func remove() { try? FileManager.default.removeItem(at: folder) }

    /// The temporary folder when every folder down to it lets others in (search permission), else
    /// `/tmp` (a private `TMPDIR`, as some logins set, would hide the copies again).
    static var reachableTemporaryFolder: URL {
        let temporary = FileManager.default.temporaryDirectory
        return reachableByOthers(temporary.path) ? temporary : URL(fileURLWithPath: "/tmp")
    }

    /// Every folder from `/` down to `path` (included) can be entered by a user who is neither its
    /// owner nor in its group (the bit `x` for others).
    static func reachableByOthers(_ path: String) -> Bool {
        var current = URL(fileURLWithPath: path).standardizedFileURL
        while true {
            var status = stat()
            guard stat(current.path, &status) == 0, status.st_mode & S_IXOTH != 0 else { return false }
            if current.path == "/" { return true }
            current.deleteLastPathComponent()
        }
    }

    /// Where the Swift runtime this test process loaded lives, when another user cannot load it
    /// from there (a toolchain unpacked in a private home): the debug programs link it
    /// dynamically, so as another user they cannot start. nil when it is reachable (or unknown).
    static let unreachableToolchain: String? = {
        guard let maps = try? String(contentsOfFile: "/proc/self/maps", encoding: .utf8),
            let line = maps.split(separator: "\n").first(where: { $0.hasSuffix("/libswiftCore.so") }),
            let start = line.firstIndex(of: "/")
        else { return nil }
        let folder = URL(fileURLWithPath: String(line[start...])).deletingLastPathComponent().path
        return reachableByOthers(folder) ? nil : folder
    }()

    /// Whether tests that run the debug programs as another user can: they need root (to switch
    /// user) and a Swift runtime others can load.
    static let canRunAsOtherUser = geteuid() == 0 && unreachableToolchain == nil
    static var cannotRunAsOtherUserReason: String {
        if geteuid() != 0 { return "switching to another uid needs root (CI runs as root)" }
        return "the Swift runtime in \(unreachableToolchain ?? "?") cannot be loaded by other users "
            + "(a toolchain in a private folder): install it where others can read it, e.g. /opt/swift"
    }
}

struct OtherUserError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
