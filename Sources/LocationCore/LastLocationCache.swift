import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc

/// The last location an app received, kept per user and per app so a new manager can show it
/// at once (Apple's `manager.location` before updates start) and `gpsloc last` can print it.
///
/// Only what passed the authorization gate for that app is written — a reduced-accuracy app's
/// cache holds its reduced location, never the precise one — and only locations from a
/// receiver (`sourceInformation.isProducedByAccessory`): a replay's recorded position is never
/// kept as if it were where the machine is. Files: `$XDG_CACHE_HOME/gpslocation/last/APP.json`
/// (or `~/.cache/…`), mode 0600 in a 0700 folder, written whole to a new temporary file
/// (`O_EXCL|O_NOFOLLOW`) and renamed over the old one, at most once per `writeInterval` per
/// manager plus once when updates stop. The engine's driver has each write done on the cache's
/// own thread (`record(_:for:now:force:inBackground:)`): a slow disk never delays a location.
public final class LastLocationCache: Sendable {
    /// The folder of the cache (default: `defaultDirectory()`).
    public let directory: URL
    /// Seconds between writes while locations keep coming.
    public let writeInterval: TimeInterval
    /// At most one write a minute's half per app: a last location is a hint, and a 10 Hz
    /// receiver must not wear the disk (gpslocd's per-uid store follows the same rule).
    public static let defaultWriteInterval: TimeInterval = 30
    /// Keep simulated locations too (for tests of the cache itself).
    let recordsSimulated: Bool
    private let throttle: Locked<WriteThrottle<String>>
    /// Writes a file whole (`PrivateFile.replace`: synced twice), giving what went wrong (nil:
    /// written); tests make it slow, or full.
    let writer: @Sendable (Data, URL) -> FileProblem?
    /// Where the writes run, in order (`fileThread`): never on the thread that delivers
    /// locations. Two fsyncs on a slow SD card or a hung NFS home took that long from every
    /// thirtieth second's location, or stopped locations altogether, saying nothing.
    private let writes: JobThread
    /// One thread in the process for the files kept up to date while locations come (the last
    /// location of each app): their writes wait for the disk there, never on the thread that
    /// delivers locations.
    static let fileThread = JobThread(name: "gpslocation.files", stackSize: 256 * 1024)
    /// The location waiting for the file thread, by app: one each, the newest. (On a disk that
    /// does not answer, a write queued every `writeInterval` would otherwise pile up for ever.)
    private let waiting = Locked<[String: LocationValue]>([:])
    /// Seconds the write when updates stop (`recordFinal`) is waited for: a hung NFS home or a
    /// failing SD card must not hang `stopUpdatingLocation()` (and gpsloc's exit) for ever.
    public static let finalWriteWait: TimeInterval = 2
    /// `finalWriteWait`, or a test's.
    let finalWait: TimeInterval
    /// The first write problem since the last write that worked, by app, and whether it was told
    /// (`takeProblem`): a full disk is said once, not every `writeInterval`, and again only after
    /// a write worked in between.
    private let problems = Locked<[String: (problem: FileProblem, told: Bool)]>([:])

    /// A cache in `directory` (default: the user's), written at most every `writeInterval` seconds.
    public init(directory: URL? = nil, writeInterval: TimeInterval = LastLocationCache.defaultWriteInterval) {
        self.directory = directory ?? Self.defaultDirectory()
        self.writeInterval = writeInterval
        recordsSimulated = false
        throttle = Locked(WriteThrottle(interval: writeInterval))
        writer = Self.writeAtomically
        writes = Self.fileThread
        finalWait = Self.finalWriteWait
    }

    /// A cache in `directory`, written at most every `writeInterval` seconds;
    /// `recordsSimulated`: replays' locations are kept too.
    public convenience init(directory: URL, writeInterval: TimeInterval, recordsSimulated: Bool) {
        self.init(
            directory: directory, writeInterval: writeInterval, recordsSimulated: recordsSimulated,
            writer: LastLocationCache.writeAtomically, thread: LastLocationCache.fileThread)
    }

    /// As above, writing its files with `writer` on `thread` (tests: a disk that takes its time,
    /// on a thread of the test's own), waiting `finalWait` seconds for the write when updates stop.
    init(
        directory: URL, writeInterval: TimeInterval, recordsSimulated: Bool,
        writer: @escaping @Sendable (Data, URL) -> FileProblem?, thread: JobThread,
        finalWait: TimeInterval = LastLocationCache.finalWriteWait
    ) {
        self.directory = directory
        self.writeInterval = writeInterval
        self.recordsSimulated = recordsSimulated
        throttle = Locked(WriteThrottle(interval: writeInterval))
        self.writer = writer
        writes = thread
        self.finalWait = finalWait
    }

    /// The user's cache.
    public static let user = LastLocationCache()

    /// `$XDG_CACHE_HOME/gpslocation/last`, else `~/.cache/gpslocation/last`.
    public static func defaultDirectory() -> URL {
        PrivateFile.userDirectory(.cache, "last")
    }

    /// The file's form (version 1): the location's values by name (`LocationValue`).
    private struct Entry: Codable {
        var version = 1
        var app: String
        var location: LocationValue
    }

    /// The file for `app` (app ids are letters, digits, '.', '_', '-'; others are refused).
    func file(for app: String) -> URL? {
        guard !app.isEmpty, !app.hasPrefix("."),
            app.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
        else { return nil }
        return directory.appendingPathComponent(app + ".json")
    }

    /// Records `location` as `app`'s last one, unless one was written less than
    /// `writeInterval` ago (`force`: write now, e.g. when updates stop). Returns whether it
    /// wrote (`inBackground`: whether a write was queued). A failure is not an error for the app
    /// (the cache is a convenience), but it is not silent: `takeProblem(for:)` gives it, once.
    ///
    /// `inBackground`: the write runs on the cache's own thread and this returns at once — how
    /// the engine's driver records each delivered location, so a slow disk never holds a location
    /// back (at most one such write waits per app: the newest location). Otherwise it returns
    /// when the file is written, after the writes queued before it.
    @discardableResult
    public func record(
        _ location: LocationValue, for app: String, now: Date = Date(), force: Bool = false, inBackground: Bool = false
    ) -> Bool {
        guard let (_, write) = writing(location, for: app, now: now, force: force) else { return false }
        guard inBackground else { return writes.sync { write(location) } == .some(nil) }
        let queue = waiting.withLock { waiting -> Bool in
            defer { waiting[app] = location }
            return waiting[app] == nil
        }
        if queue {
            writes.async { [waiting] in
                guard let location = waiting.withLock({ $0.removeValue(forKey: app) }) else { return }
                _ = write(location)
            }
        }
        return true
    }

    /// The write when updates stop: `location` written now (after the writes queued before it),
    /// waited for at most `finalWait` seconds. Nil when it is done (or nothing was to be
    /// written); else what to say — the file still being written (stopping goes on without it),
    /// or a problem not told yet.
    func recordFinal(_ location: LocationValue, for app: String) -> LocationDiagnostic.Facts? {
        guard let (url, write) = writing(location, for: app, now: Date(), force: true) else { return nil }
        guard writes.sync(timeout: finalWait, { write(location) }) != nil else {
            return .lastLocationNotSaved(path: url.path, waited: finalWait)
        }
        return takeProblem(for: app).map { .lastLocationWriteFailed($0) }
    }

    /// A write problem of `app`'s not told yet, once. (The engine's driver asks when it queues a
    /// write, at most once a `writeInterval`: a failed write is told at the next one.)
    func takeProblem(for app: String) -> FileProblem? {
        problems.withLock { problems -> FileProblem? in
            guard let pending = problems[app], !pending.told else { return nil }
            problems[app] = (pending.problem, told: true)
            return pending.problem
        }
    }

    /// Keeps the outcome of a write of `app`'s file: the first problem since one worked.
    private func note(_ problem: FileProblem?, for app: String) {
        problems.withLock { problems in
            if let problem {
                if problems[app] == nil { problems[app] = (problem, told: false) }
            } else {
                problems[app] = nil
            }
        }
    }

    /// The file and the write of `app`'s `location`, when one is due (and kept at all); the write
    /// gives what went wrong (nil: written) and keeps it for `takeProblem`.
    private func writing(_ location: LocationValue, for app: String, now: Date, force: Bool)
        -> (URL, @Sendable (LocationValue) -> FileProblem?)?
    {
        guard recordsSimulated || location.origin?.isProducedByAccessory == true else { return nil }
        let due = throttle.withLock { $0.due(app, now: now, force: force) }
        guard due, let url = file(for: app) else { return nil }
        let writer = writer
        return (
            url,
            { [self] location in
                guard let data = try? JSONEncoder().encode(Entry(app: app, location: location)) else { return nil }
                let problem = writer(data, url)
                note(problem, for: app)
                return problem
            }
        )
    }

    /// `app`'s last location, or nil when there is none (or the file is not a cache entry, or
    /// the folder is not private: see `folderProblem`).
    public func location(for app: String) -> LocationValue? {
        // Only from a private folder of the user's (a planted file in a folder others can write
        // is never taken for the app's own location), a regular file, bounded.
        // (Not waiting for a write still queued: a main thread reading this would wait for the
        // disk. The file is at most one `writeInterval` behind, as it always is; updates that
        // stop write theirs before `stop` returns.)
        guard let url = file(for: app), let data = PrivateFile.read(url, maximumSize: 1 << 16),
            let entry = try? JSONDecoder().decode(Entry.self, from: data), entry.app == app
        else { return nil }
        return entry.location
    }

    /// What `app` may see of its cached location under `decision` now: nothing unless it is
    /// authorized; with reduced accuracy, only a location that was reduced when it was cached.
    public func location(for app: String, allowedBy decision: AuthorizationDecision) -> LocationValue? {
        guard decision.status.isAuthorized, let location = location(for: app), decision.permits(cached: location)
        else { return nil }
        return location
    }

    /// What is wrong with the cache's folder (open to others, not the user's), with the fix.
    public var folderProblem: FileProblem? { PrivateFile.folderProblem(directory) }

    /// Forgets `app`'s location.
    public func remove(app: String) {
        guard let url = file(for: app) else { return }
        unlink(url.path)
    }

    @Sendable static func writeAtomically(_ data: Data, to url: URL) -> FileProblem? {
        try? FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        do throws(FileProblem) {
            try PrivateFile.replace(url, with: data)
            return nil
        } catch {
            return error
        }
    }
}
