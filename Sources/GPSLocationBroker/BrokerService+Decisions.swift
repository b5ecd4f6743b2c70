import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// Decisions: who may make them, where they are kept, which one holds, and telling programs.
///
/// Each uid has two stores in gpslocd's state folder: its own (`users/UID/`, what the user — or
/// the service running as that uid — decided) and the administrator's (`users/UID/administrator/`,
/// what root decided for that uid with `--uid`). Which holds is `LocationAuthorizer.resolve`'s one
/// rule: root's refusals cannot be lifted by the uid; otherwise the uid's own decision, then root's
/// grant. An agent's "allow once" belongs to the connection it was given to (`BrokerClient.once`).
extension BrokerService {
    // MARK: Decisions

    func decision(_ key: Key, in state: inout State) -> AuthorizationDecision {
        if let known = state.decisions[key] { return known }
        let decided =
            AuthorizationDecision.resolve(
                app: key.app, store: store(key.uid), administrator: administratorStore(key.uid), policyPath: policyPath)
            ?? AuthorizationDecision(status: .notDetermined)
        state.decisions[key] = decided
        return decided
    }

    /// The decision that holds for `key` now (another face's clients: GeoClue).
    func currentDecision(_ key: Key) -> AuthorizationDecision {
        state.withLock { decision(key, in: &$0) }
    }

    /// The decision that holds for this connection: its "once", else the app's.
    func decision(for client: BrokerClient, app: String, in state: inout State) -> AuthorizationDecision {
        client.once ?? decision(Key(uid: client.identity.uid, app: app), in: &state)
    }

    func authorization(of client: BrokerClient, app: String, in state: inout State) -> AuthorizationState {
        let decided = decision(for: client, app: app, in: &state)
        return AuthorizationState(
            appID: app, status: decided.status, accuracy: decided.accuracy, isInUse: client.inUse)
    }

    /// The uid's own decisions.
    private func store(_ uid: UInt32) -> DecisionStore {
        DecisionStore(directory: userDirectory(uid)) { diagnostic in
            BrokerServer.log(diagnostic.message)
        }
    }

    /// What root decided for the uid's apps (none for uid 0: root's own are its own).
    private func administratorStore(_ uid: UInt32) -> DecisionStore? {
        guard uid != 0 else { return nil }
        return DecisionStore(directory: userDirectory(uid).appendingPathComponent("administrator")) { diagnostic in
            BrokerServer.log(diagnostic.message)
        }
    }

    func userDirectory(_ uid: UInt32) -> URL {
        stateDirectory.appendingPathComponent("users").appendingPathComponent(String(uid))
    }

    /// Records `decision` (nil: forgets it) — as the administrator's (`byAdministrator`) or the
    /// uid's own — and tells every program of that app at once. A "once" for a connection
    /// ends with any decision made after it.
    func decide(_ key: Key, _ decision: AuthorizationDecision?, byAdministrator: Bool = false) throws(DecisionStore
        .StoreError)
    {
        let imposed = byAdministrator ? administratorStore(key.uid) : nil
        if let decision {
            try (imposed ?? store(key.uid)).set(decision, for: key.app)
        } else {
            // Root forgets both; the uid, its own.
            try imposed?.remove(app: key.app)
            try store(key.uid).remove(app: key.app)
            lastFixes.remove(uid: key.uid, app: key.app)
        }
        let affected = state.withLock { state -> [BrokerClient] in
            state.decisions[key] = nil
            let affected = state.clients.values.filter { $0.identity.uid == key.uid && $0.app == key.app }
            for client in affected { client.once = nil }
            return affected
        }
        for client in affected { tellAuthorization(client, app: key.app) }
        decisionsChanged.withLock { $0 }?(key)
        audit(
            "decide uid=\(key.uid) app=\(key.app) status=\(decision?.status.name ?? "notDetermined") "
                + "accuracy=\(decision?.accuracy.name ?? "-")\(byAdministrator ? " by=administrator" : "")")
    }

    /// An agent's "allow once": for the requesting connection only, kept in memory.
    func allowOnce(_ client: BrokerClient, _ key: Key, _ decision: AuthorizationDecision) {
        state.withLock { _ in client.once = decision }
        tellAuthorization(client, app: key.app)
        audit(
            "decide uid=\(key.uid) app=\(key.app) status=\(decision.status.name) accuracy=\(decision.accuracy.name) "
                + "once pid=\(client.identity.pid)")
    }

    /// Sends `client` its authorization now, and starts or stops its reduced session to match.
    /// The line is queued under the service's lock with the decision it states: two changes
    /// reach the program in the order they were made, and no location checked against the
    /// decision before is sent after it (`BrokerClient.sendAuthorization`).
    func tellAuthorization(_ client: BrokerClient, app: String) {
        state.withLock { state in
            let current = authorization(of: client, app: app, in: &state)
            var line = BrokerLine("AUTHORIZATION")
            line.add("status", current.status.name)
            line.add("accuracy", current.accuracy.name)
            line.add("inUse", current.isInUse)
            client.sendAuthorization(line.line)
        }
        reconcile(client)
    }

    /// Who may change `uid`'s decisions: root, or the same uid outside a sandbox.
    private func mayDecide(_ client: BrokerClient, for uid: UInt32) -> Bool {
        client.identity.uid == 0 || (client.identity.uid == uid && client.identity.flatpak == nil)
    }

    func change(_ message: BrokerMessage, _ client: BrokerClient, _ id: Int) {
        guard let app = message.string("app"), Self.isValidLabel(app) else {
            return reply(client, id, ok: false, message: "name the app (letters, digits, '.', '_' or '-')")
        }
        let uid = message.int("uid").map { UInt32(clamping: $0) } ?? client.identity.uid
        guard mayDecide(client, for: uid) else {
            return reply(
                client, id, ok: false,
                message: client.identity.flatpak != nil
                    ? "a sandboxed app cannot decide for itself"
                    : "only root may decide for another user's apps (uid \(uid)); run it as root with --uid \(uid)")
        }
        // Root deciding for another uid decides as the administrator (above the uid's own).
        let byAdministrator = client.identity.uid == 0 && uid != 0
        var decision: AuthorizationDecision?
        if message.messageClass == "GRANT" {
            guard let status = message.string("status").flatMap(BrokerProtocol.status(named:)),
                status != .notDetermined,
                let accuracy = BrokerProtocol.accuracy(named: message.string("accuracy") ?? "full")
            else { return reply(client, id, ok: false, message: "status must be always, whenInUse or denied") }
            if status == .restricted && client.identity.uid != 0 {
                return reply(client, id, ok: false, message: "only the administrator restricts an app")
            }
            decision = AuthorizationDecision(status: status, accuracy: accuracy)
        }
        let imposed = byAdministrator ? nil : administratorStore(uid)?.decision(for: app)
        if let imposed, imposed.status.refusesAll, decision.map({ !$0.status.refusesAll }) ?? false {
            return reply(
                client, id, ok: false,
                message: "the administrator has \(imposed.status == .restricted ? "restricted" : "denied") \(app) for "
                    + "uid \(uid); only root can lift it (sudo gpsloc auth reset \(app) --uid \(uid))")
        }
        do {
            try decide(Key(uid: uid, app: app), decision, byAdministrator: byAdministrator)
            var said = decision == nil ? "forgot the decision for \(app) (uid \(uid))" : "decided"
            if decision == nil, let imposed, imposed.status.refusesAll {
                said += "; the administrator's \(imposed.status.name) still holds"
            }
            reply(client, id, ok: true, message: said)
        } catch {
            reply(client, id, ok: false, message: error.description)
        }
    }

    /// The uid's decisions, its own and the administrator's (`by`), each as stored; which holds
    /// is `resolve`'s rule.
    func list(_ message: BrokerMessage, _ client: BrokerClient, _ id: Int) {
        let uid = message.int("uid").map { UInt32(clamping: $0) } ?? client.identity.uid
        guard mayDecide(client, for: uid) else {
            return reply(client, id, ok: false, message: "only root may list another user's decisions")
        }
        do {
            var rows: [String] = []
            for (by, source) in [("user", Optional(store(uid))), ("administrator", administratorStore(uid))] {
                guard let source else { continue }
                let entries = try source.entries()
                for app in entries.keys.sorted() {
                    var row = BrokerLine("DECISION")
                    row.add("uid", Int(uid))
                    row.add("app", app)
                    row.add("status", entries[app]!.status)
                    row.add("accuracy", entries[app]!.accuracy)
                    row.add("decidedAt", entries[app]!.decidedAt.timeIntervalSince1970)
                    row.add("by", by)
                    rows.append(row.object)
                }
            }
            reply(client, id, ok: true, message: "\(rows.count) decision(s)", rows: rows)
        } catch {
            reply(client, id, ok: false, message: error.description)
        }
    }
}
