import Foundation
import TestSupport
import Testing

/// The README's module table is the package graph as `Package.swift` declares it, and no
/// product but the testing one (and the benchmark driver) links the test harnesses.
@Suite("the README's architecture is the package graph")
struct ArchitectureTests {
    /// Each target of Package.swift (test targets and TestSupport aside) and its dependencies.
    static func packageGraph() throws -> [String: Set<String>] {
        let text = try String(contentsOf: Paths.packageRoot.appendingPathComponent("Package.swift"), encoding: .utf8)
        let pattern = try NSRegularExpression(
            pattern:
                #"\.(target|executableTarget|systemLibrary)\(\s*name:\s*"([^"]+)"(?:,\s*dependencies:\s*\[([^\]]*)\])?"#
        )
        var graph: [String: Set<String>] = [:]
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            let name = String(text[Range(match.range(at: 2), in: text)!])
            guard name != "TestSupport" else { continue }
            let dependencies = Range(match.range(at: 3), in: text).map { String(text[$0]) } ?? ""
            graph[name] = Set(
                dependencies.split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
                    .filter { !$0.isEmpty }.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) })
        }
        return graph
    }

    /// The README's table under "## Architecture": `| module(s) | depends on | owns |`.
    /// Every Swift file under Sources/.
    static func swiftSources() -> [URL] {
        let sources = Paths.packageRoot.appendingPathComponent("Sources")
        return FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)?
            .compactMap { $0 as? URL }.filter { $0.pathExtension == "swift" } ?? []
    }

    static func readmeGraph() throws -> [String: Set<String>] {
        let text = try String(
            contentsOf: Paths.packageRoot.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        guard let section = text.range(of: "## Architecture\n") else { return [:] }
        var graph: [String: Set<String>] = [:]
        for line in text[section.upperBound...].split(separator: "\n") {
            guard line.hasPrefix("| `") else { continue }
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            guard cells.count >= 3 else { continue }
            let names = cells[1].split(separator: ",").map {
                $0.trimmingCharacters(in: CharacterSet(charactersIn: " `"))
            }
            let dependencies = cells[2].split(separator: "(")[0].split(separator: ",")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty && $0 != "—" }
            for name in names { graph[name] = Set(dependencies) }
        }
        return graph
    }

    @Test("every target and every dependency of Package.swift is in the README's table, and nothing else")
    func tableMatchesPackage() throws {
        let package = try Self.packageGraph()
        let readme = try Self.readmeGraph()
        #expect(package.count > 10)
        #expect(readme == package)
    }

    @Test("no product but the benchmark driver depends on GPSLocationTesting")
    func harnessesStayOutOfProducts() throws {
        let users = try Self.packageGraph().filter { $0.value.contains("GPSLocationTesting") }.map(\.key)
        #expect(users == ["gpsloc-bench"])
    }

    /// #50: a file a reader can hold in mind — a type that outgrows it splits along its seams
    /// into `Type+Part.swift` extensions.
    @Test("no Swift file under Sources is over 500 lines")
    func filesStaySmall() throws {
        let files = Self.swiftSources()
        #expect(files.count > 50)
        var long: [String] = []
        for file in files {
            let lines = try String(contentsOf: file, encoding: .utf8).split(
                separator: "\n", omittingEmptySubsequences: false)
            if lines.count > 501 { long.append("\(file.lastPathComponent): \(lines.count - 1)") }
        }
        #expect(long.isEmpty, "\(long)")
    }

    /// #50: the faces reach the core through its public, documented API (scripts/docs.sh checks
    /// every public declaration has a comment); `package` is left for what truly is shared between
    /// our own modules (a test double, a test's hook), at most 60 declarations in all.
    @Test("at most 60 package declarations in Sources")
    func fewPackageDeclarations() throws {
        let files = Self.swiftSources()
        #expect(files.count > 50)
        let declaration = try NSRegularExpression(pattern: #"^\s*(@\w+(\([^)]*\))?\s+)*package\s"#)
        var found: [String] = []
        for file in files {
            for line in try String(contentsOf: file, encoding: .utf8).split(separator: "\n") {
                let text = String(line)
                if declaration.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil {
                    found.append("\(file.lastPathComponent): \(text.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.count <= 60, "\(found.count) package declarations: \(found)")
    }
    /// #50: gpslocd runs no engine of its own. Programs on the socket run theirs (gpslocd forwards
    /// gpsd's reports and applies the gate and the fuzzer in one pass); GeoClue's clients share
    /// the core's `SharedLocationFeed`, whatever their number. The broker names no engine at all.
    @Test("gpslocd's sources name no engine: its faces call the core's feed, gate and fuzzer")
    func noEngineInTheBroker() throws {
        let folder = Paths.packageRoot.appendingPathComponent("Sources/GPSLocationBroker")
        let files = (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count > 10, "\(files)")
        var made: [String] = []
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n")
            where line.contains("EngineRunner") || line.contains("LocationEngine(") {
                made.append("\(file): \(line)")
            }
        }
        #expect(made.isEmpty, "\(made)")
    }

    /// #50's light binaries: the layers under the CoreLocation face need only FoundationEssentials
    /// (no FoundationInternationalization, no ICU), so a program built on them alone is small.
    /// #50: the rules core says what happened as values (`CLError.Facts`, `LocationDiagnostic.Facts`,
    /// `FileProblem`, `BrokerUnavailable`); the words are LocationWords', for every face. A string
    /// literal of two words or more in the core is a sentence written in the wrong place — except
    /// a thread's name, a programmer-error trap, and the text Foundation's `DecodingError` demands.
    @Test("the rules core says no English: its literals are names, never sentences")
    func noEnglishInTheCore() throws {
        let folder = Paths.packageRoot.appendingPathComponent("Sources/LocationCore")
        let files = (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".swift") }
        #expect(files.count > 40, "\(files)")
        let literal = try NSRegularExpression(pattern: #""((?:[^"\\]|\\.)*)""#)
        let prose = try NSRegularExpression(pattern: #"[A-Za-z']+ [A-Za-z']+"#)
        let allowed = [
            "WakePipe(owner:", "TimerDescriptor(owner:", "WorkerThread(name:", "precondition(", "debugDescription:",
        ]
        var sentences: [String] = []
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            for line in text.split(separator: "\n").map(String.init) {
                let code = line.trimmingCharacters(in: .whitespaces)
                if code.hasPrefix("//") || allowed.contains(where: code.contains) { continue }
                for match in literal.matches(in: code, range: NSRange(code.startIndex..., in: code)) {
                    let body = String(code[Range(match.range(at: 1), in: code)!])
                    if prose.firstMatch(in: body, range: NSRange(body.startIndex..., in: body)) != nil {
                        sentences.append("\(file): \(code)")
                    }
                }
            }
        }
        #expect(sentences.isEmpty, "\(sentences.count) sentences in the core: \(sentences)")
    }

    @Test(
        "the lower layers and gpslocd import FoundationEssentials, never Foundation",
        arguments: [
            "GNSSCore", "NMEA0183", "GPSDClient", "GPSDProcesses", "LocationCore", "GPSLocationBroker", "gpslocd",
            "GPSLocCLI", "gpsloc", "LocationWords",
        ])
    func lowerLayersAreEssentials(_ module: String) throws {
        let folder = Paths.packageRoot.appendingPathComponent("Sources/\(module)")
        let files = (FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String] ?? [])
            .filter { $0.hasSuffix(".swift") }
        #expect(!files.isEmpty)
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            let imports = text.split(separator: "\n").filter {
                ($0.contains("import Foundation") && !$0.contains("FoundationEssentials"))
                    || $0.hasSuffix("import GPSLocation")
            }
            #expect(imports.isEmpty, "\(module)/\(file): \(imports)")
        }
    }

    /// What the loader maps for gpsloc and gpslocd as built: no Foundation, no
    /// FoundationInternationalization, no ICU (the dynamic debug build shows each library by
    /// name; the installed ones are static).
    @Test("gpsloc and gpslocd as built link no Foundation and no ICU", arguments: ["gpsloc", "gpslocd"])
    func binariesLinkNoFoundation(_ program: String) async throws {
        let daemon = Paths.packageRoot.appendingPathComponent(".build/debug/\(program)").path
        let run = try await runProgram("/usr/bin/ldd", [daemon])
        #expect(run.status == 0, "\(run.stdout)")
        #expect(run.stdout.contains("libFoundationEssentials"), "\(run.stdout)")
        let heavy = run.stdout.split(separator: "\n").filter {
            $0.contains("libFoundation.so") || $0.contains("FoundationInternationalization") || $0.contains("icu")
        }
        #expect(heavy.isEmpty, "\(heavy)")
    }
}
