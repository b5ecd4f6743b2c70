import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import NMEA0183

/// Locations through gpslocd, the system location service (docs/broker.md), as a
/// `LocationSource`: what gpsd reports, after gpslocd's gate for this program — its decision,
/// the in-use rule and reduced accuracy applied out of the program's reach. Connects (and
/// reconnects every second) to the socket, says which app it is, and WATCHes. An unreachable
/// gpslocd is a non-terminal `CLError.locationUnknown` (reason `brokerUnreachable`, or
/// `brokerLost` once it had worked) that says how to start it.
///
/// `CLLocationManager.defaultSource()` is one of these whenever a broker is in force
/// (`GPSLOCATION_BROKER`, or gpslocd's socket at /run/gpslocd/socket).
public final class BrokerLocationSource: LocationSource {
    /// The socket gpslocd listens on.
    public let socketPath: String
    /// The app id this program gives gpslocd (a label unless gpslocd knows better: a systemd
    /// unit, a Flatpak id).
    public let appID: String
    private let sky: Bool
    private let link = Locked<BrokerLink?>(nil)

    /// A source reading gpslocd at `socketPath` for `appID` (default: the executable's name);
    /// `sky`: also the satellites in view (full accuracy only).
    public init(socketPath: String, appID: String = LocationAuthorizer.defaultAppID, sky: Bool = false) {
        self.socketPath = socketPath
        self.appID = appID
        self.sky = sky
    }

    /// Connects to gpslocd on a thread of its own (reconnecting every second) and WATCHes;
    /// returns at once.
    public func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) {
        var watch = BrokerLine("WATCH")
        watch.add("sky", sky)
        let path = socketPath
        let wasLost = Locked(false)
        let everConnected = Locked(false)
        let link = BrokerLink(
            path: socketPath, app: appID, afterWelcome: [watch.line],
            onMessage: { message in
                if let event = BrokerProtocol.event(from: message) { handler(event) }
            },
            onState: { state in
                switch state {
                case .connected(let welcome):
                    everConnected.withLock { $0 = true }
                    guard
                        wasLost.withLock({ lost in
                            defer { lost = false }
                            return lost
                        })
                    else { return }
                    handler(
                        .notice(
                            LocationDiagnostic(code: "brokerConnected", .brokerConnected(path: path, app: welcome.app)))
                    )
                case .lost(let failure):
                    wasLost.withLock { $0 = true }
                    handler(
                        .problem(
                            CLError(
                                .locationUnknown, .brokerUnavailable(failure),
                                reason: everConnected.withLock { $0 } ? .brokerLost : .brokerUnreachable),
                            terminal: false))
                }
            })
        let previous = self.link.withLock { current in
            defer { current = link }
            return current
        }
        previous?.close()
        link.start()
    }

    /// Closes the connection; no event reaches the handler after this returns.
    public func stop() {
        link.withLock { current in
            defer { current = nil }
            return current
        }?.close()
    }
}
