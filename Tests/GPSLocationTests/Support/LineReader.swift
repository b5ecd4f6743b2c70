import Foundation
import GPSLocationTesting

/// Collects a pipe's lines with the time each arrived.
final class LineReader: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [(time: Date, text: String)] = []
    private var partial = ""
    private let done = ExitLatch()
    private let changes = ChangeWaiters()

    /// Reads `handle` to its end on a thread of its own (not a concurrency thread); every new
    /// line wakes the waits whose condition it makes true.
    convenience init(_ handle: FileHandle) {
        self.init { handle.availableData }
    }

    /// Reads a socket (or any descriptor) to its end, or its first error (a reset connection
    /// ends the lines; `FileHandle` would stop the process), then closes it.
    convenience init(descriptor: Int32) {
        self.init {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                if count <= 0 {
                    close(descriptor)
                    return Data()
                }
                return Data(buffer[..<count])
            }
        }
    }

    /// Reads what `next` returns (empty: the end) on a thread of its own.
    private init(next: @escaping @Sendable () -> Data) {
        Thread.detachNewThread { [self] in
            while true {
                let data = next()
                if data.isEmpty { break }
                let now = Date()
                lock.withLock {
                    partial += String(decoding: data, as: UTF8.self)
                    // By scalar: a terminal's "\r\n" is one Character, which "\n" never equals.
                    while let newline = partial.unicodeScalars.firstIndex(of: "\n") {
                        lines.append((now, String(partial.unicodeScalars[..<newline])))
                        partial = String(partial.unicodeScalars[partial.unicodeScalars.index(after: newline)...])
                    }
                }
                changes.changed()
            }
            done.finish(0)
            changes.end()
        }
    }

    /// Suspends until `condition` holds of the lines so far (true), or the output ends or
    /// `timeout` seconds pass without it (false; the bound only ends a hang).
    func waitFor(timeout: Double, _ condition: @escaping @Sendable ([(time: Date, text: String)]) -> Bool) async -> Bool
    {
        await changes.wait(hangLimit: timeout) { [self] in lock.withLock { condition(lines) } }
    }

    /// The lines so far.
    var snapshot: [(time: Date, text: String)] { lock.withLock { lines } }

    /// Every line, once the output has ended.
    func finish() async -> [(time: Date, text: String)] {
        await done.wait()
        return lock.withLock { lines }
    }
}
