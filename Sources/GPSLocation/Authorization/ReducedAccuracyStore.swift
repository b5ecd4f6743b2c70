import Foundation

/// What reduced accuracy remembers about an app between runs, so restarting it undoes nothing:
/// the secret offset (its seed, where it has drifted to, the generator's state) — the same grid
/// cell after a restart, so averaging many runs gains nothing — and, for live sources, when the
/// last reduced location was given and which it was, so a restarted app gets no fresher one
/// before the rate limit allows (it gets that same location again instead).
package struct ReducedAccuracyState: Codable, Sendable, Equatable {
    package var version = 1
    package var seed: UInt64
    package var generator: UInt64
    package var offsetNorth: Double
    package var offsetEast: Double
    package var lastDrift: Date?
    /// Live only (the wall clock): when the last reduced location was given.
    package var lastOutput: Date?
    package var lastLatitude: Double?
    package var lastLongitude: Double?
    package var lastAccuracy: Double?
    package var lastTimestamp: Date?
}

/// One file per app, `$XDG_STATE_HOME/gpslocation/reduced/APP.json` (or
/// `~/.local/state/gpslocation/reduced/`), the folder 0700 and the user's (else nothing is read
/// or written — and the offset is then a fresh one per process, said once), the file 0600,
/// written whole (`PrivateFile.replace`).
package struct ReducedAccuracyStore: Sendable {
    package let directory: URL

    package init(directory: URL? = nil) {
        if let directory {
            self.directory = directory
        } else {
            let environment = ProcessInfo.processInfo.environment
            if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
                self.directory = URL(fileURLWithPath: state).appendingPathComponent("gpslocation/reduced")
            } else {
                let home = environment["HOME"] ?? NSHomeDirectory()
                self.directory = URL(fileURLWithPath: home).appendingPathComponent(".local/state/gpslocation/reduced")
            }
        }
    }

    package static let user = ReducedAccuracyStore()

    private func file(for app: String) -> URL? {
        guard !app.isEmpty, !app.hasPrefix("."),
            app.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
        else { return nil }
        return directory.appendingPathComponent(app + ".json")
    }

    /// The folder is a folder of ours, closed to others.
    private func folderIsPrivate() -> Bool {
        var info = stat()
        guard lstat(directory.path, &info) == 0 else { return false }
        return (info.st_mode & S_IFMT) == S_IFDIR && info.st_uid == geteuid() && info.st_mode & 0o022 == 0
    }

    package func load(_ app: String) -> ReducedAccuracyState? {
        guard let url = file(for: app), folderIsPrivate() else { return nil }
        let descriptor = open(url.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        guard let data = try? handle.read(upToCount: 64 << 10) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(ReducedAccuracyState.self, from: data)
    }

    /// Saves `state`; false when it cannot (the folder is not private, the disk is full).
    @discardableResult
    package func save(_ state: ReducedAccuracyState, for app: String) -> Bool {
        guard let url = file(for: app) else { return false }
        try? FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard folderIsPrivate() else { return false }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        guard let data = try? encoder.encode(state) else { return false }
        do {
            try PrivateFile.replace(url, with: data)
            return true
        } catch {
            return false
        }
    }

}
