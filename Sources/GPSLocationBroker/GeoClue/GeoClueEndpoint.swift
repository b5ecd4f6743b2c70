import CGeoClueBus
import FoundationEssentials
import GNSSCore
import Glibc
import LocationCore
import LocationWords

/// The GeoClue face's bus connection and objects, owned by its thread (`GeoClueFace`): nothing
/// here is touched from another thread. Handlers are sd-bus's callbacks (`CGeoClueBus`).
final class GeoClueEndpoint {
    let bus: OpaquePointer
    unowned let face: GeoClueFace
    var service: BrokerService { face.service }

    /// A bus connection that has called us: who the bus says it is, and its clients.
    final class Peer {
        let name: String
        let identity: PeerIdentity
        var clients: [Int] = []
        /// The client `GetClient` returns (one per connection, as GeoClue does).
        var defaultClient: Int?
        init(name: String, identity: PeerIdentity) {
            self.name = name
            self.identity = identity
        }
    }

    /// A Location object: one delivered location, frozen.
    struct LocationRecord {
        var id: Int
        var value: LocationValue
    }

    /// A Client object.
    final class Client {
        let id: Int
        let owner: String
        let identity: PeerIdentity
        var desktopID = ""
        var level = GeoClueLevel.unset
        var distance: UInt32 = 0
        var time: UInt32 = 0
        var active = false
        /// The app id decisions are keyed by (set at Start from `DesktopId`).
        var app: String?
        /// Started in the feed (its locations come).
        var fed = false
        /// The current location and the one before it (kept until the client has had the next).
        var locations: [LocationRecord] = []
        var nextLocation = 1
        /// A Start waiting for an agent's answer (a reference held; answered once).
        var pendingStart: OpaquePointer?
        /// Counts Starts and Stops: an agent's answer for an older one is not applied.
        var startGeneration = 0
        /// A GeoClue agent's answer: for this client only, until it is stopped.
        var once: AuthorizationDecision?

        init(id: Int, owner: String, identity: PeerIdentity) {
            self.id = id
            self.owner = owner
            self.identity = identity
        }

        var path: String { BusMessage.clientPrefix + String(id) }
        var locationPath: String {
            locations.last.map { path + "/Location/" + String($0.id) } ?? "/"
        }
    }

    var peers: [String: Peer] = [:]
    var clients: [Int: Client] = [:]
    var nextClient = 1
    /// GeoClue agents (`AddAgent`), by uid: the unique bus name of the connection.
    var agents: [UInt32: String] = [:]
    /// Whether any client was active when last said (the Manager's `InUse`).
    var inUse = false

    /// Clients one connection may hold (each a few hundred bytes in the feed).
    static let clientsPerConnection = 16
    /// Connections of one uid gpslocd keeps an identity (and a pidfd) for.
    static let connectionsPerUID = 64

    init(face: GeoClueFace) throws(GeoClueFace.Failure) {
        self.face = face
        var opened: OpaquePointer?
        var r = sd_bus_open_system(&opened)
        guard r >= 0, let opened else {
            let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "the system bus"
            throw GeoClueFace.Failure(
                description: "cannot connect to \(address) (\(BusMessage.errnoText(r))): is dbus running? "
                    + "(`systemctl status dbus`)")
        }
        bus = opened
        gcb_set_handlers(geoClueMethod, geoClueGet, geoClueSet, geoClueFind)
        let me = Unmanaged.passUnretained(self).toOpaque()
        r = gcb_add_objects(bus, me)
        if r >= 0 {
            r = sd_bus_match_signal(
                bus, nil, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                geoClueNameOwnerChanged, me)
        }
        guard r >= 0 else {
            sd_bus_flush_close_unref(bus)
            throw GeoClueFace.Failure(description: "cannot set up GeoClue's objects (\(BusMessage.errnoText(r)))")
        }
        r = sd_bus_request_name(bus, "org.freedesktop.GeoClue2", 0)
        guard r >= 0 else {
            let owner = r == -EEXIST ? Self.owner(of: "org.freedesktop.GeoClue2", on: bus) : ""
            sd_bus_flush_close_unref(bus)
            let why =
                r == -EEXIST || r == -EALREADY
                ? "another program owns it\(owner) — GeoClue's own service, if it is /usr/libexec/geoclue: stop "
                    + "and mask it (`systemctl mask --now geoclue.service`), then start gpslocd again"
                : r == -EACCES
                    ? "the bus's policy does not let uid \(getuid()) own it: install gpslocd's policy "
                        + "(/usr/share/dbus-1/system.d/gpslocd-geoclue.conf, in the Debian package) and reload dbus"
                    : BusMessage.errnoText(r)
            throw GeoClueFace.Failure(description: "cannot own org.freedesktop.GeoClue2 on the system bus: \(why)")
        }
    }

    /// " (pid N, COMMAND)": who owns `name`, as the bus daemon says, or "" when it cannot tell.
    static func owner(of name: String, on bus: OpaquePointer) -> String {
        var creds: OpaquePointer?
        let mask = UInt64(SD_BUS_CREDS_PID) | UInt64(SD_BUS_CREDS_UNIQUE_NAME)
        guard sd_bus_get_name_creds(bus, name, mask, &creds) >= 0, let creds else { return "" }
        defer { sd_bus_creds_unref(creds) }
        var pid: pid_t = 0
        guard sd_bus_creds_get_pid(creds, &pid) >= 0, pid > 0 else { return "" }
        let command = (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8))?.trimmingWhitespace() ?? "?"
        return " (pid \(pid), \(command))"
    }

    func close() {
        for client in clients.values { drop(client, notify: false) }
        clients = [:]
        for peer in peers.values where peer.identity.pidfd >= 0 { Glibc.close(peer.identity.pidfd) }
        peers = [:]
        sd_bus_flush_close_unref(bus)
    }

    /// Waits for the bus or a posted job.
    func wait(wake: WakePipe) {
        var fds = [
            pollfd(fd: sd_bus_get_fd(bus), events: Int16(truncatingIfNeeded: sd_bus_get_events(bus)), revents: 0),
            pollfd(fd: wake.readDescriptor, events: Int16(POLLIN), revents: 0),
        ]
        var timeout: UInt64 = 0
        var milliseconds: Int32 = -1
        if sd_bus_get_timeout(bus, &timeout) > 0, timeout != UInt64.max {
            var now = timespec()
            clock_gettime(CLOCK_MONOTONIC, &now)
            let nowMicroseconds = UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
            milliseconds = timeout <= nowMicroseconds ? 0 : Int32(min((timeout - nowMicroseconds + 999) / 1000, 60_000))
        }
        _ = poll(&fds, 2, milliseconds)
        if fds[1].revents != 0 { wake.drain() }
    }

    // MARK: Who is calling

    /// The calling connection, identified the first time it calls: uid and pid from the bus
    /// daemon (never from the program), the rest read from /proc through a pidfd, as on the
    /// socket (`PeerIdentity.read`). Nil, with the error set, when it cannot be identified: it
    /// is refused.
    func peer(of call: OpaquePointer, _ error: UnsafeMutablePointer<sd_bus_error>?) -> Peer? {
        guard let sender = BusMessage.text(sd_bus_message_get_sender(call)) else {
            _ = gcb_error(error, BusMessage.accessDenied, "gpslocd cannot tell who is calling (no sender)")
            return nil
        }
        if let known = peers[sender] { return known }
        var creds: OpaquePointer?
        let mask = UInt64(SD_BUS_CREDS_EUID) | UInt64(SD_BUS_CREDS_PID)
        var uid: uid_t = 0
        var pid: pid_t = 0
        let r = sd_bus_query_sender_creds(call, mask, &creds)
        defer { if creds != nil { sd_bus_creds_unref(creds) } }
        guard r >= 0, sd_bus_creds_get_euid(creds, &uid) >= 0, sd_bus_creds_get_pid(creds, &pid) >= 0, pid > 0 else {
            _ = gcb_error(
                error, BusMessage.accessDenied,
                "the bus did not say who is calling (uid and pid): gpslocd serves only callers it can identify")
            return nil
        }
        guard peers.values.filter({ $0.identity.uid == uid }).count < Self.connectionsPerUID else {
            _ = gcb_error(
                error, BusMessage.limitsExceeded,
                "uid \(uid) already has \(Self.connectionsPerUID) connections with GeoClue clients; close some")
            return nil
        }
        do {
            let identity = try Self.identify(uid: uid, pid: pid)
            let peer = Peer(name: sender, identity: identity)
            peers[sender] = peer
            return peer
        } catch let failure {
            _ = gcb_error(error, BusMessage.accessDenied, "gpslocd cannot identify the caller: \(failure.description)")
            return nil
        }
    }

    /// The process `pid` of `uid`, pinned: it must still be `uid`'s (a pid reused by another
    /// user's process is refused) and alive after it was read.
    static func identify(uid: UInt32, pid: Int32) throws(PeerIdentity.Failure) -> PeerIdentity {
        let pidfd = PeerIdentity.openPidfd(pid)
        guard pidfd >= 0 else { throw PeerIdentity.Failure(description: "the caller (pid \(pid)) has exited") }
        do throws(PeerIdentity.Failure) {
            var status = stat()
            guard stat("/proc/\(pid)", &status) == 0, status.st_uid == uid else {
                throw PeerIdentity.Failure(description: "pid \(pid) is no longer the caller's (uid \(uid)) process")
            }
            var identity = try PeerIdentity.read(
                pid: pid, uid: uid, gid: status.st_gid, pidfd: pidfd, startedNoLaterThan: PeerIdentity.bootSeconds())
            identity.pidfd = pidfd
            return identity
        } catch {
            Glibc.close(pidfd)
            throw error
        }
    }

    /// The client at `path` if the current caller owns it.
    func ownedClient(_ path: String) -> Client? {
        guard path.hasPrefix(BusMessage.clientPrefix) else { return nil }
        let rest = path.dropFirst(BusMessage.clientPrefix.count)
        let number = rest.split(separator: "/", maxSplits: 1).first.flatMap { Int($0) }
        guard let number, let client = clients[number],
            let current = sd_bus_get_current_message(bus),
            BusMessage.text(sd_bus_message_get_sender(current)) == client.owner
        else { return nil }
        return client
    }

    // MARK: The objects

    /// Whether `path` names an object of `interface` that the caller may see: its own clients
    /// and their locations; anyone else's do not exist for it.
    func find(path: String, interface: String) -> Bool {
        guard let client = ownedClient(path) else { return false }
        if interface == BusMessage.clientInterface { return path == client.path }
        return location(at: path, of: client) != nil
    }

    func location(at path: String, of client: Client) -> LocationRecord? {
        let prefix = client.path + "/Location/"
        guard path.hasPrefix(prefix), let id = Int(path.dropFirst(prefix.count)) else { return nil }
        return client.locations.first { $0.id == id }
    }

    func method(_ call: OpaquePointer, _ error: UnsafeMutablePointer<sd_bus_error>?) -> Int32 {
        let member = BusMessage.text(sd_bus_message_get_member(call)) ?? ""
        let path = BusMessage.text(sd_bus_message_get_path(call)) ?? ""
        guard let peer = peer(of: call, error) else { return -EACCES }
        switch member {
        case "GetClient", "CreateClient":
            if member == "GetClient", let existing = peer.defaultClient, let client = clients[existing] {
                return BusMessage.reply(call, [.objectPath(client.path)])
            }
            guard peer.clients.count < Self.clientsPerConnection else {
                return gcb_error(
                    error, BusMessage.limitsExceeded,
                    "this connection already has \(Self.clientsPerConnection) clients; delete one (DeleteClient)")
            }
            let client = Client(id: nextClient, owner: peer.name, identity: peer.identity)
            nextClient += 1
            clients[client.id] = client
            peer.clients.append(client.id)
            if member == "GetClient" { peer.defaultClient = client.id }
            return BusMessage.reply(call, [.objectPath(client.path)])
        case "DeleteClient":
            guard let target = BusMessage.readString(call, type: "o"), let client = ownedClient(target) else {
                return gcb_error(error, BusMessage.invalidArgs, "no such client of this connection")
            }
            remove(client)
            return BusMessage.reply(call)
        case "AddAgent":
            guard peer.identity.flatpak == nil else {
                return gcb_error(error, BusMessage.accessDenied, "a sandboxed app cannot be an agent")
            }
            agents[peer.identity.uid] = peer.name
            service.audit("geoclue agent uid=\(peer.identity.uid) pid=\(peer.identity.pid) name=\(peer.name)")
            return BusMessage.reply(call)
        case "Start":
            guard let client = ownedClient(path) else {
                return gcb_error(error, BusMessage.accessDenied, "this client belongs to another connection")
            }
            return start(client, call, error)
        case "Stop":
            guard let client = ownedClient(path) else {
                return gcb_error(error, BusMessage.accessDenied, "this client belongs to another connection")
            }
            stop(client, why: "stopped by its program")
            return BusMessage.reply(call)
        default:
            return gcb_error(error, "org.freedesktop.DBus.Error.UnknownMethod", "no method \(member)")
        }
    }

    func get(path: String, property: String, reply: OpaquePointer) -> Int32 {
        if path == BusMessage.managerPath {
            switch property {
            case "InUse": return BusMessage.append(reply, .bool(inUse))
            case "AvailableAccuracyLevel": return BusMessage.append(reply, .uint32(GeoClueLevel.exact))
            default: return -ENOENT
            }
        }
        guard let client = ownedClient(path) else { return -ENOENT }
        if path != client.path {
            guard let record = location(at: path, of: client) else { return -ENOENT }
            return BusMessage.append(reply, Self.value(of: record.value, property))
        }
        switch property {
        case "Location": return BusMessage.append(reply, .objectPath(client.locationPath))
        case "DistanceThreshold": return BusMessage.append(reply, .uint32(client.distance))
        case "TimeThreshold": return BusMessage.append(reply, .uint32(client.time))
        case "DesktopId": return BusMessage.append(reply, .string(client.desktopID))
        case "RequestedAccuracyLevel": return BusMessage.append(reply, .uint32(client.level))
        case "Active": return BusMessage.append(reply, .bool(client.active))
        default: return -ENOENT
        }
    }

    func set(path: String, property: String, value: OpaquePointer, _ error: UnsafeMutablePointer<sd_bus_error>?)
        -> Int32
    {
        guard let client = ownedClient(path), path == client.path else {
            return gcb_error(error, BusMessage.accessDenied, "this client belongs to another connection")
        }
        let changed: BusMessage.Value
        switch property {
        case "DesktopId":
            guard let text = BusMessage.readString(value, type: "s") else { return -EINVAL }
            client.desktopID = text
            changed = .string(text)
        case "RequestedAccuracyLevel":
            guard let level = BusMessage.readUInt32(value) else { return -EINVAL }
            client.level = level
            changed = .uint32(level)
            if client.active { reauthorize(client) }
        case "DistanceThreshold", "TimeThreshold":
            guard let number = BusMessage.readUInt32(value) else { return -EINVAL }
            if property == "DistanceThreshold" { client.distance = number } else { client.time = number }
            if client.fed { face.feed.configure(client.id, distance: client.distance, interval: client.time) }
            changed = .uint32(number)
        default:
            return gcb_error(error, BusMessage.accessDenied, "\(property) is read-only")
        }
        BusMessage.propertiesChanged(
            bus, path: client.path, interface: BusMessage.clientInterface, [(property, changed)], to: client.owner)
        return 1
    }

    /// A Location object's property, from the feed's location: GeoClue's "unknown" values
    /// where the location has none (a reduced location has only its point and its cell).
    static func value(of location: LocationValue, _ property: String) -> BusMessage.Value {
        switch property {
        case "Latitude": return .double(location.coordinate.latitude)
        case "Longitude": return .double(location.coordinate.longitude)
        case "Accuracy": return .double(location.horizontalAccuracy)
        case "Altitude":
            return .double(location.verticalAccuracy >= 0 ? location.altitude : -Double.greatestFiniteMagnitude)
        case "Speed": return .double(location.speed >= 0 ? location.speed : -1)
        case "Heading": return .double(location.course >= 0 ? location.course : -1)
        case "Description":
            return .string(
                location.gnss?.reduced == true ? "approximate location (gpslocd)" : "GNSS receiver (gpslocd)")
        default:
            let time = location.timestamp.timeIntervalSince1970
            let seconds = max(0, time.rounded(.down))
            return .timestamp(UInt64(seconds), UInt64(max(0, min(999_999, ((time - seconds) * 1e6).rounded()))))
        }
    }
}

// sd-bus's callbacks: each finds the endpoint in its user data and runs on the bus thread.

private func endpoint(_ userdata: UnsafeMutableRawPointer?) -> GeoClueEndpoint? {
    userdata.map { Unmanaged<GeoClueEndpoint>.fromOpaque($0).takeUnretainedValue() }
}

private let geoClueMethod: gcb_method_fn = { call, userdata, error in
    guard let call, let endpoint = endpoint(userdata) else { return -EINVAL }
    return endpoint.method(call, error)
}

private let geoClueGet: gcb_get_fn = { _, path, _, property, reply, userdata, _ in
    guard let reply, let endpoint = endpoint(userdata), let path, let property else { return -EINVAL }
    return endpoint.get(path: String(cString: path), property: String(cString: property), reply: reply)
}

private let geoClueSet: gcb_set_fn = { _, path, _, property, value, userdata, error in
    guard let value, let endpoint = endpoint(userdata), let path, let property else { return -EINVAL }
    return endpoint.set(path: String(cString: path), property: String(cString: property), value: value, error)
}

private let geoClueFind: gcb_find_fn = { _, path, interface, userdata, _ in
    guard let endpoint = endpoint(userdata), let path, let interface else { return 0 }
    return endpoint.find(path: String(cString: path), interface: String(cString: interface)) ? 1 : 0
}

private let geoClueNameOwnerChanged: sd_bus_message_handler_t = { message, userdata, _ in
    guard let message, let endpoint = endpoint(userdata),
        let name = BusMessage.readString(message, type: "s"), BusMessage.readString(message, type: "s") != nil,
        let owner = BusMessage.readString(message, type: "s"), owner.isEmpty
    else { return 0 }
    endpoint.vanished(name)
    return 0
}
