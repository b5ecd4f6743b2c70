import CGeoClueBus
import FoundationEssentials
import GNSSCore
import Glibc
import LocationCore
import LocationWords

/// gpslocd's GeoClue 2 face (`gpslocd --geoclue`): owns `org.freedesktop.GeoClue2` on the
/// system bus and serves GeoClue's Manager, Client and Location objects to the programs that
/// ask for a location there (Firefox, GNOME Maps and Weather, gammastep, `where-am-i`) — with
/// gpslocd's identities, decisions, agents and fudger (docs/geoclue.md).
///
/// One thread owns the bus connection (sd-bus is not thread-safe): it runs sd-bus's calls and
/// the jobs other threads post (a location to send, a decision that changed), one at a time,
/// never waiting on a client. The locations come from one engine for every client
/// (`SharedLocationFeed`, the core's), on gpsd's thread, which hands each client's latest over.
final class GeoClueFace: Sendable {
    let service: BrokerService
    let feed: SharedLocationFeed
    private let jobs = Locked<[@Sendable (GeoClueEndpoint) -> Void]>([])
    private let wake = WakePipe(owner: "gpslocd's GeoClue face")
    private let running = Locked(true)
    private let finished = ConditionLock()
    private let done = Locked(false)

    /// What `gpsloc auth who` shows of a started client, kept by the bus thread as it changes
    /// (read by the socket's thread without waiting for the bus).
    struct Row: Sendable {
        var uid: UInt32
        var pid: Int32
        var app: String
        var identity: String
        var authorization: AuthorizationState
        var active: Bool
        var since: Date
        var lastDelivery: Date?
    }
    let rows = Locked<[Int: Row]>([:])

    /// Why the face could not start.
    struct Failure: Error, Sendable, CustomStringConvertible {
        var description: String
    }

    init(service: BrokerService) {
        self.service = service
        feed = SharedLocationFeed(
            source: BrokerHubSource(service: service), reducedStore: service.reducedStore, clientName: "GeoClue client")
    }

    /// Connects to the system bus (`$DBUS_SYSTEM_BUS_ADDRESS` when set), takes the name and
    /// starts serving on a thread of its own; throws, saying what to do, when it cannot.
    func start() throws(Failure) {
        let result = Locked<Result<Void, Failure>?>(nil)
        let started = ConditionLock()
        _ = WorkerThread(name: "gpslocd.geoclue") { [self] in
            let endpoint: GeoClueEndpoint
            do throws(Failure) {
                endpoint = try GeoClueEndpoint(face: self)
            } catch {
                started.lock()
                result.withLock { $0 = .failure(error) }
                started.broadcast()
                started.unlock()
                return
            }
            started.lock()
            result.withLock { $0 = .success(()) }
            started.broadcast()
            started.unlock()
            run(endpoint)
        }
        started.lock()
        while result.withLock({ $0 }) == nil { started.wait() }
        started.unlock()
        if case .failure(let failure) = result.withLock({ $0 }) { throw failure }
        service.decisionsChanged.withLock { observer in
            observer = { [weak self] key in self?.post { $0.decisionsChanged(key) } }
        }
    }

    /// Stops every client and leaves the bus.
    func stop() {
        service.decisionsChanged.withLock { $0 = nil }
        guard
            running.withLock({ running in
                defer { running = false }
                return running
            })
        else { return }
        wake.signal()
        finished.lock()
        while !done.withLock({ $0 }) { finished.wait() }
        finished.unlock()
    }

    /// Runs `job` on the bus thread, soon.
    func post(_ job: @escaping @Sendable (GeoClueEndpoint) -> Void) {
        jobs.withLock { $0.append(job) }
        wake.signal()
    }

    private func run(_ endpoint: GeoClueEndpoint) {
        defer {
            endpoint.close()
            finished.lock()
            done.withLock { $0 = true }
            finished.broadcast()
            finished.unlock()
        }
        while running.withLock({ $0 }) {
            // Posted jobs (a revocation, a location) between every message: no client's
            // calls delay them.
            for job in jobs.withLock({ jobs -> [@Sendable (GeoClueEndpoint) -> Void] in
                defer { jobs = [] }
                return jobs
            }) {
                job(endpoint)
            }
            let r = sd_bus_process(endpoint.bus, nil)
            if r < 0 {
                BrokerServer.log(
                    "geoclue: lost the system bus (\(BusMessage.errnoText(r))): GeoClue clients get nothing until "
                        + "gpslocd is restarted (systemd restarts it)")
                exit(1)
            }
            if r > 0 { continue }
            endpoint.wait(wake: wake)
        }
    }
}
