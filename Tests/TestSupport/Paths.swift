import Foundation

/// (A support target shared by the test targets: Foundation only.)
/// Locations of the project's fixtures and the shared real-receiver corpus, relative to this file.
public enum Paths {
    public static let packageRoot = URL(fileURLWithPath: #filePath)
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
}
