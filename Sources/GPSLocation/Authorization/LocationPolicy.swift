import Foundation

/// The administrator's location policy: `/etc/gpslocation/policy.json` (or the file named by
/// `GPSLOCATION_POLICY`). It can turn location services off for everyone, restrict named apps
/// (the user cannot change that), and pre-grant apps — daemons have no one to ask.
///
/// ```json
/// { "locationServicesEnabled": true,
///   "restricted": ["untrusted-app"],
///   "granted": { "fleet-daemon": { "status": "authorizedAlways", "accuracy": "full" } } }
/// ```
/// A missing file means no policy. An unreadable or invalid one is reported in `problem` and
/// treated as **location services off** — an administrator's restriction never silently lapses.
public struct LocationPolicy: Sendable, Equatable {
    public var locationServicesEnabled = true
    public var restricted: Set<String> = []
    public var granted: [String: AuthorizationDecision] = [:]
    /// Why the file could not be used, when it could not.
    public var problem: String?

    public init() {}

    public static var defaultPath: String {
        ProcessInfo.processInfo.environment["GPSLOCATION_POLICY"] ?? "/etc/gpslocation/policy.json"
    }

    public static func load(path: String = LocationPolicy.defaultPath) -> LocationPolicy {
        var policy = LocationPolicy()
        guard FileManager.default.fileExists(atPath: path) else { return policy }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw CocoaError(.fileReadCorruptFile)
            }
            if let enabled = object["locationServicesEnabled"] {
                guard let flag = enabled as? Bool else { throw CocoaError(.fileReadCorruptFile) }
                policy.locationServicesEnabled = flag
            }
            if let restricted = object["restricted"] {
                guard let names = restricted as? [String] else { throw CocoaError(.fileReadCorruptFile) }
                policy.restricted = Set(names)
            }
            if let granted = object["granted"] {
                guard let entries = granted as? [String: [String: String]] else {
                    throw CocoaError(.fileReadCorruptFile)
                }
                for (app, entry) in entries {
                    let stored = DecisionStore.Entry(
                        status: entry["status"] ?? "", accuracy: entry["accuracy"] ?? "full", decidedAt: Date())
                    guard let decision = DecisionStore.decision(from: stored) else {
                        throw CocoaError(.fileReadCorruptFile)
                    }
                    policy.granted[app] = decision
                }
            }
        } catch {
            policy = LocationPolicy()
            policy.locationServicesEnabled = false
            policy.problem =
                "the location policy \(path) could not be read or is invalid — location services are treated as off until "
                + "an administrator fixes it (see the README for its format)"
        }
        return policy
    }

    /// The decision the policy imposes on `app`, if any: services off → denied, restricted →
    /// restricted, pre-granted → that grant.
    public func decision(for app: String) -> AuthorizationDecision? {
        if !locationServicesEnabled { return AuthorizationDecision(status: .denied) }
        if restricted.contains(app) { return AuthorizationDecision(status: .restricted) }
        return granted[app]
    }
}

/// Watches files with inotify and calls `onChange` (on a private queue) when any changes —
/// written, replaced by rename, created or deleted. No polling: the queue sleeps until the
/// kernel reports an event.
public final class FileChangeWatcher: @unchecked Sendable {
    // @unchecked Sendable: `source` is set once in init and only cancelled after.
    private let descriptor: Int32
    private let source: any DispatchSourceRead
    private let names: Set<String>

    /// Watches the folders of `paths` and reports changes to those file names.
    public init?(paths: [String], onChange: @escaping @Sendable () -> Void) {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        descriptor = fd
        names = Set(paths.map { URL(fileURLWithPath: $0).lastPathComponent })
        var watched = 0
        for folder in Set(paths.map { URL(fileURLWithPath: $0).deletingLastPathComponent().path }) {
            let mask = UInt32(IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM)
            if inotify_add_watch(fd, folder, mask) >= 0 { watched += 1 }
        }
        guard watched > 0 else {
            close(fd)
            return nil
        }
        source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "gpslocation.filewatch"))
        let names = self.names
        source.setEventHandler {
            var buffer = [UInt8](repeating: 0, count: 4096)
            var relevant = false
            while true {
                let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                var offset = 0
                while offset + MemoryLayout<inotify_event>.size <= count {
                    let (length, name) = buffer.withUnsafeBytes { raw -> (Int, String) in
                        let event = raw.load(fromByteOffset: offset, as: inotify_event.self)
                        let nameStart = offset + MemoryLayout<inotify_event>.size
                        let bytes = raw[nameStart..<min(count, nameStart + Int(event.len))].prefix { $0 != 0 }
                        return (Int(event.len), String(decoding: bytes, as: UTF8.self))
                    }
                    if names.contains(name) { relevant = true }
                    offset += MemoryLayout<inotify_event>.size + length
                }
            }
            if relevant { onChange() }
        }
        source.setCancelHandler { close(fd) }
        source.resume()
    }

    deinit { source.cancel() }
}
