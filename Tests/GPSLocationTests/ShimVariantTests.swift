import Foundation
import TestSupport
import Testing

/// The C shim compiles against libgps API 9 through 16 — the header differences are reproduced
/// in Tests/ShimVariants/gps-variant.h — and refuses API 8 with a clear #error. The Swift layer
/// sees only the shim's own structs, so it has no version #if at all.
@Suite(
    "CGPS shim across libgps API versions",
    .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/gcc"), "needs gcc"), .timeLimit(.minutes(5)))
struct ShimVariantTests {
    static func compile(api: Int) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gcc")
        process.arguments = [
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-DVARIANT_API=\(api)",
            "-I", Paths.packageRoot.appendingPathComponent("Tests/ShimVariants/include").path,
            "-I", Paths.packageRoot.appendingPathComponent("Sources/CGPS").path, "-x", "c", "-",
        ]
        let input = Pipe()
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        input.fileHandleForWriting.write(Data("#include \"shim.h\"\n".utf8))
        try input.fileHandleForWriting.close()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, text)
    }

    @Test("compiles warning-free against API", arguments: [9, 10, 11, 12, 14, 16])
    func supported(api: Int) throws {
        let result = try Self.compile(api: api)
        #expect(result.status == 0, "\(result.output)")
    }

    @Test("refuses API 8 with a message that says what to install")
    func tooOld() throws {
        let result = try Self.compile(api: 8)
        #expect(result.status != 0)
        #expect(result.output.contains("GPSLocation needs libgps API 9 or newer"))
    }

    @Test("and against the installed <gps.h>")
    func installed() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/gcc")
        process.arguments = [
            "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I",
            Paths.packageRoot.appendingPathComponent("Sources/CGPS").path, "-x", "c", "-",
        ]
        let input = Pipe()
        process.standardInput = input
        try process.run()
        input.fileHandleForWriting.write(Data("#include \"shim.h\"\n".utf8))
        try input.fileHandleForWriting.close()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
