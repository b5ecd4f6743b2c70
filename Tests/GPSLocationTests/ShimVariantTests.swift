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
    static let include = Data("#include \"shim.h\"\n".utf8)

    static func compile(api: Int) async throws -> (status: Int32, output: String) {
        let result = try await runProgram(
            "/usr/bin/gcc",
            [
                "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-DVARIANT_API=\(api)",
                "-I", Paths.packageRoot.appendingPathComponent("Tests/ShimVariants/include").path,
                "-I", Paths.packageRoot.appendingPathComponent("Sources/CGPS").path, "-x", "c", "-",
            ], input: Self.include, mergeErrors: true)
        return (result.status, result.stdout)
    }

    @Test("compiles warning-free against API", arguments: [9, 10, 11, 12, 14, 16])
    func supported(api: Int) async throws {
        let result = try await Self.compile(api: api)
        #expect(result.status == 0, "\(result.output)")
    }

    @Test("refuses API 8 with a message that says what to install")
    func tooOld() async throws {
        let result = try await Self.compile(api: 8)
        #expect(result.status != 0)
        #expect(result.output.contains("GPSLocation needs libgps API 9 or newer"))
    }

    @Test("and against the installed <gps.h>")
    func installed() async throws {
        let result = try await runProgram(
            "/usr/bin/gcc",
            [
                "-std=c11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-I",
                Paths.packageRoot.appendingPathComponent("Sources/CGPS").path, "-x", "c", "-",
            ], input: Self.include, mergeErrors: true)
        #expect(result.status == 0, "\(result.stdout)")
    }
}
