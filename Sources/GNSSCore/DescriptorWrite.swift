#if canImport(Glibc)
    import Glibc
#endif

/// Writing text to a file descriptor without trapping: `FileHandle.write` traps when the write
/// fails (a closed stderr, a reader gone), which turned a diagnostic into a crash (SIGILL).
public enum DescriptorWrite {
    /// Writes all of `text` to `descriptor` (retrying partial writes and EINTR); nil when done,
    /// else the `errno` of the failed write.
    @discardableResult
    public static func write(_ text: String, to descriptor: Int32) -> Int32? {
        write(Array(text.utf8), to: descriptor)
    }

    /// The same for bytes.
    @discardableResult
    public static func write(_ bytes: [UInt8], to descriptor: Int32) -> Int32? {
        bytes.withUnsafeBytes { raw -> Int32? in
            var offset = 0
            while offset < raw.count {
                let written = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return written < 0 ? errno : EIO }
                offset += written
            }
            return nil
        }
    }
}
