import Foundation
import GNSSCore
import GPSLocationTesting

/// What a program printed and how it ended.
struct ProgramResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
    var seconds: Double
}

/// A program started by a test. Its end is awaited through `Process`'s termination handler, so
/// no thread — a Swift concurrency thread or any other — is held while it runs (a 2-core machine
/// has two concurrency threads, and every other test's `await` needs them).
final class RunningProgram: @unchecked Sendable {
    let process: Process
    private let latch = ExitLatch()

    /// Configures `process` to report its end here; call before `start()`.
    init(_ process: Process) {
        self.process = process
        let latch = self.latch
        process.terminationHandler = { latch.finish($0.terminationStatus) }
    }

    func start() throws {
        do { try process.run() } catch {
            latch.finish(-1)
            throw error
        }
    }

    var isRunning: Bool { latch.status == nil }
    var processIdentifier: Int32 { process.processIdentifier }
    var terminationStatus: Int32 { latch.status ?? -1 }
    func terminate() { if isRunning { process.terminate() } }
    func kill(_ signal: Int32) { if isRunning { Glibc.kill(process.processIdentifier, signal) } }

    /// Suspends until the program has ended; its exit status.
    @discardableResult
    func exited() async -> Int32 { await latch.wait() }

    /// Suspends until the program has ended (true). One still running after `hangLimit` seconds
    /// is terminated and false is returned: the bound ends a hang, and a program that ends is
    /// never kept waiting for it.
    func exited(hangLimit: Double) async -> Bool {
        let hung = Locked(false)
        DispatchQueue.global().asyncAfter(deadline: .now() + hangLimit) { [self] in
            guard isRunning else { return }
            hung.withLock { $0 = true }
            terminate()
        }
        await latch.wait()
        return !hung.withLock { $0 }
    }
}

/// A one-shot event carrying an exit status: waiters suspend until `finish` is called once.
final class ExitLatch: Sendable {
    private let state = Locked<(status: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    var status: Int32? { state.withLock { $0.status } }

    func finish(_ status: Int32) {
        let waiters = state.withLock { state -> [CheckedContinuation<Int32, Never>] in
            guard state.status == nil else { return [] }
            state.status = status
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: status) }
    }

    @discardableResult
    func wait() async -> Int32 {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Int32? in
                if let status = state.status { return status }
                state.waiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }
}

/// Runs `executable` to its end and returns what it printed. Output goes to files (no pipe can
/// fill up and stall the program); `input` is its stdin (else /dev/null); `mergeErrors` sends
/// stderr into stdout, in order.
func runProgram(
    _ executable: String, _ arguments: [String], environment: [String: String]? = nil, input: Data? = nil,
    stdinFile: URL? = nil, in folder: URL? = nil, mergeErrors: Bool = false
) async throws -> ProgramResult {
    let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("program-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: scratch) }
    let outURL = scratch.appendingPathComponent("stdout")
    let errURL = scratch.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let environment { process.environment = environment }
    if let folder { process.currentDirectoryURL = folder }
    let out = try FileHandle(forWritingTo: outURL)
    let err = try FileHandle(forWritingTo: errURL)
    process.standardOutput = out
    process.standardError = mergeErrors ? out : err
    if let input {
        let inURL = scratch.appendingPathComponent("stdin")
        try input.write(to: inURL)
        process.standardInput = try FileHandle(forReadingFrom: inURL)
    } else if let stdinFile {
        process.standardInput = try FileHandle(forReadingFrom: stdinFile)
    } else {
        process.standardInput = FileHandle.nullDevice
    }
    let program = RunningProgram(process)
    let start = ContinuousClock.now
    try program.start()
    // A test ended by its time limit is cancelled: the program goes with it (else a program
    // waiting on something that never comes keeps the whole run waiting).
    let status = await withTaskCancellationHandler {
        await program.exited()
    } onCancel: {
        program.kill(SIGKILL)
    }
    let elapsed = ContinuousClock.now - start
    try? out.close()
    try? err.close()
    return ProgramResult(
        status: status,
        stdout: String(decoding: (try? Data(contentsOf: outURL)) ?? Data(), as: UTF8.self),
        stderr: String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self),
        seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
}

/// A count that tests wait on without polling: each `increment()` wakes the waits whose
/// condition it makes true.
final class EventCounter: Sendable {
    private let count = Locked(0)
    private let changes = ChangeWaiters()

    var value: Int { count.withLock { $0 } }

    func increment() {
        count.withLock { $0 += 1 }
        changes.changed()
    }

    /// Re-checks the waits: for conditions that also read other state, when that changes.
    func changed() { changes.changed() }

    /// Suspends until `condition` holds of the count (true), or `hangLimit` seconds pass (false).
    func wait(hangLimit: Double = 60, until condition: @escaping @Sendable (Int) -> Bool) async -> Bool {
        await changes.wait(hangLimit: hangLimit) { [self] in condition(value) }
    }
}

/// A value behind a lock whose changes wake the waits on it: `withLock` as `Locked`'s, and
/// `wait` suspends until a condition of the value holds — re-checked after each `withLock`,
/// never on a timer. For the counters and logs a test's callbacks fill.
final class Watched<Value: Sendable>: Sendable {
    private let value: Locked<Value>
    private let changes = ChangeWaiters()

    init(_ initial: Value) { value = Locked(initial) }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        defer { changes.changed() }
        return try value.withLock(body)
    }

    /// Suspends until `condition` holds of the value (true), or `timeout` seconds pass (false).
    func wait(timeout: Double = 60, until condition: @escaping @Sendable (Value) -> Bool) async -> Bool {
        await changes.wait(hangLimit: timeout) { [value] in condition(value.withLock { $0 }) }
    }
}

/// A `Process` handed to another thread (its own methods are thread-safe for waiting).
final class ProcessReference: @unchecked Sendable {
    let process: Process
    init(_ process: Process) { self.process = process }
}

/// `text` as one word of a shell command line, whatever it holds (spaces in a checkout's path,
/// quotes): in single quotes, each single quote written as '\''.
func shellQuoted(_ text: String) -> String {
    "'" + text.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
}
