import Dispatch
import Foundation

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
