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

/// One file per app in `$XDG_STATE_HOME/gpslocation/reduced/` (or
/// `~/.local/state/gpslocation/reduced/`): the folder 0700 and the user's, the file 0600, a
/// regular file, written whole (`PrivateFile.replace`). An app id that is a plain name of at most
/// 64 letters, digits, `.`, `_`, `-` (not starting with `.`) is the file's name (`APP.json`); any
/// other id — longer, with other characters — is named by a 128-bit hash of its UTF-8 bytes
/// (`id-<32 hex digits>.json`), so every app's file name fits every file system.
///
/// Reduced accuracy **fails closed** on this store: `EngineRunner` keeps the state before it
/// delivers a reduced location, and delivers none when that fails (a fresh offset per run would
/// let restarts average their way to the precise position).
package struct ReducedAccuracyStore: Sendable {
    package let directory: URL

    package init(directory: URL? = nil) {
        self.directory = directory ?? PrivateFile.userDirectory(.state, "reduced")
    }

    package static let user = ReducedAccuracyStore()

    /// The file name for `app` (see the type).
    package static func fileName(for app: String) -> String {
        let plain =
            !app.isEmpty && app.utf8.count <= 64 && !app.hasPrefix(".")
            && app.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }
        if plain { return app + ".json" }
        // Two FNV-1a 64-bit hashes with different offset bases: 128 bits, for names that
        // cannot collide by accident (the id is the cooperating program's own choice).
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        for byte in app.utf8 {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
            second = (second ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        let hex = { (value: UInt64) in
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return "id-" + hex(first) + hex(second) + ".json"
    }

    private func file(for app: String) -> URL { directory.appendingPathComponent(Self.fileName(for: app)) }

    /// The kept state, or nil when there is none (or it cannot be read: the next save then
    /// decides whether reduced locations may be delivered at all).
    package func load(_ app: String) -> ReducedAccuracyState? {
        guard let data = PrivateFile.read(file(for: app), maximumSize: Self.maximumSize) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        return try? decoder.decode(ReducedAccuracyState.self, from: data)
    }

    /// The largest state file read or written.
    package static let maximumSize = 64 << 10

    /// Saves `state`; nil when it is kept, else why not and what to do (the folder is not
    /// private, the disk is full, …).
    package func save(_ state: ReducedAccuracyState, for app: String) -> String? {
        try? FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if let problem = PrivateFile.folderProblem(directory) { return problem }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        guard let data = try? encoder.encode(state), data.count <= Self.maximumSize else {
            return "the state of \(app) cannot be encoded"
        }
        do {
            try PrivateFile.replace(file(for: app), with: data)
            return nil
        } catch {
            return error.description
        }
    }
}
