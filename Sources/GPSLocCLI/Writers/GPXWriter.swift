import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// Records locations as a GPX 1.1 track that is a complete, valid document after every point —
/// a reader can open it at any moment, even after the process was killed mid-track.
///
/// Each point is written with one `pwrite` at the position of the closing tags, followed by
/// the closing tags again, so the file on disk always ends with `</trkseg></trk></gpx>`.
public final class GPXWriter: Sendable {
    public let path: String
    private let descriptor: Int32
    /// Written to a stream (stdout, `--gpx -`): points go one after another and the closing tags
    /// come once, at `finish()` — a pipe cannot be written back over.
    private let streaming: Bool
    /// Where the closing tags are, and the segment's state. gpsloc writes from one thread at a
    /// time (its output's lock), so this lock is never contended; it makes the writer Sendable.
    private struct Progress: Sendable {
        var offset: off_t = 0
        var finished = false
        /// Points in the current segment, and whether the next point starts a new one.
        var pointsInSegment = 0
        var segmentBroken = false
    }
    private let progress = Locked(Progress())
    private static let closing = Array("  </trkseg>\n </trk>\n</gpx>\n".utf8)

    public enum WriteError: Error, CustomStringConvertible {
        case cannotOpen(String, String)
        case cannotWrite(String, String)
        public var description: String {
            switch self {
            case .cannotOpen(let path, let why): "cannot create the GPX file \(path): \(why)"
            case .cannotWrite(let path, let why): "cannot write the GPX file \(path): \(why)"
            }
        }
    }

    /// Creates `path` — a new file, mode 0600 (a precise track is nobody else's business) —
    /// and writes an empty track named `name`. An existing file (a recording being replayed, an
    /// earlier track) or a link is never opened: the track goes to a new name or nowhere.
    public init(path: String, name: String, creator: String = "gpsloc (GPSLocation)") throws(WriteError) {
        self.path = path
        streaming = false
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let why =
                errno == EEXIST
                ? "it exists — gpsloc never overwrites a file with a track; choose a new name or remove it first"
                : String(cString: strerror(errno))
            throw .cannotOpen(path, why)
        }
        try write(Array(Self.header(name: name, creator: creator).utf8))
    }

    /// A track written to stdout (`--gpx -`, as gpxlogger writes): whole when `finish()` ran.
    public init(standardOutputNamed name: String, creator: String = "gpsloc (GPSLocation)") {
        path = "standard output"
        streaming = true
        descriptor = STDOUT_FILENO
        try? write(Array(Self.header(name: name, creator: creator).utf8))
    }

    deinit { if !streaming { close(descriptor) } }

    /// Closes a streamed track (its closing tags); a file is closed after every point already.
    public func finish() {
        guard streaming else { return }
        let first = progress.withLock { progress in
            defer { progress.finished = true }
            return !progress.finished
        }
        if first { try? write(Self.closing) }
    }

    /// The fix was lost (as gpxlogger does): the next point starts a new `<trkseg>`, so a track
    /// never draws a straight line through a stretch without a fix. No empty segment is written.
    public func breakSegment() { progress.withLock { $0.segmentBroken = $0.pointsInSegment > 0 } }

    /// Appends one track point (elevation only when the altitude is valid).
    public func append(_ location: LocationValue) throws(WriteError) {
        let newSegment = progress.withLock { progress in
            let broken = progress.segmentBroken
            if broken {
                progress.segmentBroken = false
                progress.pointsInSegment = 0
            }
            progress.pointsInSegment += 1
            return broken
        }
        let point = (newSegment ? "  </trkseg>\n  <trkseg>\n" : "") + Self.point(location)
        try write(Array(point.utf8))
    }

    /// One `<trkpt>` line (elevation only when the altitude is valid).
    static func point(_ location: LocationValue) -> String {
        var point =
            "   <trkpt lat=\"\(fixedDecimal(location.coordinate.latitude, decimals: 9))\" lon=\"\(fixedDecimal(location.coordinate.longitude, decimals: 9))\">"
        if location.verticalAccuracy > 0 { point += "<ele>\(fixedDecimal(location.altitude, decimals: 3))</ele>" }
        point += "<time>\(iso8601Milliseconds(location.timestamp))</time>"
        if let gnss = location.gnss { point += "<fix>\(gnss.fixMode == .threeDimensional ? "3d" : "2d")</fix>" }
        return point + "</trkpt>\n"
    }

    /// A whole GPX 1.1 document of `locations` in one segment (`gpsloc serve`'s `/track.gpx`).
    static func document(name: String, locations: [LocationValue], creator: String = "gpsloc (GPSLocation)") -> [UInt8]
    {
        var bytes = Array(header(name: name, creator: creator).utf8)
        for location in locations { bytes += Array(point(location).utf8) }
        return bytes + closing
    }

    /// Writes `bytes` where the closing tags are, then the closing tags after them. A short
    /// write (a disk filling up, a file size limit) is continued until the system says why it
    /// stops; then the document is closed again where the last whole point ended — the closing
    /// tags go back over bytes that were already the file's, so this needs no new space — and the
    /// cut-off point is dropped: the file stays a valid GPX of every point before it.
    private func write(_ bytes: [UInt8]) throws(WriteError) {
        if streaming {
            if let error = DescriptorWrite.write(bytes, to: descriptor) {
                if error == EPIPE { stdoutFailed(error) }
                throw .cannotWrite(path, String(cString: strerror(error)))
            }
            return
        }
        let offset = progress.withLock { $0.offset }
        let chunk = bytes + Self.closing
        var done = 0
        var failure: Int32?
        chunk.withUnsafeBytes { raw in
            while done < raw.count {
                let written = pwrite(descriptor, raw.baseAddress! + done, raw.count - done, offset + off_t(done))
                if written < 0 && errno == EINTR { continue }
                if written <= 0 {
                    failure = written < 0 ? errno : EIO
                    return
                }
                done += written
            }
        }
        guard let failure else {
            progress.withLock { $0.offset += off_t(bytes.count) }
            return
        }
        let repaired = Self.closing.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, offset) }
        if repaired == Self.closing.count { _ = ftruncate(descriptor, offset + off_t(Self.closing.count)) }
        throw .cannotWrite(path, String(cString: strerror(failure)))
    }

    private static func header(name: String, creator: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <gpx version="1.1" creator="\(Self.escape(creator))" xmlns="http://www.topografix.com/GPX/1/1" \
        xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" \
        xsi:schemaLocation="http://www.topografix.com/GPX/1/1 http://www.topografix.com/GPX/1/1/gpx.xsd">
         <trk>
          <name>\(Self.escape(name))</name>
          <trkseg>

        """
    }

    private static func escape(_ text: String) -> String {
        text.replacing("&", with: "&amp;").replacing("<", with: "&lt;")
            .replacing(">", with: "&gt;").replacing("\"", with: "&quot;")
    }
}
