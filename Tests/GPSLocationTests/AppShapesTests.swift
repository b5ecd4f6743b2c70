import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

extension RealGPSD.LaneD {
    /// #31: `Examples/AppShapes`, app-shaped code as Swift 6 apps are written for Apple platforms,
    /// run as its own process against a real gpsd reading a receiver: a `@MainActor` model on the
    /// main run loop and under `dispatchMain()`, an async wrapper that sets its delegate before
    /// its own set-up ends, a manager made in a worker thread's run loop, a main thread that never
    /// runs its loop, and subclasses. A callback on the wrong thread traps in the Swift runtime's
    /// isolation check (SIGILL), so a run that exits 0 with its lines is the proof.
    @Suite(
        "app-shaped programs: callbacks where Apple makes them",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason), .timeLimit(.minutes(5)))
    struct AppShapesTests {
        static let program = Paths.packageRoot.appendingPathComponent(".build/debug/app-shapes").path

        /// A receiver behind a real gpsd, and a decision store that grants app-shapes Always.
        /// @unchecked Sendable: set once in init, then only read.
        final class Setup: @unchecked Sendable {
            let receiver: GPSDOnPseudoTerminal
            let folder: URL
            init() async throws {
                receiver = try GPSDOnPseudoTerminal(fixture: "clean-1hz-multi.nmea", interval: 0.02, loop: true)
                folder = try GPSLocBinary.makeConfigHome()
                let grant = try await GPSLocBinary.run(["auth", "grant", "app-shapes", "--always"], configHome: folder)
                #expect(grant.status == 0, "\(grant.stderr)")
            }
            func stop() {
                receiver.stop()
                try? FileManager.default.removeItem(at: folder)
            }
            var environment: [String: String] {
                var environment = ProcessInfo.processInfo.environment
                environment["XDG_CONFIG_HOME"] = folder.path
                environment["XDG_CACHE_HOME"] = folder.appendingPathComponent("cache").path
                environment["XDG_STATE_HOME"] = folder.appendingPathComponent("state").path
                environment["GPSLOCATION_POLICY"] = folder.appendingPathComponent("policy.json").path
                environment["GPSLOCATION_GPSD"] = "127.0.0.1:\(receiver.server.endpoint.port)"
                return environment
            }
        }

        /// Runs app-shapes `mode` to its end (or until `stderrSays` appears on its stderr, then
        /// ends it), waiting off the concurrency threads; a run still going after 60 s is ended
        /// (and fails: it then ends by a signal).
        static func run(_ mode: String, _ setup: Setup, stderrSays: String? = nil) async throws -> (
            status: Int32, signaled: Bool, stdout: [String], stderr: String
        ) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: program)
            process.arguments = [mode]
            process.environment = setup.environment
            process.standardInput = FileHandle.nullDevice
            let out = Pipe()
            let err = Pipe()
            process.standardOutput = out
            process.standardError = err
            let child = RunningProgram(process)
            try child.start()
            let output = LineReader(out.fileHandleForReading)
            let errors = LineReader(err.fileHandleForReading)
            // SIGKILL: a child spawned from a dispatch worker inherits its blocked signals, so
            // SIGTERM may never arrive.
            let watchdog = DispatchWorkItem { child.kill(SIGKILL) }
            DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)
            if let stderrSays {
                _ = await errors.waitFor(timeout: 60) { $0.contains { $0.text.contains(stderrSays) } }
                child.kill(SIGKILL)
            }
            let stdout = await output.finish().map(\.text)
            await child.exited()
            watchdog.cancel()
            let stderr = await errors.finish().map(\.text).joined(separator: "\n")
            return (process.terminationStatus, process.terminationReason == .uncaughtSignal, stdout, stderr)
        }

        /// `count` runs of `mode`, four at a time (each waits on its own process).
        static func runs(_ mode: String, _ setup: Setup, count: Int) async throws -> [(
            status: Int32, signaled: Bool, stdout: [String], stderr: String
        )] {
            var results: [(status: Int32, signaled: Bool, stdout: [String], stderr: String)] = []
            for batch in stride(from: 0, to: count, by: 4) {
                try await withThrowingTaskGroup(
                    of: (status: Int32, signaled: Bool, stdout: [String], stderr: String).self
                ) {
                    group in
                    for _ in batch..<min(count, batch + 4) { group.addTask { try await Self.run(mode, setup) } }
                    for try await result in group { results.append(result) }
                }
            }
            return results
        }

        @Test(
            "a @MainActor model on the main run loop (20 runs) and under dispatchMain(): every callback on the main actor"
        )
        func mainActorModel() async throws {
            let setup = try await Setup()
            defer { setup.stop() }
            for (mode, count) in [("main-runloop", 20), ("dispatch-main", 8)] {
                for (run, result) in try await Self.runs(mode, setup, count: count).enumerated() {
                    #expect(
                        result.status == 0 && !result.signaled, "\(mode) run \(run): \(result.stdout) \(result.stderr)")
                    #expect(result.stdout.filter { $0.hasPrefix("location") }.count == 3, "\(mode) run \(run)")
                    #expect(result.stdout.first?.hasPrefix("authorization 3 main=true") == true, "\(result.stdout)")
                    #expect(
                        result.stdout.allSatisfy { $0.contains("main=true") }, "\(mode) run \(run): \(result.stdout)")
                }
            }
        }

        @Test("an async wrapper that sets its delegate during its own set-up: 20 runs, no crash, three locations")
        func asyncWrapper() async throws {
            let setup = try await Setup()
            defer { setup.stop() }
            for (run, result) in try await Self.runs("async-wrapper", setup, count: 20).enumerated() {
                #expect(result.status == 0 && !result.signaled, "run \(run): \(result.stdout) \(result.stderr)")
                #expect(result.stdout.filter { $0.hasPrefix("location main=true 51.") }.count == 3, "\(result.stdout)")
            }
        }

        @Test("a manager made inside a worker thread's run loop is called on that thread")
        func workerRunLoop() async throws {
            let setup = try await Setup()
            defer { setup.stop() }
            let result = try await Self.run("thread-runloop", setup)
            #expect(result.status == 0, "\(result.stdout) \(result.stderr)")
            #expect(result.stdout.filter { $0.hasPrefix("location worker=true") }.count == 3, "\(result.stdout)")
            #expect(!result.stdout.contains { $0.contains("worker=false") }, "\(result.stdout)")
        }

        @Test("a main thread that never runs its loop is told, once, what to call")
        func blockedMainThread() async throws {
            let setup = try await Setup()
            defer { setup.stop() }
            let result = try await Self.run("blocked", setup, stderrSays: "[delegateThreadBlocked]")
            let notes = result.stderr.split(separator: "\n").filter { $0.contains("[delegateThreadBlocked]") }
            #expect(notes.count == 1, "\(result.stderr)")
            #expect(
                notes.first?.contains("dispatchMain()") == true && notes.first?.contains("RunLoop.main.run()") == true)
            #expect(result.stdout.isEmpty, "nothing was delivered on the blocked thread: \(result.stdout)")
        }

        @Test("a CLLocationManager subclass with override init() and a CLVisit test double")
        func subclasses() async throws {
            let setup = try await Setup()
            defer { setup.stop() }
            let result = try await Self.run("subclass", setup)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == ["subclass app 100.0 visit 51.5 50.0"], "\(result.stdout)")
        }
    }
}
