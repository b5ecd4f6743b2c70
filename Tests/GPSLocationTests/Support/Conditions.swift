import Foundation
import GPSLocation
import GPSLocationTesting
import TestSupport
import Testing

/// When the gpsd integration tests run: whenever gpsfake is installed, and always under CI
/// (`CI=true`), where a missing gpsd must fail the run rather than skip it.
enum Conditions {
    static let underCI = ProcessInfo.processInfo.environment["CI"] == "true"
    /// Set by scripts/test.sh for its Thread Sanitizer run: there the data-heavy tests take a
    /// sample (Thread Sanitizer needs each path of the threading run, not each fixture through it;
    /// every fixture runs in the ordinary suite), which halves that run's CPU time.
    static let underThreadSanitizer = ProcessInfo.processInfo.environment["GPSLOCATION_TSAN"] == "1"
    /// `all`, or under Thread Sanitizer only the members `sample` keeps.
    static func sampled<T>(_ all: [T], underThreadSanitizer sample: (T) -> Bool) -> [T] {
        underThreadSanitizer ? all.filter(sample) : all
    }
    static let gpsdAvailable: Bool = {
        isolateUserFiles()
        return GPSFakeServer.isInstalled || underCI
    }()

    /// Managers on live sources write the last-location cache; tests keep it in a scratch
    /// folder, never the user's. Runs while the suites' traits are evaluated, before any test
    /// (every real-gpsd suite asks `gpsdAvailable`).
    static func isolateUserFiles() {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "gpslocation-tests-cache-\(getpid())")
        setenv("XDG_CACHE_HOME", folder.path, 1)
        setenv("XDG_STATE_HOME", folder.appendingPathComponent("state").path, 1)
    }
    static let gpsdMissingReason: Comment =
        "gpsd integration tests skipped: gpsfake is not installed (sudo apt-get install gpsd gpsd-clients)"
    static let corpusAvailable = !Paths.corpusLogs().isEmpty
    static let corpusMissingReason: Comment =
        "real-receiver corpus tests skipped: ../shared/corpus is not beside this checkout"
}
