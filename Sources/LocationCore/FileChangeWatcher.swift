import Dispatch
import FoundationEssentials
import GNSSCore
import Glibc

/// Watches files with inotify and calls `onChange` (on a private queue) when any changes —
/// written, replaced by rename, created or deleted. No polling: the queue sleeps until the
/// kernel reports an event.
///
/// It follows the *paths*, not the folders that exist when it starts: a folder that does not
/// exist yet (`/etc/gpslocation` on a fresh machine) is waited for by watching its nearest
/// existing ancestor, and a folder that is deleted, moved away or replaced is watched again
/// where it now is. Each time the watched folders change, `onChange` is called too (a file may
/// have come with its folder). When a folder cannot be watched any more (inotify's watch limit),
/// `onFailure` says so once — the caller then fails closed.
public final class FileChangeWatcher: Sendable {
    private let descriptor: Int32
    private let names: Set<String>
    /// The folders of the watched paths.
    private let targets: [String]
    let queue = DispatchQueue(label: "gpslocation.filewatch")
    /// What changes: touched on `queue` (and in init, before the source starts), so the lock is
    /// never contended; it lets the compiler check the sharing.
    private struct State: Sendable {
        /// Watch descriptor → the folder it watches.
        var watches: [Int32: String] = [:]
        var failed = false
        var source: DispatchSource?
    }
    private let state = Locked(State())
    private let onChange: @Sendable () -> Void
    private let onFailure: @Sendable (FileProblem) -> Void

    /// Watches the folders of `paths` (or their nearest existing ancestors) and reports changes
    /// to those file names.
    public init?(
        paths: [String], onFailure: @escaping @Sendable (FileProblem) -> Void = { _ in },
        onChange: @escaping @Sendable () -> Void
    ) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        descriptor = fd
        names = Set(paths.map { URL(fileURLWithPath: $0).lastPathComponent })
        targets = Array(Set(paths.map { URL(fileURLWithPath: $0).deletingLastPathComponent().standardized.path }))
            .sorted()
        self.onChange = onChange
        self.onFailure = onFailure
        guard arm() else {
            close(fd)
            return nil
        }
        let source = DispatchSource.sendable(DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue))
        source.setEventHandler { [weak self] in self?.drain() }
        source.setCancelHandler { close(fd) }
        state.withLock { $0.source = source }
        source.resume()
    }

    deinit { state.withLock { $0.source }?.cancel() }

    /// (Re)places the watches: each target folder if it exists, else its nearest existing
    /// ancestor. False when nothing at all could be watched.
    ///
    /// A folder created between looking for it and watching its parent would never be reported
    /// (its creation happened before the watch), so after watching, the folders are looked for
    /// again and the watches placed again until they agree with what exists.
    @discardableResult
    private func arm() -> Bool {
        for _ in 0..<16 {
            let wanted = place()
            if wanted == watchedFolders() { break }
        }
        return !watchedNow.isEmpty
    }

    /// The folders watched now.
    private var watchedNow: Set<String> { Set(state.withLock { $0.watches.values }) }

    /// The folder to watch for each target: the target itself or its nearest existing ancestor.
    private func wantedFolders() -> [(folder: String, isTarget: Bool)] {
        targets.map { target in
            var folder = target
            var isTarget = true
            while !FileManager.default.fileExists(atPath: folder) && folder != "/" {
                folder = URL(fileURLWithPath: folder).deletingLastPathComponent().path
                isTarget = false
            }
            return (folder, isTarget)
        }
    }

    /// What should be watched now, looked up afresh after the watches were placed.
    private func watchedFolders() -> Set<String> { Set(wantedFolders().map(\.folder)) }

    /// Removes every watch and places one per wanted folder; returns the set of watched folders.
    private func place() -> Set<String> {
        let old = state.withLock { state in
            defer { state.watches.removeAll() }
            return Array(state.watches.keys)
        }
        for wd in old { inotify_rm_watch(descriptor, wd) }
        var watches: [Int32: String] = [:]
        var problem: FileProblem?
        for (folder, isTarget) in wantedFolders() {
            let selfEvents = UInt32(IN_DELETE_SELF | IN_MOVE_SELF)
            let mask =
                isTarget
                ? UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM) | selfEvents
                : UInt32(IN_CREATE | IN_MOVED_TO) | selfEvents
            let wd = inotify_add_watch(descriptor, folder, mask)
            if wd >= 0 {
                watches[wd] = folder
            } else {
                problem = .cannotWatch(folder: folder, errno: errno)
            }
        }
        let firstProblem = state.withLock { state -> FileProblem? in
            state.watches = watches
            guard let problem, !state.failed else { return nil }
            state.failed = true
            return problem
        }
        if let firstProblem { onFailure(firstProblem) }
        return Set(watches.values)
    }

    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var relevant = false
        var rearm = false
        var folderWent = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            var offset = 0
            while offset + MemoryLayout<inotify_event>.size <= count {
                let (length, wd, mask, name) = buffer.withUnsafeBytes { raw -> (Int, Int32, UInt32, String) in
                    let event = raw.load(fromByteOffset: offset, as: inotify_event.self)
                    let nameStart = offset + MemoryLayout<inotify_event>.size
                    let bytes = raw[nameStart..<min(count, nameStart + Int(event.len))].prefix { $0 != 0 }
                    return (Int(event.len), event.wd, event.mask, String(decoding: bytes, as: UTF8.self))
                }
                offset += MemoryLayout<inotify_event>.size + length
                // Events of watches removed by `arm` (their IN_IGNORED) belong to no folder now.
                guard let folder = state.withLock({ $0.watches[wd] }) else { continue }
                if mask & UInt32(IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED) != 0 {
                    rearm = true  // the folder itself went: follow the path again
                    folderWent = true
                } else if targets.contains(folder) {
                    if names.contains(name) { relevant = true }
                } else if mask & UInt32(IN_ISDIR) != 0 || mask & UInt32(IN_CREATE | IN_MOVED_TO) != 0 {
                    rearm = true  // a folder on the way to a target appeared
                }
            }
        }
        if rearm {
            let before = watchedNow
            arm()
            // A folder that went may have been replaced by one holding a different file.
            if folderWent || watchedNow != before { relevant = true }
        }
        if relevant { onChange() }
    }
}
