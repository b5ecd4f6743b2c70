import Foundation

/// Replacing a private file whole: the data goes to a fresh temporary name beside it, opened
/// with `O_EXCL|O_NOFOLLOW` and mode 0600 (never a planted file or link), is synced, renamed
/// over the file, and the folder synced — a reader sees the old file or the new one, never a
/// part. Used by the decision store and the last-location cache.
package enum PrivateFile {
    /// Why a replacement failed, in words that name the file.
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package static func replace(_ url: URL, with data: Data) throws(Failure) {
        let folder = url.deletingLastPathComponent()
        let temporary = folder.appendingPathComponent(".\(url.lastPathComponent).\(getpid()).\(UUID().uuidString).tmp")
        let descriptor = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw Failure(description: "cannot write \(temporary.path): \(String(cString: strerror(errno)))")
        }
        let written = data.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        let synced = fsync(descriptor) == 0
        close(descriptor)
        guard written == data.count, synced else {
            unlink(temporary.path)
            throw Failure(description: "could not write all of \(temporary.path) (disk full?)")
        }
        guard rename(temporary.path, url.path) == 0 else {
            let why = String(cString: strerror(errno))
            unlink(temporary.path)
            throw Failure(description: "cannot replace \(url.path): \(why)")
        }
        let folderDescriptor = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderDescriptor >= 0 {
            fsync(folderDescriptor)
            close(folderDescriptor)
        }
    }
}
