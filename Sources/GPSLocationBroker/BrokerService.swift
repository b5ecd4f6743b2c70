import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// gpslocd's decisions and sessions: what each connected program may receive, applied here, out
/// of its reach. The server's loop hands it each line; gpsd's reports reach it from one shared
/// connection (`GPSDLocationSource`).
///
/// Per program: its app id (`PeerIdentity.appID`) and uid key its decision, kept in
/// `STATE/users/UID/authorizations.json` (the decision store's format, owned by gpslocd's user,
/// mode 0600: no app can write it). Full accuracy: gpsd's reports pass as they are. Reduced: each
/// fix goes through the library's fuzzer rule in one pass (`ReducedSession`, no engine here) to
/// the grid point of the box's secret (`STATE/reduced/`), and only that point is sent,
/// on each fix. Not allowed: nothing but problems and receiver events.
package final class BrokerService: Sendable {
    let stateDirectory: URL
    let endpoint: GPSDEndpoint
    let policyPath: String
    /// How long an agent has to answer a prompt.
    let promptTimeout: TimeInterval

    struct Key: Hashable {
        var uid: UInt32
        var app: String
    }
    struct PendingPrompt {
        /// The socket program that asked (nil: another face, told through `answered`).
        var requester: BrokerClient?
        var requestID: Int
        var key: Key
        var agent: BrokerClient
        var deadline: Date
        /// Another face's request (a GeoClue client's Start): told the decision (nil: none,
        /// with why) and whether it holds for that request only (the agent's "allow once").
        var answered: (@Sendable (AuthorizationDecision?, _ once: Bool, _ why: String) -> Void)?
    }
    struct State {
        var clients: [Int: BrokerClient] = [:]
        var decisions: [Key: AuthorizationDecision] = [:]
        var reduced: [Int: ReducedSession] = [:]
        var agents: [UInt32: BrokerClient] = [:]
        var prompts: [Int: PendingPrompt] = [:]
        var nextPrompt = 1
        var lastDelivery: [Key: Date] = [:]
        var hubStarted = false
        /// gpsd's trouble as the shared connection last reported it (a PROBLEM line), until a
        /// fix or a reconnection: a program that starts watching meanwhile is told at once,
        /// not at the next once-a-minute notice.
        var hubProblem: String?
        /// Other faces' engines fed by gpsd's one connection (GeoClue clients), by token.
        var subscribers: [Int: @Sendable (LocationSourceEvent) -> Void] = [:]
        var nextSubscriber = 1
        /// `hubProblem` as the event it was.
        var lastProblem: LocationSourceEvent?
        /// gpsd's fixes and estimates of the last few seconds, in order (`recentSeconds`, at
        /// most `recentLimit`): a subscribing engine gets them first, so it learns the
        /// receiver's cycle from epochs already whole and delivers the current one at once,
        /// not two epochs later.
        var recent = RecentReports()
        /// Whether the hub decodes gpsd's SKY reports now, and the watching programs that asked
        /// for the sky, by id (`followSkyDemand`).
        var decodesSky = false
        var skyWatchers: Set<Int> = []
    }
    /// Told when decisions may have changed (the key; nil: any, after a policy change), after
    /// the socket programs are: another face re-checks its own clients (GeoClue).
    let decisionsChanged = Locked<(@Sendable (Key?) -> Void)?>(nil)
    /// The GeoClue face, while it serves (`serveGeoClue`).
    let geoClue = Locked<GeoClueFace?>(nil)
    let state = Locked(State())
    let hub: GPSDLocationSource
    /// The programs whose lines are held until the present burst of gpsd's reports ends, by id
    /// (touched on the hub's thread only; locked because the service is shared).
    let corked = Locked<[Int: BrokerClient]>([:])
    /// Whether a program is in use now (nil: it has gone), for tests that set it; otherwise
    /// `TerminalUse` judges each uid's connections on who holds them now.
    let inUseProbe: (@Sendable (BrokerClient) -> Bool?)?
    /// Follows the policy file (inotify): an administrator's edit reaches running programs.
    private let policyWatcher = Locked<FileChangeWatcher?>(nil)
    /// How often When In Use programs are asked again (`refreshInUse`).
    static let inUseInterval: DispatchTimeInterval = .seconds(1)
    /// Set once in init; a `DispatchSource` is Sendable (cancelled from any thread).
    private let inUseTimer: DispatchSource
    /// What each app last received (for its WELCOME's `last`).
    let lastFixes: LastFixes
    /// The box's one reduced-accuracy secret and kept cell (`STATE/reduced/`), for every uid and
    /// app: one receiver, one grid point. A secret per uid let an app granted reduced by several
    /// users intersect their cells (#51: three uids narrowed ~4 km to a ~1 km band). Android keeps
    /// one offset per device for the same reason.
    let reducedStore: ReducedAccuracyStore

    package init(
        stateDirectory: URL, endpoint: GPSDEndpoint, policyPath: String = LocationPolicy.defaultPath,
        promptTimeout: TimeInterval = 120,
        inUseProbe: (@Sendable (BrokerClient) -> Bool?)? = nil
    ) {
        self.stateDirectory = stateDirectory
        self.endpoint = endpoint
        self.policyPath = policyPath
        self.promptTimeout = promptTimeout
        // SKY is decoded only while someone asks for it (`followSkyDemand`).
        hub = GPSDLocationSource(endpoint: endpoint, sky: false)
        lastFixes = LastFixes { uid in
            stateDirectory.appendingPathComponent("users").appendingPathComponent(String(uid))
        }
        self.inUseProbe = inUseProbe
        reducedStore = ReducedAccuracyStore(directory: Self.boxReducedFolder(stateDirectory))
        inUseTimer = DispatchSource.sendable(
            DispatchSource.makeTimerSource(queue: DispatchQueue(label: "gpslocd.in-use")))
        inUseTimer.schedule(deadline: .now() + Self.inUseInterval, repeating: Self.inUseInterval)
        inUseTimer.setEventHandler { [weak self] in self?.refreshInUse() }
        inUseTimer.activate()
        let watcher = FileChangeWatcher(
            paths: [policyPath],
            onFailure: { why in
                BrokerServer.log("the policy is no longer followed (\(why)); restart gpslocd after editing it")
            },
            onChange: { [weak self] in self?.policyChanged() })
        policyWatcher.withLock { $0 = watcher }
    }

    /// The policy file changed: every decision is resolved again, and each program whose
    /// authorization changed is told at once (a restriction cuts a live session).
    func policyChanged() {
        let changed = state.withLock { state -> [(BrokerClient, String)] in
            let before = state.clients.values.compactMap { client -> (BrokerClient, String, AuthorizationState)? in
                guard let app = client.app else { return nil }
                return (client, app, authorization(of: client, app: app, in: &state))
            }
            state.decisions = [:]
            return before.compactMap { client, app, old in
                authorization(of: client, app: app, in: &state) == old ? nil : (client, app)
            }
        }
        if !changed.isEmpty { audit("policy changed: \(changed.count) program(s) told") }
        for (client, app) in changed { tellAuthorization(client, app: app) }
        decisionsChanged.withLock { $0 }?(nil)
    }

    // MARK: Connections

    func connected(_ client: BrokerClient) {
        state.withLock { $0.clients[client.id] = client }
    }

    func disconnected(_ client: BrokerClient) {
        client.markClosed()
        let (session, orphaned) = state.withLock { state -> (ReducedSession?, [PendingPrompt]) in
            state.clients[client.id] = nil
            followSkyDemand(&state, client: client)
            if state.agents[client.identity.uid] === client { state.agents[client.identity.uid] = nil }
            let orphaned = state.prompts.filter { $0.value.agent === client || $0.value.requester === client }
            for id in orphaned.keys { state.prompts[id] = nil }
            return (state.reduced.removeValue(forKey: client.id), Array(orphaned.values))
        }
        _ = session  // dropped: a session is a fuzzer and a point, nothing to stop
        if let app = client.app { lastFixes.flush(uid: client.identity.uid, app: app) }
        for prompt in orphaned where prompt.requester !== client {
            resolve(prompt, nil, once: false, message: "the agent went away before it answered")
        }
        if let app = client.app { audit("disconnect uid=\(client.identity.uid) pid=\(client.identity.pid) app=\(app)") }
    }

    /// One line from a program.
    func handle(_ message: BrokerMessage, from client: BrokerClient) {
        let id = message.int("id") ?? 0
        if client.app == nil && message.messageClass != "HELLO" {
            client.send(
                errorLine(
                    "say HELLO first: {\"class\":\"HELLO\",\"version\":\(BrokerProtocol.version),\"app\":\"NAME\"}"))
            return
        }
        switch message.messageClass {
        case "HELLO": hello(message, client)
        case "WATCH": watch(message, client)
        case "REQUEST": request(message, client, id)
        case "GRANT", "RESET": change(message, client, id)
        case "LIST": list(message, client, id)
        case "WHO": who(client, id)
        case "AGENT": becomeAgent(client, id)
        case "ANSWER": answer(message, client)
        default:
            client.send(errorLine("unknown class \(message.messageClass) (protocol version \(BrokerProtocol.version))"))
        }
    }

    private func hello(_ message: BrokerMessage, _ client: BrokerClient) {
        guard client.app == nil else { return client.send(errorLine("HELLO was already said")) }
        guard message.int("version") == BrokerProtocol.version else {
            return client.send(errorLine("this gpslocd speaks protocol version \(BrokerProtocol.version)"))
        }
        let label = message.string("app") ?? ""
        guard Self.isValidLabel(label) else {
            return client.send(errorLine("app must be 1–128 letters, digits, '.', '_' or '-', not \"\(label)\""))
        }
        let app = client.identity.appID(label: label)
        let (decision, mayKnow) = state.withLock { state -> (AuthorizationDecision, Bool) in
            client.app = app
            let decided = self.decision(for: client, app: app, in: &state)
            return (decided, authorization(of: client, app: app, in: &state).allowsDelivery)
        }
        var line = BrokerLine("WELCOME")
        line.add("version", BrokerProtocol.version)
        line.add("uid", Int(client.identity.uid))
        line.add("app", app)
        line.add("identity", client.identity.kind)
        line.add("inUse", client.inUse)
        line.add("status", decision.status.name)
        line.add("accuracy", decision.accuracy.name)
        // The last location the app received, while it may see it: authorized (and in use for
        // When In Use) now, and under reduced accuracy only a reduced one.
        if mayKnow, let last = lastFixes.entry(uid: client.identity.uid, app: app),
            last.reduced || decision.accuracy == .fullAccuracy
        {
            line.addRaw("last", last.object)
            if let estimate = last.estimate { line.addRaw("lastEstimate", estimate) }
        }
        client.send(line.line)
        audit(
            "connect uid=\(client.identity.uid) pid=\(client.identity.pid) app=\(app) identity=\(client.identity.kind)")
    }

    private func watch(_ message: BrokerMessage, _ client: BrokerClient) {
        let (startHub, problem) = state.withLock { state -> (Bool, String?) in
            client.watching = message.bool("enable") ?? true
            client.wantsSky = message.bool("sky") ?? false
            followSkyDemand(&state, client: client)
            defer { state.hubStarted = true }
            return (!state.hubStarted, client.watching ? state.hubProblem : nil)
        }
        if let problem { client.send(problem) }
        if startHub { self.startHub() }
        reconcile(client)
    }

    /// Starts or stops `client`'s reduced session to match its decision now.
    func reconcile(_ client: BrokerClient) {
        let change = state.withLock { state -> (start: Bool, stop: ReducedSession?) in
            guard let app = client.app else { return (false, nil) }
            let allowed = client.watching && authorization(of: client, app: app, in: &state).allowsDelivery
            let reduced = allowed && decision(for: client, app: app, in: &state).accuracy == .reducedAccuracy
            if reduced { return (state.reduced[client.id] == nil, nil) }
            return (false, state.reduced.removeValue(forKey: client.id))
        }
        guard change.start else { return }
        let session = ReducedSession(
            client: client, store: reducedStore,
            kept: { [weak self] line in
                guard let app = client.app else { return }
                self?.lastFixes.record(uid: client.identity.uid, app: app, line: line, reduced: true)
            },
            delivered: { [weak self] in
                guard let self, let app = client.app else { return }
                state.withLock { $0.lastDelivery[Key(uid: client.identity.uid, app: app)] = Date() }
            })
        state.withLock { state in
            guard state.clients[client.id] != nil, state.reduced[client.id] == nil else { return }
            state.reduced[client.id] = session
        }
    }

    // MARK: gpsd's reports

    /// Starts reading gpsd: each burst of reports (a receiver cycle's) goes to each program in
    /// one write, so it wakes once a cycle (`endBurst`).
    func startHub() {
        hub.start({ [weak self] event in self?.fromGPSD(event) }, burstEnded: { [weak self] in self?.endBurst() })
    }

    /// Sends what each program was given in the burst that just ended.
    func endBurst() {
        let held = corked.withLock { held in
            defer { held.removeAll(keepingCapacity: true) }
            return held
        }
        for client in held.values { client.uncork() }
    }

    func fromGPSD(_ event: LocationSourceEvent) {
        enum Audience { case everyone, full }
        let audience: Audience
        switch event {
        case .fix, .errorEstimate, .sky, .heading: audience = .full
        case .device, .notice, .problem: audience = .everyone
        }
        let isProblem = if case .problem = event { true } else { false }
        // Written only when someone reads it: a problem is kept for programs to come; any other
        // line only when a program gets it (a SKY line costs as much as decoding it, and most
        // programs do not ask for the sky).
        let problemLine = isProblem ? BrokerProtocol.line(for: event, words: .said) : nil
        let clearsProblem =
            switch event {
            case .fix(let fix): fix.hasPosition
            case .notice(let note): note.code == "reconnected"
            default: false
            }
        let isSky = if case .sky = event { true } else { false }
        let isFix = if case .fix(let fix) = event { fix.hasPosition } else { false }
        let isEstimate = if case .errorEstimate = event { true } else { false }
        var subscribers: [@Sendable (LocationSourceEvent) -> Void] = []
        // Each target with the authorization epoch its decision was checked at: a line whose
        // program has been sent an AUTHORIZATION line since is not sent (`BrokerClient.send`).
        let (targets, reduced) = state.withLock { state -> ([(BrokerClient, Int)], [(ReducedSession, Int)]) in
            if let problemLine {
                state.hubProblem = problemLine
                state.lastProblem = event
            } else if clearsProblem {
                state.hubProblem = nil
                state.lastProblem = nil
            }
            subscribers = Array(state.subscribers.values)
            state.recent.remember(event)
            // Reduced programs get fixes and headings through their session (one pass: the
            // fuzzer on gpsd's fix); sky and estimates never.
            // Each checked against the decision now, as the full programs are: fails closed
            // even if a revocation's reconcile has not run yet.
            let reduced =
                audience == .full
                ? state.reduced.compactMap { id, session -> (ReducedSession, Int)? in
                    guard let client = state.clients[id], client.watching, let app = client.app else { return nil }
                    let authorization = authorization(of: client, app: app, in: &state)
                    guard authorization.allowsDelivery, authorization.accuracy == .reducedAccuracy else { return nil }
                    return (session, client.epoch)
                } : []
            let full = state.clients.values.compactMap { client -> (BrokerClient, Int)? in
                guard client.watching, let app = client.app else { return nil }
                if audience == .everyone { return (client, client.epoch) }
                if isSky && !client.wantsSky { return nil }
                let authorization = authorization(of: client, app: app, in: &state)
                guard authorization.allowsDelivery, authorization.accuracy == .fullAccuracy else { return nil }
                if isFix { state.lastDelivery[Key(uid: client.identity.uid, app: app)] = Date() }
                return (client, client.epoch)
            }
            return (full, reduced)
        }
        for (session, epoch) in reduced { session.send(event, epoch: epoch) }
        for subscriber in subscribers { subscriber(event) }
        guard !targets.isEmpty else { return }
        let line = problemLine ?? BrokerProtocol.line(for: event, words: .said)
        if audience == .full {
            // Held until the burst ends (`endBurst`, on this same thread, after the burst's
            // last report): the cycle's lines reach each program in one write.
            corked.withLock { held in
                for (client, _) in targets where held.updateValue(client, forKey: client.id) == nil { client.cork() }
            }
        }
        for (client, epoch) in targets {
            // A revocation that came first: not sent, so not kept as its last location.
            _ = client.sendLocation(line, droppable: audience == .full, epoch: audience == .full ? epoch : nil) {
                if isFix, let app = client.app {
                    lastFixes.record(uid: client.identity.uid, app: app, line: line, reduced: false)
                } else if isEstimate, let app = client.app {
                    lastFixes.recordEstimate(uid: client.identity.uid, app: app, line: line)
                }
            }
        }
    }

    /// Asks again whether each When In Use program is in use (`inUseProbe`), and tells those
    /// that changed: one that leaves the terminal's foreground stops receiving within a second
    /// (`inUseInterval`), one that comes back starts again. Apple's When In Use is the same rule.
    func refreshInUse() {
        let candidates = state.withLock { state -> [(BrokerClient, String)] in
            state.clients.values.compactMap { client in
                guard let app = client.app, !client.isAgent,
                    decision(for: client, app: app, in: &state).status == .authorizedWhenInUse
                else { return nil }
                return (client, app)
            }
        }
        var verdicts: [Int: (inUse: Bool, reason: String)] = [:]
        if let inUseProbe {
            for (client, _) in candidates { verdicts[client.id] = (inUseProbe(client) ?? false, "the test's probe") }
        } else {
            // One scan of /proc per uid, for all of its connections (a uid with 1,024 When In
            // Use connections costs one scan a second, not 1,024).
            for (uid, clients) in Dictionary(grouping: candidates.map(\.0), by: \.identity.uid) {
                let judged = TerminalUse.judge(
                    uid: uid,
                    clients.map {
                        TerminalUse.Connection(
                            id: $0.id, peerInode: $0.identity.peerInode, terminal: $0.identity.terminal)
                    })
                verdicts.merge(judged) { $1 }
            }
        }
        for (client, app) in candidates {
            // Gone, or not judged: not in use (in doubt, not in use).
            let now = verdicts[client.id] ?? (false, "it could not be judged")
            let changed = state.withLock { _ -> Bool in
                defer { client.inUse = now.inUse }
                return client.inUse != now.inUse
            }
            if changed {
                audit(
                    "inUse uid=\(client.identity.uid) pid=\(client.identity.pid) app=\(app) \(now.inUse)"
                        + (now.inUse ? "" : " (\(now.reason))"))
                tellAuthorization(client, app: app)
            }
        }
    }

    private func who(_ client: BrokerClient, _ id: Int) {
        let rows = state.withLock { state -> [String] in
            state.clients.values.sorted { $0.id < $1.id }.compactMap { other -> String? in
                guard let app = other.app, client.identity.uid == 0 || other.identity.uid == client.identity.uid,
                    !other.isAgent
                else { return nil }
                let current = authorization(of: other, app: app, in: &state)
                var row = BrokerLine("CLIENT")
                row.add("uid", Int(other.identity.uid))
                row.add("pid", Int(other.identity.pid))
                row.add("app", app)
                row.add("identity", other.identity.kind)
                row.add("watching", other.watching)
                row.add("status", current.status.name)
                row.add("accuracy", current.accuracy.name)
                row.add("inUse", current.isInUse)
                row.add("receiving", other.watching && current.allowsDelivery)
                row.add(
                    "lastDelivery", state.lastDelivery[Key(uid: other.identity.uid, app: app)]?.timeIntervalSince1970)
                row.add("since", other.connectedAt.timeIntervalSince1970)
                return row.object
            }
        }
        // GeoClue's clients that have started (D-Bus programs: Firefox, gammastep …).
        let started = geoClue.withLock { $0 }?.rows.withLock { Array($0.values) } ?? []
        let dbusRows = started.filter { client.identity.uid == 0 || $0.uid == client.identity.uid }
            .sorted { $0.since < $1.since }.map { other -> String in
                var row = BrokerLine("CLIENT")
                row.add("uid", Int(other.uid))
                row.add("pid", Int(other.pid))
                row.add("app", other.app)
                row.add("identity", other.identity)
                row.add("via", "geoclue")
                row.add("watching", other.active)
                row.add("status", other.authorization.status.name)
                row.add("accuracy", other.authorization.accuracy.name)
                row.add("inUse", other.authorization.isInUse)
                row.add("receiving", other.active && other.authorization.allowsDelivery)
                row.add("lastDelivery", other.lastDelivery?.timeIntervalSince1970)
                row.add("since", other.since.timeIntervalSince1970)
                return row.object
            }
        reply(
            client, id, ok: true, message: "\(rows.count + dbusRows.count) program(s) connected", rows: rows + dbusRows)
    }

    /// Stops gpsd's connection and ends every session (and the GeoClue face's clients).
    package func stop() {
        geoClue.withLock { face in
            defer { face = nil }
            return face
        }?.stop()
        state.withLock { $0.reduced = [:] }
        inUseTimer.cancel()
        policyWatcher.withLock { $0 = nil }
        hub.stop()
        // A burst the stop cut short: what it held goes.
        endBurst()
        // As a manager's stop: the last locations' writes are waited for, but not for ever.
        if !lastFixes.waitForWrites(timeout: LastLocationCache.finalWriteWait) {
            BrokerServer.log(
                "stopping without the last locations' writes: the disk has not answered for "
                    + "\(Int(LastLocationCache.finalWriteWait)) s (the locations kept may be older ones)")
        }
    }

    /// `STATE/reduced`. Before #51 each uid had its own (`STATE/users/UID/reduced`): on the first
    /// start after, the lowest uid's secret and kept cell become the box's, so that uid's apps see
    /// no change (another uid's apps see the box's grid from then on — one more grid, once).
    static func boxReducedFolder(_ stateDirectory: URL) -> URL {
        let box = stateDirectory.appendingPathComponent("reduced")
        let manager = FileManager.default
        guard !manager.fileExists(atPath: box.appendingPathComponent("secret.json").path) else { return box }
        let users = stateDirectory.appendingPathComponent("users")
        let uids = ((try? manager.contentsOfDirectory(atPath: users.path)) ?? []).compactMap(UInt32.init).sorted()
        for uid in uids {
            let old = users.appendingPathComponent(String(uid)).appendingPathComponent("reduced")
            guard manager.fileExists(atPath: old.appendingPathComponent("secret.json").path) else { continue }
            try? manager.createDirectory(
                at: box, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            for name in ["secret.json", ReducedAccuracyStore.fileName(for: "reduced")] {
                try? manager.copyItem(at: old.appendingPathComponent(name), to: box.appendingPathComponent(name))
            }
            break
        }
        return box
    }
}
