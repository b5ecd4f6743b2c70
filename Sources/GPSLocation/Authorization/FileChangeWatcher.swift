import Foundation

/// Watches files with inotify and calls `onChange` (on a private queue) when any changes —
/// written, replaced by rename, created or deleted. No polling: the queue sleeps until the
/// kernel reports an event.
package final class FileChangeWatcher: @unchecked Sendable {
    // @unchecked Sendable: `source` is set once in init and only cancelled after.
    private let descriptor: Int32
    private let source: any DispatchSourceRead
    private let names: Set<String>

    /// Watches the folders of `paths` and reports changes to those file names.
    package init?(paths: [String], onChange: @escaping @Sendable () -> Void) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        descriptor = fd
        names = Set(paths.map { URL(fileURLWithPath: $0).lastPathComponent })
        var watched = 0
        for folder in Set(paths.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }) {
            let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM)
            if inotify_add_watch(fd, folder, mask) >= 0 { watched += 1 }
        }
        guard watched > 0 else {
            close(fd)
            return nil
        }
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "gpslocation.filewatch"))
        let names = self.names
        source.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 4096)
            var relevant = false
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                var offset = 0
                while offset + MemoryLayout<inotify_event>.size <= count {
                    let (length, name) = buffer.withUnsafeBytes { raw -> (Int, String) in
                        let event = raw.load(fromByteOffset: offset, as: inotify_event.self)
                        let nameStart = offset + MemoryLayout<inotify_event>.size
                        let bytes = raw[nameStart..<min(count, nameStart + Int(event.len))].prefix { $0 != 0 }
                        return (Int(event.len), String(decoding: bytes, as: UTF8.self))
                    }
                    if names.contains(name) { relevant = true }
                    offset += MemoryLayout<inotify_event>.size + length
                }
            }
            if relevant { onChange() }
        }
        source.setCancelHandler { close(fd) }
        source.resume()
    }

    deinit { source.cancel() }
}
