import Foundation
import TestSupport
import Testing

/// #33: `--gpx` when the disk fills up: the track stays a valid GPX of every point before the
/// failure, the message has the system's reason (not "Success"), and the command exits 1.
@Suite(
    "--gpx on a full disk",
    .enabled(if: FileManager.default.isExecutableFile(atPath: GPSLocBinary.path), "build gpsloc first"),
    .timeLimit(.minutes(5)))
struct GPXFullDiskTests {
    /// Replays a drive into `track` under `limit` (a shell prefix that makes writes fail part
    /// way), then checks what a user would: the exit status, the message, and the file.
    static func check(track: String, reason: String, _ command: String) async throws {
        let fixture = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
        let result = try await runProgram(
            "/bin/bash",
            [
                "-c",
                command.replacingOccurrences(
                    of: "GPSLOC_RUN", with: #""$GPSLOC" replay "$FIXTURE" --fast --json --gpx "$TRACK""#),
            ],
            // Paths as variables, never spliced into the command (a checkout path may have spaces).
            environment: ProcessInfo.processInfo.environment.merging([
                "GPSLOC": GPSLocBinary.path, "FIXTURE": fixture, "TRACK": track,
            ]) { $1 })
        #expect(result.status == 1, "a track that could not be written is a failure: \(result.stderr)")
        let messages = result.stdout.split(separator: "\n").filter { $0.contains(#""code":"gpx""#) }
        #expect(messages.count == 1, "said once: \(messages)")
        #expect(messages.first?.contains(reason) == true, "the system's reason: \(messages)")
        #expect(messages.first?.contains("Success") == false)
        let lint = try await runProgram("/usr/bin/xmllint", ["--noout", track])
        #expect(lint.status == 0, "still a valid GPX: \(lint.stderr)")
        let text = try String(contentsOfFile: track, encoding: .utf8)
        let points = text.components(separatedBy: "<trkpt").count - 1
        #expect(points > 10, "the points before the failure are kept (\(points))")
        #expect(text.hasSuffix("</gpx>\n"))
    }

    @Test("a file size limit (RLIMIT_FSIZE): short write, then EFBIG — the GPX is closed after the last whole point")
    func fileSizeLimit() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gpx-limit-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let track = folder.appendingPathComponent("track.gpx").path
        // 4 KiB: the limit falls inside a point, as a filling disk does. Only gpsloc has the
        // limit; its output goes through a pipe (a pipe has no size limit).
        try await Self.check(
            track: track, reason: String(cString: strerror(EFBIG)),
            "set -o pipefail; (trap '' XFSZ; ulimit -f 4; exec GPSLOC_RUN) | cat")
    }

    @Test(
        "a real full disk (an 8 KiB tmpfs in a private mount namespace): ENOSPC, a valid GPX",
        .enabled(if: geteuid() == 0, "mounting a tmpfs needs root (CI runs as root)"))
    func fullTmpfs() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("gpx-full-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // The mount lives in the namespace of one `unshare`; the file is copied out before it ends.
        let inside = folder.appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: inside, withIntermediateDirectories: true)
        let track = inside.appendingPathComponent("track.gpx").path
        let copy = folder.appendingPathComponent("track.gpx").path
        let fixture = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
        let result = try await runProgram(
            "/usr/bin/unshare",
            [
                "-m", "/bin/bash", "-c",
                #"mount -t tmpfs -o size=8k tmpfs "$INSIDE" || exit 99; "$GPSLOC" replay "$FIXTURE" --fast --json "#
                    + #"--gpx "$TRACK"; status=$?; cp "$TRACK" "$COPY"; exit $status"#,
            ],
            environment: ProcessInfo.processInfo.environment.merging([
                "GPSLOC": GPSLocBinary.path, "FIXTURE": fixture, "TRACK": track, "INSIDE": inside.path, "COPY": copy,
            ]) { $1 })
        try #require(result.status != 99, "tmpfs could not be mounted: \(result.stderr)")
        #expect(result.status == 1)
        let messages = result.stdout.split(separator: "\n").filter { $0.contains(#""code":"gpx""#) }
        #expect(
            messages.count == 1 && messages.first?.contains(String(cString: strerror(ENOSPC))) == true, "\(messages)")
        #expect(try await runProgram("/usr/bin/xmllint", ["--noout", copy]).status == 0)
    }
}
