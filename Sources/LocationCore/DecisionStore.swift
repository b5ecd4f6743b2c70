import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// The per-user record of each app's location permission — the Linux counterpart of the
/// Settings app. One JSON file, `$XDG_CONFIG_HOME/gpslocation/authorizations.json` (falling back
/// to `~/.config/gpslocation/`), mode 0600.
///
/// Writes are atomic (write a temporary file, fsync, rename, fsync the folder) and serialized
/// across processes with an exclusive `flock` on a lock file beside it, so concurrent writers
/// never lose each other's decisions. A corrupt or unreadable file is moved aside
/// (`authorizations.json.corrupt-<time>`), reported in `problem`, and treated as empty
/// ("not determined") — never a crash, never a silent grant.
public final class DecisionStore: Sendable {
    // The file itself is guarded across processes by flock.

    /// One app's stored decision, as the file holds it.
    public struct Entry: Codable, Sendable, Equatable {
        /// `authorizedAlways`, `authorizedWhenInUse` or `denied`.
        public var status: String
        /// `full` or `reduced`.
        public var accuracy: String
        /// When the user decided.
        public var decidedAt: Date
    }

    /// The folder of the store (default: `defaultDirectory()`).
    public let directory: URL
    /// The decisions file, `authorizations.json` in `directory`.
    public var fileURL: URL { directory.appendingPathComponent("authorizations.json") }
    private var lockURL: URL { directory.appendingPathComponent("authorizations.lock") }
    private let storedProblem = Locked<FileProblem?>(nil)

    /// The last problem met reading the file (e.g. it was corrupt and was moved aside).
    public var problem: FileProblem? { storedProblem.withLock { $0 } }

    /// Told when the file cannot be read (it is then moved aside); default: one line on stderr.
    public let diagnosticsHandler: DiagnosticsHandler

    /// A store in `directory` (default: the user's, see `defaultDirectory()`).
    public init(directory: URL? = nil, diagnosticsHandler: @escaping DiagnosticsHandler = Diagnostics.standardError) {
        self.directory = directory ?? Self.defaultDirectory()
        self.diagnosticsHandler = diagnosticsHandler
    }

    /// `$XDG_CONFIG_HOME/gpslocation`, else `~/.config/gpslocation`.
    public static func defaultDirectory() -> URL {
        PrivateFile.userDirectory(.config)
    }

    /// Why the store could not be read or written.
    public typealias StoreError = FileProblem

    /// The stored decision for `app`, or nil when none (not determined).
    public func decision(for app: String) -> AuthorizationDecision? {
        guard let entry = (try? withFileLock(exclusive: false) { readEntries() })?[app] else { return nil }
        guard let decision = Self.decision(from: entry) else {
            let problem = FileProblem.invalidEntry(app: app, status: entry.status, accuracy: entry.accuracy)
            storedProblem.withLock { $0 = problem }
            diagnosticsHandler(LocationDiagnostic(code: "authorizationStore", .file(problem)))
            return nil
        }
        return decision
    }

    /// Every app's decision, by app id.
    public func entries() throws(StoreError) -> [String: Entry] {
        try withFileLock(exclusive: false) { readEntries() }
    }

    /// Records a decision for `app` (read-modify-write under the exclusive lock).
    public func set(_ decision: AuthorizationDecision, for app: String, at date: Date = Date()) throws(StoreError) {
        try withFileLock(exclusive: true) {
            var entries = readEntries()
            entries[app] = Entry(
                status: decision.status.name, accuracy: decision.accuracy.name, decidedAt: date)
            try write(entries)
        }
    }

    /// Forgets `app`'s decision: it is not determined again.
    public func remove(app: String) throws(StoreError) {
        try withFileLock(exclusive: true) {
            var entries = readEntries()
            entries[app] = nil
            try write(entries)
        }
    }

    static func decision(from entry: Entry) -> AuthorizationDecision? {
        let status: CLAuthorizationStatus
        switch entry.status {
        case "denied": status = .denied
        case "restricted": status = .restricted
        case "authorizedWhenInUse": status = .authorizedWhenInUse
        case "authorizedAlways": status = .authorizedAlways
        default: return nil
        }
        // Exactly "full" or "reduced": anything else ("Reduced", "REDUCED", "reducedAccuracy")
        // is not a decision at all — never full accuracy by mistake.
        let accuracy: CLAccuracyAuthorization
        switch entry.accuracy {
        case "full": accuracy = .fullAccuracy
        case "reduced": accuracy = .reducedAccuracy
        default: return nil
        }
        return AuthorizationDecision(status: status, accuracy: accuracy)
    }

    // MARK: - File handling

    private func withFileLock<T>(exclusive: Bool, _ body: () throws -> T) throws(StoreError) -> T {
        do {
            try FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .storeFolder(.cannotCreate(path: directory.path, errno: PrivateFile.systemCode(error)))
        }
        // The folder must be ours and closed to others: otherwise another user could plant
        // links or files in it (the store decides what every app of ours may receive).
        if let problem = PrivateFile.folderProblem(directory) { throw .storeFolder(problem) }
        let fd: Int32
        switch PrivateFile.openRegular(lockURL.path, flags: O_RDWR | O_CREAT) {
        case .success(let descriptor): fd = descriptor
        case .failure(let failure): throw failure
        }
        defer { close(fd) }
        while flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            if errno != EINTR { throw .cannotLock(path: lockURL.path, errno: errno) }
        }
        do {
            return try body()
        } catch let error as StoreError {
            throw error
        } catch {
            throw .storeNotEncodable
        }
    }

    /// The largest store read (a few hundred bytes an app): anything bigger is not a store.
    static let maximumSize = 1 << 20

    private func readEntries() -> [String: Entry] {
        let descriptor: Int32
        switch PrivateFile.openRegular(fileURL.path, flags: O_RDONLY) {
        case .success(let opened): descriptor = opened
        case .failure(let failure) where failure.isMissing: return [:]
        case .failure(let failure): return corrupt(failure, [:])
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_size <= Self.maximumSize else {
            return corrupt(.storeTooLarge(megabytes: Self.maximumSize >> 20), [:])
        }
        let data = PrivateFile.readAll(descriptor, maximumSize: Self.maximumSize) ?? Data()
        if data.isEmpty { return [:] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        if let entries = try? decoder.decode([String: Entry].self, from: data) { return entries }
        // Keep every decision that can still be read; only the unreadable ones are lost.
        var salvaged: [String: Entry] = [:]
        if let lenient = try? decoder.decode([String: Salvaged].self, from: data) {
            for (app, value) in lenient { if let entry = value.entry { salvaged[app] = entry } }
        }
        return corrupt(.storeInvalid(salvaged: salvaged.count), salvaged)
    }

    /// One app's value in a store that does not decode whole: its entry when it is one.
    private struct Salvaged: Decodable {
        let entry: Entry?
        init(from decoder: any Decoder) throws { entry = try? Entry(from: decoder) }
    }

    /// A store that cannot be used as it is: moved aside under a name no earlier copy has (each
    /// one is kept for inspection), said once; `salvaged` is what still applies.
    private func corrupt(_ why: FileProblem, _ salvaged: [String: Entry]) -> [String: Entry] {
        let stamp = Int(Date().timeIntervalSince1970)
        var aside: String?
        for attempt in 0..<1000 {
            let candidate = fileURL.path + ".corrupt-\(stamp)" + (attempt == 0 ? "" : "-\(attempt)")
            // link(2) never replaces an existing name (rename would overwrite an earlier copy).
            if link(fileURL.path, candidate) == 0 {
                unlink(fileURL.path)
                aside = candidate
                break
            }
            if errno != EEXIST { break }
        }
        let problem = FileProblem.storeUnusable(path: fileURL.path, why: why, movedAside: aside)
        storedProblem.withLock { $0 = problem }
        diagnosticsHandler(LocationDiagnostic(code: "authorizationStore", .file(problem)))
        if !salvaged.isEmpty, aside != nil { try? write(salvaged) }
        return salvaged
    }

    func write(_ entries: [String: Entry]) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(entries)
        do {
            try PrivateFile.replace(fileURL, with: data)
        } catch {
            throw error
        }
    }
}
