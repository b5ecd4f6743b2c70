import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// The administrator's location policy: `/etc/gpslocation/policy.json`. It can turn location
/// services off for everyone, restrict named apps (the user cannot change that), and pre-grant
/// apps — daemons have no one to ask. A file named by `GPSLOCATION_POLICY` can only add
/// restrictions to it (services off, restricted apps): its grants are ignored, so an app the
/// administrator restricted cannot escape by pointing the variable elsewhere.
///
/// ```json
/// { "locationServicesEnabled": true, "brokerRequired": false,
///   "restricted": ["untrusted-app"],
///   "granted": { "fleet-daemon": { "status": "authorizedAlways", "accuracy": "full" } } }
/// ```
/// A missing file means no policy. An unreadable or invalid one is reported in `problem` and
/// treated as **location services off** — an administrator's restriction never silently lapses.
public struct LocationPolicy: Sendable, Equatable {
    /// False: no app gets a location on this machine.
    public var locationServicesEnabled = true
    /// Apps that may never have a location (`restricted`, whatever the user decided).
    public var restricted: Set<String> = []
    /// Apps authorized by the administrator, without asking (daemons).
    public var granted: [String: AuthorizationDecision] = [:]
    /// True: apps get locations only through gpslocd (docs/broker.md) — the library has no
    /// direct mode, and without gpslocd nothing is delivered and the error says to start it.
    /// It binds programs that use the library; gpsd confined to gpslocd binds the rest.
    public var brokerRequired = false
    /// Why the file could not be used, when it could not.
    public var problem: FileProblem?

    /// No policy: services on, nothing restricted or granted.
    public init() {}

    /// The administrator's policy file.
    public static let defaultPath = "/etc/gpslocation/policy.json"

    /// `GPSLOCATION_POLICY`: a further policy whose restrictions are added (see the type).
    public static var additionalPath: String? {
        guard let path = ProcessInfo.processInfo.environment["GPSLOCATION_POLICY"], !path.isEmpty else { return nil }
        return path
    }

    /// The policy in force: the administrator's (`path`), plus the restrictions of
    /// `GPSLOCATION_POLICY`'s file — services off there turns them off, its restricted apps are
    /// restricted; its grants are ignored (and said so in `problem`).
    public static func effective(path: String = defaultPath, additional: String? = additionalPath) -> LocationPolicy {
        var policy = load(path: path)
        guard let additional, additional != path else { return policy }
        let extra = load(path: additional)
        if !extra.locationServicesEnabled { policy.locationServicesEnabled = false }
        if extra.brokerRequired { policy.brokerRequired = true }
        policy.restricted.formUnion(extra.restricted)
        var problems = [policy.problem, extra.problem].compactMap { $0 }
        if !extra.granted.isEmpty {
            problems.append(
                .policyGrantsIgnored(additional: additional, apps: extra.granted.keys.sorted(), path: path))
        }
        policy.problem = problems.count > 1 ? .several(problems) : problems.first
        return policy
    }

    /// One policy file as it is (see `effective` for the one in force).
    public static func load(path: String = LocationPolicy.defaultPath) -> LocationPolicy {
        var policy = LocationPolicy()
        var info = stat()
        guard lstat(path, &info) == 0 else { return policy }
        // Only a file that no one else can have edited is trusted (`TrustedFile`): it and its
        // folder owned by root (or the user running this, who could grant themselves anyway)
        // and writable by nobody else, a regular file, not a link.
        if let problem = TrustedFile.problem(path, maximumSize: maximumSize, administrator: true) {
            policy.locationServicesEnabled = false
            policy.problem = .policyNotTrusted(problem)
            return policy
        }
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            let file = try JSONDecoder().decode(PolicyFile.self, from: data)
            // A misspelled key must not let a restriction lapse silently: unknown keys make the
            // policy invalid (services off), named in the report.
            if !file.unknown.isEmpty { throw PolicyError.unknownKeys(file.unknown) }
            if let flag = file.locationServicesEnabled { policy.locationServicesEnabled = flag }
            if let flag = file.brokerRequired { policy.brokerRequired = flag }
            if let names = file.restricted { policy.restricted = Set(names) }
            for (app, entry) in file.granted ?? [:] {
                let unknownInEntry = Set(entry.keys).subtracting(["status", "accuracy"])
                if !unknownInEntry.isEmpty {
                    throw PolicyError.unknownKeys(unknownInEntry.sorted().map { "granted.\(app).\($0)" })
                }
                let stored = DecisionStore.Entry(
                    status: entry["status"] ?? "", accuracy: entry["accuracy"] ?? "full", decidedAt: Date())
                guard let decision = DecisionStore.decision(from: stored) else { throw PolicyError.invalid }
                policy.granted[app] = decision
            }
        } catch {
            policy = LocationPolicy()
            policy.locationServicesEnabled = false
            if case PolicyError.unknownKeys(let keys) = error {
                policy.problem = .policyUnknownKeys(path: path, keys: keys)
            } else {
                policy.problem = .policyUnreadable(path: path)
            }
        }
        return policy
    }

    /// The largest policy read.
    static let maximumSize = 1 << 20

    private enum PolicyError: Error {
        case unknownKeys([String])
        case invalid
    }

    /// The file's form: each key of its type, or the file is invalid; keys it does not know
    /// are collected (`unknown`), never skipped.
    private struct PolicyFile: Decodable {
        var locationServicesEnabled: Bool?
        var brokerRequired: Bool?
        var restricted: [String]?
        var granted: [String: [String: String]]?
        var unknown: [String] = []

        private struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            let known: Set<String> = ["locationServicesEnabled", "restricted", "granted", "brokerRequired"]
            unknown = container.allKeys.map(\.stringValue).filter { !known.contains($0) }.sorted()
            // A key that is there must hold its type: `null` is not "absent" (it would turn a
            // restriction off), it makes the file invalid.
            func value<T: Decodable>(_ type: T.Type, _ name: String) throws -> T? {
                let key = Key(stringValue: name)
                return container.contains(key) ? try container.decode(type, forKey: key) : nil
            }
            locationServicesEnabled = try value(Bool.self, "locationServicesEnabled")
            brokerRequired = try value(Bool.self, "brokerRequired")
            restricted = try value([String].self, "restricted")
            granted = try value([String: [String: String]].self, "granted")
        }
    }

    /// The decision the policy imposes on `app`, if any: services off → denied, restricted →
    /// restricted, pre-granted → that grant.
    public func decision(for app: String) -> AuthorizationDecision? {
        if !locationServicesEnabled { return AuthorizationDecision(status: .denied) }
        if restricted.contains(app) { return AuthorizationDecision(status: .restricted) }
        return granted[app]
    }
}

extension AuthorizationDecision {
    /// Which decision holds, the one precedence rule (#51), from the strongest:
    /// 1. the administrator's policy file (`LocationPolicy`), for every uid;
    /// 2. a refusal (`restricted` or `denied`) the administrator made for this uid's app
    ///    (`administrator`: gpslocd's `STATE/users/UID/administrator/`, written only by root's
    ///    `gpsloc auth … --uid`) — neither the user nor a service running as that uid lifts it;
    /// 3. the user's own decision (`store`): a person may refuse what the administrator allowed;
    /// 4. the administrator's grant, when the user has not decided;
    /// nil: not determined.
    public static func resolve(
        app: String, store: DecisionStore, administrator: DecisionStore? = nil, policyPath: String
    ) -> AuthorizationDecision? {
        if let policy = LocationPolicy.effective(path: policyPath).decision(for: app) { return policy }
        let imposed = administrator?.decision(for: app)
        if let imposed, imposed.status.refusesAll { return imposed }
        return store.decision(for: app) ?? imposed
    }
}
