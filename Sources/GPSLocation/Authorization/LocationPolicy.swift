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
