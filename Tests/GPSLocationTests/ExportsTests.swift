import Foundation
import TestSupport
import Testing

/// #50: what `import GPSLocation` shows an app: the CoreLocation names, the receiver's data types
/// and the core's API — not the library's plumbing (its locks, threads, pipes and text helpers).
/// An app that imports GPSLocation and a module of its own declaring `Locked`, `PlainLock`,
/// `WorkerThread` and `WakePipe` uses its own and still names `Fix`, `SkyView` and
/// `CLLocationManager`; without such a module those names do not exist for it.
@Suite("import GPSLocation does not bring the library's plumbing")
struct ExportsTests {
    @Test("an app's own Locked, PlainLock, WorkerThread and WakePipe beside import GPSLocation")
    func appsOwnNames() async throws {
        let root = Paths.packageRoot
        let swiftc = "/opt/swift/usr/bin/swiftc"
        guard FileManager.default.isExecutableFile(atPath: swiftc) else { return }
        let modules = root.appendingPathComponent(".build/debug/Modules")
        let pseudoTerminal = try #require(
            FileManager.default.enumerator(atPath: root.appendingPathComponent(".build").path)?
                .compactMap { $0 as? String }
                .first { $0.hasSuffix("debug/CPseudoTerminal.build/module.modulemap") })
        let timerFD = try #require(
            FileManager.default.enumerator(atPath: root.appendingPathComponent(".build").path)?
                .compactMap { $0 as? String }
                .first { $0.hasSuffix("debug/CTimerFD.build/module.modulemap") })
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("exports-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let utilities = folder.appendingPathComponent("AppUtils.swift")
        try """
        public final class Locked { public init() {} }
        public final class PlainLock { public init() {} }
        public struct WorkerThread { public init() {} }
        public final class WakePipe { public init() {} }
        """.write(to: utilities, atomically: true, encoding: .utf8)
        let made = try await runProgram(
            swiftc,
            [
                "-emit-module", "-module-name", "AppUtils", "-swift-version", "6", "-emit-module-path",
                folder.appendingPathComponent("AppUtils.swiftmodule").path, utilities.path,
            ], mergeErrors: true)
        #expect(made.status == 0, "\(made.stdout)")
        let app = folder.appendingPathComponent("main.swift")
        try """
        import AppUtils
        import GPSLocation

        let mine = (Locked(), PlainLock(), WorkerThread(), WakePipe())
        let fix = Fix(mode: .threeDimensional, time: Date(), latitude: 51.45, longitude: -2.59)
        let sky: SkyView? = nil
        let manager = CLLocationManager()
        print(mine, fix, sky as Any, manager.distanceFilter, kCLDistanceFilterNone, CLError.Code.denied)
        """.write(to: app, atomically: true, encoding: .utf8)
        let checked = try await runProgram(
            swiftc,
            [
                "-typecheck", "-swift-version", "6", "-I", modules.path, "-I", folder.path, "-Xcc",
                "-fmodule-map-file=" + root.appendingPathComponent("Sources/CGPS/module.modulemap").path, "-Xcc",
                "-fmodule-map-file=" + root.appendingPathComponent(".build/\(pseudoTerminal)").path, "-Xcc", "-I",
                "-Xcc", root.appendingPathComponent("Sources/CPseudoTerminal/include").path, "-Xcc",
                "-fmodule-map-file=" + root.appendingPathComponent(".build/\(timerFD)").path, "-Xcc", "-I",
                "-Xcc", root.appendingPathComponent("Sources/CTimerFD/include").path, app.path,
            ], mergeErrors: true)
        #expect(checked.status == 0, "\(checked.stdout.prefix(1500))")

        // The plumbing is not part of what `import GPSLocation` brings.
        let bare = folder.appendingPathComponent("bare.swift")
        try "import GPSLocation\nlet lock = PlainLock()\nlet cell = Locked(0)\n".write(
            to: bare, atomically: true, encoding: .utf8)
        let refused = try await runProgram(
            swiftc,
            [
                "-typecheck", "-swift-version", "6", "-I", modules.path, "-Xcc",
                "-fmodule-map-file=" + root.appendingPathComponent("Sources/CGPS/module.modulemap").path, "-Xcc",
                "-fmodule-map-file=" + root.appendingPathComponent(".build/\(pseudoTerminal)").path, "-Xcc", "-I",
                "-Xcc", root.appendingPathComponent("Sources/CPseudoTerminal/include").path, "-Xcc",
                "-fmodule-map-file=" + root.appendingPathComponent(".build/\(timerFD)").path, "-Xcc", "-I",
                "-Xcc", root.appendingPathComponent("Sources/CTimerFD/include").path, bare.path,
            ], mergeErrors: true)
        #expect(refused.status != 0 && refused.stdout.contains("cannot find 'PlainLock' in scope"), "\(refused.stdout)")
    }
}
