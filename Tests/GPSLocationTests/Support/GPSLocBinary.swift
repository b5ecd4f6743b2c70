import Foundation
import TestSupport

/// Runs the built `gpsloc` binary as a user would.
enum GPSLocBinary {
    static let path = Paths.packageRoot.appendingPathComponent(".build/debug/gpsloc").path

    /// The environment gpsloc runs with: the user's files in `configHome` (never the user's own).
    static func environment(configHome: URL? = nil) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        let home = configHome ?? emptyConfigHome
        environment["XDG_CONFIG_HOME"] = home.path
        environment["XDG_CACHE_HOME"] = home.appendingPathComponent("cache").path
        environment["XDG_STATE_HOME"] = home.appendingPathComponent("state").path
        return environment
    }

    /// Runs gpsloc to its end, awaiting its exit (no thread is held while it runs).
    static func run(_ arguments: [String], configHome: URL? = nil, stdin: URL? = nil) async throws -> ProgramResult {
        try await runProgram(path, arguments, environment: environment(configHome: configHome), stdinFile: stdin)
    }

    /// Runs a bash command line in which `$GPSLOC` is the binary (for redirections a test needs:
    /// closed descriptors, pipes to a reader that leaves); returns its exit status.
    static func shell(_ command: String) async throws -> Int32 {
        var environment = environment()
        environment["GPSLOC"] = path
        return try await runProgram("/bin/bash", ["-c", command], environment: environment).status
    }

    /// Starts gpsloc in the background with its own decision store; its stdout lines are
    /// collected with their arrival times. `extraEnvironment`: set for gpsloc (libfaketime's).
    static func launch(_ arguments: [String], configHome: URL, extraEnvironment: [String: String] = [:]) throws -> (
        process: RunningProgram, reader: LineReader
    ) {
        let process = Process()
        if extraEnvironment["LD_PRELOAD"] == nil {
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
        } else {
            // Through sh's exec: started directly by Process with a library preloaded, gpsloc
            // was seen to get no arguments (libfaketime); from a shell it gets them.
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", #"exec "$0" "$@""#, path] + arguments
        }
        process.environment = environment(configHome: configHome).merging(extraEnvironment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let program = RunningProgram(process)
        try program.start()
        return (program, LineReader(output.fileHandleForReading))
    }

    /// A fresh folder for the decision store, so tests never touch the user's.
    static func makeConfigHome() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("gpsloc-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
    static let emptyConfigHome = try! makeConfigHome()

    static func jsonLines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }
}
