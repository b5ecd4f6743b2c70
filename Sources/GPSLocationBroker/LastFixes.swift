import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// The last location gpslocd sent each (uid, app): the FIX line as that app received it — gpsd's
/// fix for full accuracy, the grid point for reduced — kept in memory and in
/// `STATE/users/UID/last/APP.json` (gpslocd's files, 0600 in 0700 folders: the app reads it only
/// through gpslocd, and only while it may see it). Written at most every `writeInterval` seconds
/// per app while fixes come, and when the app's last program disconnects.
final class LastFixes: Sendable {
    struct Entry: Sendable {
        /// The FIX object (a line without its newline).
        var object: String
        var reduced: Bool
        /// The receiver's last ESTIMATE object (GST) the app received after it, if any: the
        /// client applies it when its time is the fix's (the engine's rule), so the kept location
        /// has the accuracy the app was given.
        var estimate: String?
    }
    private struct Key: Hashable {
        var uid: UInt32
        var app: String
    }
    private struct State {
        var entries: [Key: Entry] = [:]
        /// The library's rule for how often a last location is written.
        var throttle: WriteThrottle<Key>
    }
    private let state: Locked<State>
    /// Files are written (and synced) here, in order, never on the thread that fans gpsd's fixes
    /// out to every program: 500 apps' first fixes were 500 fsyncs on that thread.
    let writes = DispatchQueue(label: "gpslocd.last-locations")
    private let directory: @Sendable (UInt32) -> URL
    let writeInterval: TimeInterval

    /// `directory(uid)`: the uid's folder in the state folder.
    init(
        writeInterval: TimeInterval = LastLocationCache.defaultWriteInterval,
        directory: @escaping @Sendable (UInt32) -> URL
    ) {
        self.writeInterval = writeInterval
        self.directory = directory
        state = Locked(State(throttle: WriteThrottle(interval: writeInterval)))
    }

    /// Records `line` (a FIX line) as what `app` of `uid` last received.
    func record(uid: UInt32, app: String, line: String, reduced: Bool, now: Date = Date()) {
        let object = Self.object(of: line)
        let key = Key(uid: uid, app: app)
        let entry = Entry(object: object, reduced: reduced)
        let due = state.withLock { state -> Bool in
            state.entries[key] = entry
            return state.throttle.due(key, now: now)
        }
        if due { save(key, entry) }
    }

    /// Records `line` (an ESTIMATE line) beside what `app` of `uid` last received (full accuracy
    /// only: a reduced program never receives one). Kept in memory; written with the next fix.
    func recordEstimate(uid: UInt32, app: String, line: String) {
        let object = Self.object(of: line)
        state.withLock { state in
            guard var entry = state.entries[Key(uid: uid, app: app)], !entry.reduced else { return }
            entry.estimate = object
            state.entries[Key(uid: uid, app: app)] = entry
        }
    }

    /// `line` without its final newline: cut on its UTF-8, in constant time (`String.dropLast()`
    /// walked the whole line by characters, twice — 27 k instructions a cycle, a seventh of
    /// gpslocd's).
    static func object(of line: String) -> String {
        guard line.utf8.last == 0x0A else { return line }
        return String(line[..<line.utf8.index(before: line.utf8.endIndex)])
    }

    /// Writes `app`'s entry now (its program went away).
    func flush(uid: UInt32, app: String) {
        let key = Key(uid: uid, app: app)
        guard let entry = state.withLock({ $0.entries[key] }) else { return }
        save(key, entry)
    }

    /// What `app` of `uid` last received: from memory, else from its file.
    func entry(uid: UInt32, app: String) -> Entry? {
        let key = Key(uid: uid, app: app)
        if let known = state.withLock({ $0.entries[key] }) { return known }
        guard let url = file(key), let data = PrivateFile.read(url, maximumSize: 16_384),
            let text = String(data: data, encoding: .utf8)
        else { return nil }
        // The FIX object, then (full accuracy) the ESTIMATE object, one per line.
        let lines = text.split(separator: "\n").map(String.init)
        guard let object = lines.first, let message = BrokerMessage(line: Array(object.utf8)),
            message.messageClass == "FIX"
        else { return nil }
        var entry = Entry(object: object, reduced: message.bool("reduced") ?? false)
        if lines.count > 1, BrokerMessage(line: Array(lines[1].utf8))?.messageClass == "ESTIMATE" {
            entry.estimate = lines[1]
        }
        state.withLock { $0.entries[key] = $0.entries[key] ?? entry }
        return entry
    }

    /// Forgets what `app` of `uid` received (its decision was reset).
    func remove(uid: UInt32, app: String) {
        let key = Key(uid: uid, app: app)
        state.withLock { state in
            state.entries[key] = nil
            state.throttle.forget(key)
        }
        if let url = file(key) { writes.async { unlink(url.path) } }
    }

    private func file(_ key: Key) -> URL? {
        guard BrokerService.isValidLabel(key.app), !key.app.hasPrefix(".") else { return nil }
        return directory(key.uid).appendingPathComponent("last").appendingPathComponent(key.app + ".json")
    }

    /// Waits for the writes asked for so far (gpslocd's stop; tests), at most `timeout` seconds
    /// (nil: for as long as they take); false when they had not finished by then — a disk that
    /// does not answer must not hold gpslocd's stop until systemd kills it.
    @discardableResult
    func waitForWrites(timeout: TimeInterval? = nil) -> Bool {
        guard let timeout else {
            writes.sync {}
            return true
        }
        let done = DispatchSemaphore(value: 0)
        writes.async { done.signal() }
        return done.wait(timeout: .now() + timeout) == .success
    }

    private func save(_ key: Key, _ entry: Entry) {
        guard let url = file(key) else { return }
        writes.async { Self.write(entry, to: url) }
    }

    private static func write(_ entry: Entry, to url: URL) {
        let folder = url.deletingLastPathComponent()
        try? FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        do {
            try PrivateFile.replace(
                url, with: Data((entry.object + "\n" + (entry.estimate.map { $0 + "\n" } ?? "")).utf8))
        } catch {
            // Not kept is a convenience lost, said on gpslocd's stderr (its journal).
            BrokerServer.log("the last location is not kept: \(error)")
        }
    }
}
