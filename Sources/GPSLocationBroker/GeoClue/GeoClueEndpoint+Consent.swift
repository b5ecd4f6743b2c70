import CGeoClueBus
import FoundationEssentials
import GNSSCore
import Glibc
import LocationCore
import LocationWords

// A client's life: Start through consent, delivery through the feed, revocation, Stop, and
// the end of its connection. Part of `GeoClueEndpoint`, on the bus thread.
extension GeoClueEndpoint {
    /// The authorization a client is served under now: the agent's answer for this client,
    /// else the app's decision (`BrokerService`'s, the socket's own), with reduced accuracy
    /// below street level. A started desktop client is in use (there is no terminal to judge).
    func authorization(of client: Client) -> AuthorizationState? {
        guard let app = client.app else { return nil }
        let decision = client.once ?? service.currentDecision(BrokerService.Key(uid: client.identity.uid, app: app))
        return AuthorizationState(
            appID: app, status: decision.status,
            accuracy: GeoClueLevel.accuracy(level: client.level, granted: decision.accuracy), isInUse: true)
    }

    func start(_ client: Client, _ call: OpaquePointer, _ error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
        if client.active { return BusMessage.reply(call) }
        guard client.pendingStart == nil else {
            return gcb_error(error, BusMessage.failed, "a Start of this client is already waiting for consent")
        }
        let label = client.desktopID
        guard BrokerService.isValidLabel(label) else {
            return gcb_error(
                error, BusMessage.invalidArgs,
                label.isEmpty
                    ? "set DesktopId first (the desktop file's name): it names the app whose decision applies"
                    : "DesktopId must be 1–128 letters, digits, '.', '_', '-' or '@', not \"\(label)\"")
        }
        guard client.level > GeoClueLevel.none else {
            return gcb_error(error, BusMessage.invalidArgs, "RequestedAccuracyLevel 0 (none) asks for no location")
        }
        let app = client.identity.appID(label: label)
        client.app = app
        client.startGeneration += 1
        guard let authorization = authorization(of: client) else { return -EINVAL }
        switch authorization.status {
        case .authorizedAlways, .authorizedWhenInUse:
            return run(client, call, error)
        case .denied, .restricted:
            service.audit("geoclue refused uid=\(client.identity.uid) pid=\(client.identity.pid) app=\(app)")
            return gcb_error(
                error, BusMessage.accessDenied,
                "location is \(authorization.status == .restricted ? "restricted by the administrator" : "denied") "
                    + "for \(app) (uid \(client.identity.uid))"
                    + (authorization.status == .restricted ? "" : ": `gpsloc auth grant \(app)` allows it"))
        default:
            return ask(client, call, app: app, error)
        }
    }

    /// No decision: the uid's GeoClue agent is asked, else its `gpsloc agent`, else the Start is
    /// refused naming the command that decides. Nothing is sent meanwhile.
    private func ask(_ client: Client, _ call: OpaquePointer, app: String, _ error: UnsafeMutablePointer<sd_bus_error>?)
        -> Int32
    {
        let uid = client.identity.uid
        let generation = client.startGeneration
        let clientID = client.id
        if let agent = agents[uid] {
            var message: OpaquePointer?
            var r = sd_bus_message_new_method_call(
                bus, &message, agent, "/org/freedesktop/GeoClue2/Agent", "org.freedesktop.GeoClue2.Agent",
                "AuthorizeApp")
            if r >= 0, let message {
                defer { sd_bus_message_unref(message) }
                r = BusMessage.append(message, .string(client.desktopID))
                if r >= 0 { r = BusMessage.append(message, .uint32(client.level)) }
                let context = Unmanaged.passRetained(
                    AgentCall(endpoint: self, client: clientID, generation: generation))
                if r >= 0 {
                    r = sd_bus_call_async(
                        bus, nil, message, geoClueAgentAnswered, context.toOpaque(),
                        UInt64(service.promptTimeout * 1_000_000))
                }
                if r < 0 { context.release() }
            }
            if r >= 0 {
                client.pendingStart = sd_bus_message_ref(call)
                return 1
            }
            BrokerServer.log("geoclue: cannot ask uid \(uid)'s agent (\(BusMessage.errnoText(r)))")
        }
        let face = face
        let asked = service.askAgent(
            BrokerService.Key(uid: uid, app: app), identity: client.identity, always: false,
            usage: "asks GeoClue for its location (DesktopId \(client.desktopID))"
        ) { decision, once, why in
            face.post { endpoint in endpoint.answered(clientID, generation, decision, once: once, why: why) }
        }
        if asked {
            client.pendingStart = sd_bus_message_ref(call)
            return 1
        }
        service.audit("geoclue refused uid=\(uid) pid=\(client.identity.pid) app=\(app) (no one to ask)")
        return gcb_error(
            error, BusMessage.accessDenied,
            "no one can be asked for location permission for \(app) (uid \(uid) has no GeoClue agent and no "
                + "`gpsloc agent` running): nothing is sent until it is granted — run `gpsloc auth grant \(app) "
                + "--when-in-use`, or keep `gpsloc agent` running to be asked")
    }

    /// An agent's answer (or none) for client `clientID`'s Start number `generation`.
    func answered(_ clientID: Int, _ generation: Int, _ decision: AuthorizationDecision?, once: Bool, why: String) {
        guard let client = clients[clientID], client.startGeneration == generation, let call = client.pendingStart
        else { return }
        client.pendingStart = nil
        defer { sd_bus_message_unref(call) }
        guard let decision, decision.status.isAuthorized else {
            service.audit("geoclue refused uid=\(client.identity.uid) app=\(client.app ?? "-") (\(why))")
            BusMessage.replyError(
                call, BusMessage.accessDenied,
                decision == nil
                    ? "no location permission for \(client.app ?? "the app"): \(why)"
                    : "the agent refused location to \(client.app ?? "the app")")
            return
        }
        if once { client.once = decision }
        var error = sd_bus_error()
        defer { sd_bus_error_free(&error) }
        if run(client, call, &error) < 0 {
            sd_bus_reply_method_error(call, &error)
        }
    }

    /// Starts `client` in the feed under its authorization now and answers the Start.
    private func run(_ client: Client, _ call: OpaquePointer, _ error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
        guard let authorization = authorization(of: client), authorization.allowsDelivery else {
            return gcb_error(error, BusMessage.accessDenied, "location is not authorized for \(client.app ?? "")")
        }
        let face = face
        let clientID = client.id
        client.fed = true
        face.feed.add(
            clientID, reduced: authorization.accuracy == .reducedAccuracy, distance: client.distance,
            interval: client.time, deliver: { face.post { $0.deliver(clientID) } },
            problem: { problem in face.post { $0.problem(clientID, problem) } })
        client.active = true
        let row = GeoClueFace.Row(
            uid: client.identity.uid, pid: client.identity.pid, app: authorization.appID,
            identity: client.identity.kind, authorization: authorization, active: true, since: Date())
        face.rows.withLock { $0[client.id] = row }
        service.audit(
            "geoclue start uid=\(client.identity.uid) pid=\(client.identity.pid) app=\(authorization.appID) "
                + "level=\(client.level) accuracy=\(authorization.accuracy.name)")
        let r = BusMessage.reply(call)
        activeChanged(client)
        return r < 0 ? r : 1
    }

    /// Takes `client` out of the feed; says so when it was active.
    func stop(_ client: Client, why: String) {
        client.startGeneration += 1
        if let call = client.pendingStart {
            client.pendingStart = nil
            BusMessage.replyError(call, BusMessage.failed, "stopped before consent was given")
            sd_bus_message_unref(call)
        }
        unfeed(client)
        client.once = nil
        guard client.active else { return }
        client.active = false
        face.rows.withLock { $0[client.id]?.active = false }
        service.audit("geoclue stop uid=\(client.identity.uid) app=\(client.app ?? "-") (\(why))")
        activeChanged(client)
    }

    /// Stops and forgets `client` (DeleteClient).
    func remove(_ client: Client) {
        drop(client, notify: true)
        clients[client.id] = nil
        if let peer = peers[client.owner] {
            peer.clients.removeAll { $0 == client.id }
            if peer.defaultClient == client.id { peer.defaultClient = nil }
        }
    }

    func drop(_ client: Client, notify: Bool) {
        face.rows.withLock { $0[client.id] = nil }
        if notify {
            stop(client, why: "deleted")
        } else {
            unfeed(client)
            if let call = client.pendingStart { sd_bus_message_unref(call) }
            client.pendingStart = nil
        }
    }

    func unfeed(_ client: Client) {
        guard client.fed else { return }
        client.fed = false
        face.feed.remove(client.id)
    }

    /// A connection left the bus: its clients stop and are forgotten, its agent too.
    func vanished(_ name: String) {
        guard let peer = peers.removeValue(forKey: name) else {
            for (uid, agent) in agents where agent == name { agents[uid] = nil }
            return
        }
        for id in peer.clients {
            if let client = clients.removeValue(forKey: id) { drop(client, notify: false) }
        }
        for (uid, agent) in agents where agent == name { agents[uid] = nil }
        if peer.identity.pidfd >= 0 { Glibc.close(peer.identity.pidfd) }
        updateInUse()
    }

    /// A decision changed (`key`; nil: maybe any): each running client of it is checked again
    /// at once — refused ones stop (Active false: where-am-i quits), the others get the new
    /// accuracy.
    func decisionsChanged(_ key: BrokerService.Key?) {
        for client in clients.values {
            guard let app = client.app else { continue }
            if let key, key.uid != client.identity.uid || key.app != app { continue }
            if key != nil { client.once = nil }
            reauthorize(client)
        }
    }

    /// Applies the client's authorization now, or stops it.
    func reauthorize(_ client: Client) {
        guard client.active, client.fed else { return }
        guard let authorization = authorization(of: client), authorization.allowsDelivery else {
            return stop(client, why: "authorization revoked")
        }
        face.feed.update(client.id, reduced: authorization.accuracy == .reducedAccuracy)
        face.rows.withLock { $0[client.id]?.authorization = authorization }
    }

    /// The feed has a location for client `clientID`: a new Location object, the signal to the
    /// client, the one before it kept until then and the older ones removed. Checked again
    /// here against the client's authorization now (fails closed: a location of a grant
    /// revoked meanwhile, or a precise one when only reduced is allowed now, is not sent).
    func deliver(_ clientID: Int) {
        // The core's rule for a location held since it was computed (the last-location cache's):
        // with reduced accuracy, only a reduced one.
        guard let client = clients[clientID], client.active, client.fed,
            let value = face.feed.take(clientID), let authorization = authorization(of: client),
            authorization.allowsDelivery,
            AuthorizationDecision(status: authorization.status, accuracy: authorization.accuracy).permits(
                cached: value)
        else { return }
        face.rows.withLock { $0[client.id]?.lastDelivery = Date() }
        let old = client.locationPath
        client.locations.append(LocationRecord(id: client.nextLocation, value: value))
        client.nextLocation += 1
        if client.locations.count > 2 { client.locations.removeFirst(client.locations.count - 2) }
        let new = client.locationPath
        BusMessage.propertiesChanged(
            bus, path: client.path, interface: BusMessage.clientInterface, [("Location", .objectPath(new))],
            to: client.owner)
        BusMessage.signal(
            bus, path: client.path, interface: BusMessage.clientInterface, member: "LocationUpdated",
            [.objectPath(old), .objectPath(new)], to: client.owner)
    }

    /// An error of the feed's engine: logged; one that ends updates stops the client.
    func problem(_ clientID: Int, _ error: CLError) {
        guard let client = clients[clientID] else { return }
        BrokerServer.log("geoclue: client \(clientID) (\(client.app ?? "-"), uid \(client.identity.uid)): \(error)")
        if error.endsUpdates { stop(client, why: error.description) }
    }

    func activeChanged(_ client: Client) {
        BusMessage.propertiesChanged(
            bus, path: client.path, interface: BusMessage.clientInterface, [("Active", .bool(client.active))],
            to: client.owner)
        updateInUse()
    }

    /// The Manager's `InUse`: whether any client is active (the desktop's location indicator).
    func updateInUse() {
        let now = clients.values.contains { $0.active }
        guard now != inUse else { return }
        inUse = now
        BusMessage.propertiesChanged(
            bus, path: BusMessage.managerPath, interface: BusMessage.managerInterface, [("InUse", .bool(now))],
            to: nil)
    }
}

/// What an `AuthorizeApp` call was for (retained by sd-bus's call until it is answered).
final class AgentCall {
    unowned let endpoint: GeoClueEndpoint
    let client: Int
    let generation: Int
    init(endpoint: GeoClueEndpoint, client: Int, generation: Int) {
        self.endpoint = endpoint
        self.client = client
        self.generation = generation
    }
}

/// The GeoClue agent's answer to `AuthorizeApp(desktop_id, level)`: `(b authorized, u level)`.
private let geoClueAgentAnswered: sd_bus_message_handler_t = { reply, userdata, _ in
    guard let userdata else { return 0 }
    let call = Unmanaged<AgentCall>.fromOpaque(userdata).takeRetainedValue()
    guard let reply else { return 0 }
    if let (name, message) = BusMessage.error(of: reply) {
        call.endpoint.answered(
            call.client, call.generation, nil, once: true, why: "the GeoClue agent did not answer (\(name): \(message))"
        )
        return 0
    }
    guard let authorized = BusMessage.readBool(reply), let level = BusMessage.readUInt32(reply) else {
        call.endpoint.answered(
            call.client, call.generation, nil, once: true, why: "the GeoClue agent's answer was malformed")
        return 0
    }
    let decision =
        authorized && level > GeoClueLevel.none
        ? AuthorizationDecision(status: .authorizedWhenInUse, accuracy: GeoClueLevel.granted(level: level))
        : AuthorizationDecision(status: .denied)
    call.endpoint.answered(call.client, call.generation, decision, once: true, why: "the GeoClue agent answered")
    return 0
}
