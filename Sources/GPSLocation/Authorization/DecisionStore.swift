import Foundation

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
public final class DecisionStore: @unchecked Sendable {
    // @unchecked Sendable: `problem` is guarded by `lock`; the file itself by flock.

    public struct Entry: Codable, Sendable, Equatable {
        public var status: String
        public var accuracy: String
        public var decidedAt: Date
    }

    public let directory: URL
    public var fileURL: URL { directory.appendingPathComponent("authorizations.json") }
    private var lockURL: URL { directory.appendingPathComponent("authorizations.lock") }
    private let lock = NSLock()
    private var storedProblem: String?

    /// The last problem met reading the file (e.g. it was corrupt and was moved aside).
    public var problem: String? { lock.withLock { storedProblem } }

    /// Told when the file cannot be read (it is then moved aside); default: one line on stderr.
    public let diagnosticsHandler: DiagnosticsHandler

    public init(directory: URL? = nil, diagnosticsHandler: @escaping DiagnosticsHandler = Diagnostics.standardError) {
        self.directory = directory ?? Self.defaultDirectory()
        self.diagnosticsHandler = diagnosticsHandler
    }

    public static func defaultDirectory() -> URL {
        let environment = ProcessInfo.processInfo.environment
        if let config = environment["XDG_CONFIG_HOME"], config.hasPrefix("/") {
            return URL(fileURLWithPath: config).appendingPathComponent("gpslocation")
        }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".config/gpslocation")
    }

    public enum StoreError: Error, CustomStringConvertible {
        case io(String)
        public var description: String {
            switch self {
            case .io(let message): message
            }
        }
    }

    /// The stored decision for `app`, or nil when none (not determined).
    public func decision(for app: String) -> AuthorizationDecision? {
        guard let entry = (try? withFileLock(exclusive: false) { readEntries() })?[app] else { return nil }
        guard let decision = Self.decision(from: entry) else {
            let message =
                "the authorization store's entry for \(app) (status \"\(entry.status)\", accuracy \"\(entry.accuracy)\") "
                + "is not a valid decision — \(app) is treated as not determined (nothing is delivered); "
                + "grant again with `gpsloc auth grant \(app)`"
            lock.withLock { storedProblem = message }
            diagnosticsHandler(LocationDiagnostic(code: "authorizationStore", message: message))
            return nil
        }
        return decision
    }

    public func entries() throws(StoreError) -> [String: Entry] {
        try withFileLock(exclusive: false) { readEntries() }
    }

    /// Records a decision for `app` (read-modify-write under the exclusive lock).
    public func set(_ decision: AuthorizationDecision, for app: String, at date: Date = Date()) throws(StoreError) {
        try withFileLock(exclusive: true) {
            var entries = readEntries()
            entries[app] = Entry(
                status: decision.status.description, accuracy: decision.accuracy.description, decidedAt: date)
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
            throw .io("cannot create \(directory.path): \(error.localizedDescription) — check the folder's permissions")
        }
        // The folder must be ours and closed to others: otherwise another user could plant
        // links or files in it (the store decides what every app of ours may receive).
        var info = stat()
        guard stat(directory.path, &info) == 0 else {
            throw .io("cannot examine \(directory.path): \(String(cString: strerror(errno)))")
        }
        guard (info.st_mode & S_IFMT) == S_IFDIR, info.st_uid == geteuid(), info.st_mode & 0o022 == 0 else {
            throw .io(
                "the authorization store's folder \(directory.path) is not a folder owned by you and closed to others "
                    + "(owner uid \(info.st_uid), mode \(String(info.st_mode & 0o777, radix: 8))) — nothing is read or "
                    + "written there; fix it with `chmod 700 \(directory.path)` (or remove it if it is not yours)")
        }
        let fd = open(lockURL.path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io("cannot open \(lockURL.path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        while flock(fd, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            if errno != EINTR { throw .io("cannot lock \(lockURL.path): \(String(cString: strerror(errno)))") }
        }
        do {
            return try body()
        } catch let error as StoreError {
            throw error
        } catch {
            throw .io("\(error)")
        }
    }

    private func readEntries() -> [String: Entry] {
        guard FileManager.default.fileExists(atPath: fileURL.path) else { return [:] }
        do {
            let data = try Data(contentsOf: fileURL)
            if data.isEmpty { return [:] }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return try decoder.decode([String: Entry].self, from: data)
        } catch {
            let aside = fileURL.path + ".corrupt-\(Int(Date().timeIntervalSince1970))"
            let moved = rename(fileURL.path, aside) == 0
            let message =
                "the authorization store \(fileURL.path) could not be read (\(error.localizedDescription.prefix(120)))"
                + (moved ? "; it was moved aside to \(aside) for inspection" : "")
                + " — every app is treated as not determined; grant again with `gpsloc auth grant APP`"
            lock.withLock { storedProblem = message }
            diagnosticsHandler(LocationDiagnostic(code: "authorizationStore", message: message))
            return [:]
        }
    }

    private func write(_ entries: [String: Entry]) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(entries)
        do {
            try PrivateFile.replace(fileURL, with: data)
        } catch {
            throw StoreError.io(error.description)
        }
    }
}
