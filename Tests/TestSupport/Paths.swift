import Foundation

/// (A support target shared by the test targets: Foundation only.)
/// Locations of the project's fixtures and the shared real-receiver corpus, relative to this file.
public enum Paths {
    /// The checkout: where this file is, or `GPSLOCATION_PACKAGE_ROOT` when the tests were built
    /// elsewhere (scripts/tsan.sh builds the threading suites in a package of their own).
    public static let packageRoot =
        ProcessInfo.processInfo.environment["GPSLOCATION_PACKAGE_ROOT"].map { URL(fileURLWithPath: $0) }
        ?? URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    public static let fixtures = packageRoot.appendingPathComponent("fixtures")
    /// `../shared/corpus` beside the checkout (present for developers and CI, absent in a user's clone).
    public static let corpus = packageRoot.deletingLastPathComponent().appendingPathComponent("shared/corpus")

    /// Every corpus log with gpsd 3.22's expected output: (log, chk).
    public static func corpusLogs() -> [(log: URL, chk: URL)] {
        var result: [(URL, URL)] = []
        for (folder, suffix) in [("gpsd-3.22", ".chk"), ("gpsd-modern", ".chk-3.22")] {
            let directory = corpus.appendingPathComponent(folder)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
            for name in names.sorted() where name.hasSuffix(".log") {
                let chk = directory.appendingPathComponent(name + suffix)
                if FileManager.default.fileExists(atPath: chk.path) {
                    result.append((directory.appendingPathComponent(name), chk))
                }
            }
        }
        return result
    }

    /// Every fixture recording with gpsd's output beside it: (`NAME.nmea`, `NAME.gpsd.json`).
    public static func fixtureRecordings() -> [(log: URL, chk: URL)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: fixtures.path)) ?? []
        return names.filter { $0.hasSuffix(".gpsd.json") }.sorted().map {
            (
                fixtures.appendingPathComponent(String($0.dropLast(".gpsd.json".count)) + ".nmea"),
                fixtures.appendingPathComponent($0)
            )
        }
    }

    /// gpsd 3.22's whole regression corpus (Debian's source package), fetched by
    /// `scripts/fetch-gpsd-corpus.sh` into `.build/gpsd-corpus` (or `GPSLOCATION_GPSD_CORPUS`).
    public static var debianCorpus: URL {
        if let named = ProcessInfo.processInfo.environment["GPSLOCATION_GPSD_CORPUS"], !named.isEmpty {
            return URL(fileURLWithPath: named)
        }
        return packageRoot.appendingPathComponent(".build/gpsd-corpus")
    }

    /// Every NMEA log of the Debian gpsd corpus with its `.chk`, when it has been fetched.
    public static func debianCorpusLogs() -> [(log: URL, chk: URL)] {
        let directory = debianCorpus
        guard FileManager.default.fileExists(atPath: directory.appendingPathComponent(".complete").path) else {
            return []
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.sorted().filter { $0.hasSuffix(".log") }.map {
            (directory.appendingPathComponent($0), directory.appendingPathComponent($0 + ".chk"))
        }
    }
}
