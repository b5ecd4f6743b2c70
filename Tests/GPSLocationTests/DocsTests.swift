import Foundation
import TestSupport
import Testing

/// #25: the README is a front door, and the documentation cannot rot: every Swift block in the
/// README and docs/ is type-checked against the built modules (the Package.swift one loaded by
/// SwiftPM), and every path, link and `gpsloc` command they name exists.
@Suite("the README and docs/: short, and every example builds", .timeLimit(.minutes(10)))
struct DocsTests {
    static let root = Paths.packageRoot
    static var pages: [URL] {
        let docs = root.appendingPathComponent("docs")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: docs.path)) ?? []
        return [root.appendingPathComponent("README.md")]
            + names.filter { $0.hasSuffix(".md") }.sorted().map { docs.appendingPathComponent($0) }
    }

    /// The DocC articles (`GPSLocation.docc`): their Swift blocks build too.
    static var articles: [URL] {
        let folder = root.appendingPathComponent("Sources/GPSLocation/GPSLocation.docc")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".md") }.sorted().map { folder.appendingPathComponent($0) }
    }

    /// The sources of the main types, whose doc comments carry an example each (`scripts/docs.sh`
    /// checks every such page has one; here they build).
    static var documentedTypes: [URL] {
        [
            "GPSLocation/CoreLocation/CLLocationManager.swift", "GPSLocation/CoreLocation/CLLocation.swift",
            "GPSLocation/CoreLocation/CLLocationUpdate.swift", "GPSLocation/CoreLocation/CLMonitor.swift",
            "GPSLocation/CoreLocation/CLGeocoder.swift", "GPSLocation/CoreLocation/CLServiceSession.swift",
            "LocationCore/Sources/NMEAReplaySource.swift", "LocationCore/Authorization/LocationAuthorizer.swift",
            "GPSLocationTesting/ManualLocationSource.swift",
        ].map { root.appendingPathComponent("Sources/" + $0) }
    }

    /// The ```swift blocks of a page, in order.
    static func swiftBlocks(_ text: String) -> [String] {
        var blocks: [String] = []
        var current: [Substring]?
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if current == nil, line.hasPrefix("```swift") {
                current = []
            } else if current != nil, line.hasPrefix("```") {
                blocks.append(current!.joined(separator: "\n"))
                current = nil
            } else {
                current?.append(line)
            }
        }
        return blocks
    }

    @Test("the README is at most 200 lines, and names the two commands first")
    func frontDoor() throws {
        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let lines = readme.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count <= 200, "\(lines.count) lines")
        let firstBlock = readme.components(separatedBy: "```sh\n").dropFirst().first?.components(separatedBy: "```")
            .first
        #expect(firstBlock == "scripts/run.sh\nscripts/test.sh\n")
    }

    @Test("every Swift block of the README, docs/ and the DocC articles builds against the package")
    func examplesBuild() async throws {
        let swiftc = try #require(
            ["/opt/swift/usr/bin/swiftc", "/usr/bin/swiftc"].first { FileManager.default.isExecutableFile(atPath: $0) }
                ?? ProcessInfo.processInfo.environment["PATH"]?.split(separator: ":").map { "\($0)/swiftc" }
                .first { FileManager.default.isExecutableFile(atPath: $0) })
        let modules = Self.root.appendingPathComponent(".build/debug/Modules")
        let pseudoTerminal = try #require(
            FileManager.default.enumerator(atPath: Self.root.appendingPathComponent(".build").path)?
                .compactMap { $0 as? String }
                .first { $0.hasSuffix("debug/CPseudoTerminal.build/module.modulemap") })
        let timerFD = try #require(
            FileManager.default.enumerator(atPath: Self.root.appendingPathComponent(".build").path)?
                .compactMap { $0 as? String }
                .first { $0.hasSuffix("debug/CTimerFD.build/module.modulemap") })
        var checked = 0
        for page in Self.pages + Self.articles + Self.documentedTypes {
            var text = try String(contentsOf: page, encoding: .utf8)
            var prefix = ""
            if page.pathExtension == "swift" {
                // The examples in a main type's doc comment (each of its page's code listings).
                text = text.split(separator: "\n", omittingEmptySubsequences: false)
                    .filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("///") }
                    .map { line -> String in
                        let body = line.trimmingCharacters(in: .whitespaces).dropFirst(3)
                        return String(body.hasPrefix(" ") ? body.dropFirst() : body)
                    }
                    .joined(separator: "\n")
                prefix = "import GPSLocation\nimport GPSLocationTesting\n"
            }
            for (index, found) in Self.swiftBlocks(text).enumerated() {
                let block = prefix + found
                let folder = FileManager.default.temporaryDirectory.appendingPathComponent("docs-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: folder) }
                let name = "\(page.lastPathComponent) block \(index + 1)"
                if block.hasPrefix("// swift-tools-version") {
                    // A manifest, as the user has it: their package beside a GPSLocation checkout
                    // (a link to this one), loaded by SwiftPM with its dependency resolved.
                    let package = folder.appendingPathComponent("Tracker")
                    try FileManager.default.createDirectory(
                        at: package.appendingPathComponent("Sources/Tracker"), withIntermediateDirectories: true)
                    try FileManager.default.createSymbolicLink(
                        at: folder.appendingPathComponent("GPSLocation"), withDestinationURL: Self.root)
                    try block.write(
                        to: package.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
                    try "".write(
                        to: package.appendingPathComponent("Sources/Tracker/main.swift"), atomically: true,
                        encoding: .utf8)
                    let result = try await runProgram(
                        swiftc.replacingOccurrences(of: "swiftc", with: "swift"),
                        ["package", "--package-path", package.path, "describe", "--type", "json"], mergeErrors: true)
                    let (status, output) = (result.status, result.stdout)
                    #expect(status == 0 && output.contains("GPSLocation"), "\(name): \(output.suffix(600))")
                } else {
                    let file = folder.appendingPathComponent("main.swift")
                    try block.write(to: file, atomically: true, encoding: .utf8)
                    let arguments = [
                        "-typecheck", "-swift-version", "6", "-I", modules.path,
                        "-Xcc",
                        "-fmodule-map-file=" + Self.root.appendingPathComponent("Sources/CGPS/module.modulemap").path,
                        "-Xcc",
                        "-fmodule-map-file=" + Self.root.appendingPathComponent(".build/\(pseudoTerminal)").path,
                        "-Xcc", "-I", "-Xcc", Self.root.appendingPathComponent("Sources/CPseudoTerminal/include").path,
                        "-Xcc", "-fmodule-map-file=" + Self.root.appendingPathComponent(".build/\(timerFD)").path,
                        "-Xcc", "-I", "-Xcc", Self.root.appendingPathComponent("Sources/CTimerFD/include").path,
                        file.path,
                    ]
                    let result = try await runProgram(swiftc, arguments, mergeErrors: true)
                    let (status, output) = (result.status, result.stdout)
                    #expect(status == 0, "\(name) does not build:\n\(output.prefix(1500))")
                }
                checked += 1
            }
        }
        #expect(checked >= 6, "\(checked) blocks")
    }

    @Test("every repository path, link and gpsloc command the docs name exists")
    func namesExist() async throws {
        let prefixes = ["Sources/", "Tests/", "scripts/", "fixtures/", "docs/", "udev/", "Examples/", ".ci/"]
        let help = try await GPSLocBinary.run(["--help"]).stdout
        var missing: [String] = []
        for page in Self.pages {
            let text = try String(contentsOf: page, encoding: .utf8)
            let base = page.deletingLastPathComponent()
            // `paths` in backticks.
            for piece in text.components(separatedBy: "`").enumerated().filter({ $0.offset % 2 == 1 }).map(\.element) {
                let token = piece.split(separator: " ").first.map(String.init) ?? ""
                guard prefixes.contains(where: { token.hasPrefix($0) }), !token.contains("*"), !token.contains("…"),
                    !token.contains("NAME"), !token.contains("APP")
                else { continue }
                var path = token
                while let last = path.last, ".,;:)".contains(last) { path.removeLast() }
                if !FileManager.default.fileExists(atPath: Self.root.appendingPathComponent(path).path) {
                    missing.append("\(page.lastPathComponent): \(path)")
                }
            }
            // Markdown links to files of the repository.
            for part in text.components(separatedBy: "](").dropFirst() {
                guard let target = part.split(separator: ")").first.map(String.init), !target.hasPrefix("http"),
                    !target.hasPrefix("#")
                else { continue }
                let file = target.split(separator: "#").first.map(String.init) ?? target
                if !FileManager.default.fileExists(atPath: base.appendingPathComponent(file).path) {
                    missing.append("\(page.lastPathComponent): link \(target)")
                }
            }
            // `gpsloc COMMAND`: a command gpsloc has.
            for piece in text.components(separatedBy: "gpsloc ").dropFirst() {
                let word = piece.prefix { $0.isLetter }
                guard word.count > 2, word.allSatisfy(\.isLowercase), piece.first?.isLetter == true else { continue }
                let known = [
                    "watch", "replay", "auth", "sky", "last", "monitor", "doctor", "version", "completion",
                    "manpage", "help",
                ]
                if help.contains("  \(word) ") || known.contains(String(word)) { continue }
                // Prose: "gpsloc shows", "gpsloc never"… are not commands; only backticked uses are.
                if text.contains("`gpsloc \(word)") { missing.append("\(page.lastPathComponent): gpsloc \(word)") }
            }
        }
        #expect(missing.isEmpty, "\(missing.joined(separator: "\n"))")
    }
}
