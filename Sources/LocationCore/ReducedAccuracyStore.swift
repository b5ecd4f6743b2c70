import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// What reduced accuracy remembers about a live app between runs, so restarting it undoes
/// nothing: the cell it was last in (the hysteresis continues), when it was last given a
/// location and which (a restarted app gets no fresher one before the rate limit allows; it gets
/// that same location again instead). The secret offset is the user's, not the app's
/// (`ReducedAccuracySecret`, in `secret.json`). Version 1 files (a per-app drifting offset,
/// before 0.4.0) are ignored and replaced.
struct ReducedAccuracyState: Codable, Sendable, Equatable {
    var version = 2
    var cellNorth: Int?
    var cellEast: Int?
    /// When the last reduced location was given (the wall clock).
    var lastOutput: Date?
    var lastLatitude: Double?
    var lastLongitude: Double?
    var lastTimestamp: Date?

    init() {}
}

/// One file per app in `$XDG_STATE_HOME/gpslocation/reduced/` (or
/// `~/.local/state/gpslocation/reduced/`): the folder 0700 and the user's, the file 0600, a
/// regular file, written whole (`PrivateFile.replace`). An app id that is a plain name of at most
/// 64 letters, digits, `.`, `_`, `-` (not starting with `.`) is the file's name (`APP.json`); any
/// other id — longer, with other characters — is named by a 128-bit hash of its UTF-8 bytes
/// (`id-<32 hex digits>.json`), so every app's file name fits every file system.
///
/// Beside them, `secret.json`: the user's secret offset, shared by all the user's apps, created
/// once under an exclusive lock on `.secret.lock` so that simultaneous first runs agree.
///
/// Reduced accuracy **fails closed** on this store: `LocationFuzzer` keeps an app's state before
/// it lets a reduced location out, and lets none out when that fails or the secret cannot be read
/// or created (a fresh secret per run would let restarts average their way to the position).
public struct ReducedAccuracyStore: Sendable {
    let directory: URL

    /// The store in `directory` (default: the user's state folder's `reduced`).
    public init(directory: URL? = nil) {
        self.directory = directory ?? PrivateFile.userDirectory(.state, "reduced")
    }

    /// The user's own store.
    public static let user = ReducedAccuracyStore()

    /// The file name for `app` (see the type).
    public static func fileName(for app: String) -> String {
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
    func load(_ app: String) -> ReducedAccuracyState? {
        guard let data = PrivateFile.read(file(for: app), maximumSize: Self.maximumSize) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .secondsSince1970
        guard let state = try? decoder.decode(ReducedAccuracyState.self, from: data), state.version == 2 else {
            return nil
        }
        return state
    }

    /// The user's secret offset: the kept one, or a new one created and kept now. Under an
    /// exclusive lock, so processes starting at once all read the one that was written first.
    /// Fails — and reduced accuracy then delivers nothing — when the folder is not private, the
    /// file is damaged (the message says to remove it), or it cannot be written.
    func secret() -> Result<ReducedAccuracySecret, FileProblem> {
        try? FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if let problem = PrivateFile.folderProblem(directory) { return .failure(problem) }
        let lockPath = directory.appendingPathComponent(".secret.lock").path
        let lock: Int32
        switch PrivateFile.openRegular(lockPath, flags: O_RDWR | O_CREAT) {
        case .success(let descriptor): lock = descriptor
        case .failure(let failure): return .failure(failure)
        }
        defer { close(lock) }
        while flock(lock, LOCK_EX) != 0 {
            guard errno == EINTR else {
                return .failure(.cannotLock(path: lockPath, errno: errno))
            }
        }
        let url = directory.appendingPathComponent("secret.json")
        switch PrivateFile.openRegular(url.path, flags: O_RDONLY) {
        case .success(let descriptor):
            defer { close(descriptor) }
            guard let data = PrivateFile.readAll(descriptor, maximumSize: Self.maximumSize),
                let kept = try? JSONDecoder().decode(ReducedAccuracySecret.self, from: data), kept.isValid
            else {
                return .failure(.damagedSecret(path: url.path))
            }
            return .success(kept)
        case .failure(let failure) where !failure.isMissing:
            return .failure(failure)
        case .failure:
            let fresh = ReducedAccuracySecret.random()
            guard let data = try? JSONEncoder().encode(fresh) else {
                return .failure(.secretNotEncodable)
            }
            do {
                try PrivateFile.replace(url, with: data)
            } catch {
                return .failure(error)
            }
            return .success(fresh)
        }
    }

    /// The largest state file read or written.
    static let maximumSize = 64 << 10

    /// Saves `state`; nil when it is kept, else why not and what to do (the folder is not
    /// private, the disk is full, …).
    func save(_ state: ReducedAccuracyState, for app: String) -> FileProblem? {
        try? FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        if let problem = PrivateFile.folderProblem(directory) { return problem }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .secondsSince1970
        guard let data = try? encoder.encode(state), data.count <= Self.maximumSize else {
            return .stateNotEncodable(app: app)
        }
        do {
            try PrivateFile.replace(file(for: app), with: data)
            return nil
        } catch {
            return error
        }
    }
}

/// The user's reduced-accuracy secret: where, as a fraction of a cell on each axis in
/// [-0.5, 0.5), every app's positions are shifted before they are snapped to the grid.
public struct ReducedAccuracySecret: Codable, Sendable, Equatable {
    var version = 1
    var north: Double
    var east: Double

    /// A secret with these offsets (fractions of a cell).
    public init(north: Double, east: Double) {
        self.north = north
        self.east = east
    }

    /// A fresh secret from the system's random source.
    static func random() -> ReducedAccuracySecret {
        var generator = SystemRandomNumberGenerator()
        return ReducedAccuracySecret(
            north: Double.random(in: -0.5..<0.5, using: &generator),
            east: Double.random(in: -0.5..<0.5, using: &generator))
    }

    /// A secret from `seed` (tests, and authorizers given a `fuzzerSeed`).
    static func seeded(_ seed: UInt64) -> ReducedAccuracySecret {
        var random = SplitMix64(seed: seed)
        return ReducedAccuracySecret(north: random.unit() - 0.5, east: random.unit() - 0.5)
    }

    /// The secret of a process whose authorizers keep nothing: every app id in it shares it.
    public static let process = random()

    /// Both fractions finite and in [-0.5, 0.5).
    var isValid: Bool { version == 1 && (-0.5..<0.5).contains(north) && (-0.5..<0.5).contains(east) }
}
