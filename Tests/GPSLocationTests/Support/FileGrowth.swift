import Dispatch
import Foundation

@testable import GPSLocation
@testable import LocationCore

/// Counts the writes to one file, from inotify's `IN_MODIFY` events: a test waits for a file to
/// be written to (a terminal's output copied there) without reading it on a timer.
final class FileGrowth: @unchecked Sendable {
    // @unchecked Sendable: the descriptor and source are set once in init, cancelled in deinit.
    let writes = EventCounter()
    private let descriptor: Int32
    private let source: any DispatchSourceRead

    /// Watches `path`, which must exist; nil when inotify is not available.
    init?(path: String) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        guard inotify_add_watch(fd, path, UInt32(IN_MODIFY)) >= 0 else {
            close(fd)
            return nil
        }
        descriptor = fd
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "test.file-growth"))
        let writes = writes
        source.setEventHandler {
            // Drain the events; each read is news of at least one write.
            var buffer = [UInt8](repeating: 0, count: 4096)
            while read(fd, &buffer, buffer.count) > 0 {}
            writes.increment()
        }
        source.setCancelHandler { close(fd) }
        source.resume()
    }

    deinit { source.cancel() }
}

/// Suspends until `condition` holds of the text of `url` — read again after each write to it
/// (a child's output file, a log), never on a timer; false if it still does not after `timeout`
/// seconds. A file not there yet is created empty, so a child that opens it later (truncating
/// it) writes to the file watched.
func fileText(_ url: URL, timeout: Double = 60, until condition: @escaping @Sendable (String) -> Bool) async -> Bool {
    if !FileManager.default.fileExists(atPath: url.path) {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
    }
    guard let growth = FileGrowth(path: url.path) else { return false }
    let result = await growth.writes.wait(hangLimit: timeout) { _ in
        condition((try? String(contentsOf: url, encoding: .utf8)) ?? "")
    }
    withExtendedLifetime(growth) {}
    return result
}

/// Suspends until `condition` holds, re-checked each time the file at `url` is written whole or
/// replaced (a store's atomic rename: inotify on its folder, `FileChangeWatcher`), never on a
/// timer; false if it still does not hold after `timeout` seconds.
func whenReplaced(_ url: URL, timeout: Double = 60, until condition: @escaping @Sendable () -> Bool) async -> Bool {
    let changes = EventCounter()
    let watcher = FileChangeWatcher(paths: [url.path]) { changes.increment() }
    let result = await changes.wait(hangLimit: timeout) { _ in condition() }
    withExtendedLifetime(watcher) {}
    return result
}
