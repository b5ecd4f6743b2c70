import Foundation
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #33: a FIFO planted where a store keeps its file is refused at once; it never hangs the
/// reader (a FIFO's open waits for a writer that never comes).
///
/// The time limit only catches a hang: Swift Testing starts its clock when a test is queued, and
/// in a full run on two busy cores a test waits its turn behind CPU-heavy ones (a one-minute limit
/// failed CI that way, on tests whose own work takes milliseconds). How fast the refusal is, is
/// measured around the calls themselves.
@Suite("planted FIFOs are refused, not waited on", .timeLimit(.minutes(5)))
struct PlantedFileTests {
    static func privateFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("planted-\(UUID())")
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return folder
    }

    @Test("the helper every store opens with refuses a FIFO, a folder and a link")
    func helperRefuses() throws {
        let folder = try Self.privateFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let fifo = folder.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        for flags in [O_RDONLY, O_RDWR | O_CREAT] {
            guard case .failure(let failure) = PrivateFile.openRegular(fifo, flags: flags) else {
                Issue.record("a FIFO was opened")
                continue
            }
            #expect(failure.description.contains("not a regular file") && !failure.isMissing)
        }
        let link = folder.appendingPathComponent("link").path
        #expect(symlink("/etc/hostname", link) == 0)
        guard case .failure(let linkFailure) = PrivateFile.openRegular(link, flags: O_RDONLY) else {
            Issue.record("a link was followed")
            return
        }
        #expect(linkFailure.description.contains("symbolic link"))
        guard
            case .failure(let missing) = PrivateFile.openRegular(
                folder.appendingPathComponent("none").path, flags: O_RDONLY)
        else { return }
        #expect(missing.isMissing)
    }

    @Test("authorizations.json and a monitor file as FIFOs: an error at once, no hang")
    func storesRefuseFIFOs() throws {
        let folder = try Self.privateFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = DecisionStore(directory: folder, diagnosticsHandler: { _ in })
        #expect(mkfifo(store.fileURL.path, 0o600) == 0)
        let started = ContinuousClock.now
        #expect(store.decision(for: "app") == nil)
        let monitors = MonitorStore(directory: folder)
        let monitorFile = try monitors.file(monitor: "m", app: "app")
        try FileManager.default.createDirectory(
            at: monitorFile.deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        #expect(mkfifo(monitorFile.path, 0o600) == 0)
        #expect(throws: MonitorStore.Failure.self) { try monitors.conditions(monitor: "m", app: "app") }
        // Returning at all is the proof (a blocking open never returns; the time limit bounds
        // that). Three refusals are file-system calls: well under a second even on a busy machine.
        #expect(ContinuousClock.now - started < .seconds(1))
    }
}
