import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// What `gpsloc serve` holds for its pages: the locations the engine delivered (each with an id,
/// the newest `capacity` of them — a day at 1 Hz and more — so a phone that slept gets what it
/// missed), the latest sky, authorization and tracking state, and the last status lines. Pages'
/// streams read from it; nothing here is per client, so a client that reads slowly or not at all
/// costs the others nothing and grows nothing.
///
/// Batches: locations are *published* every `batch` seconds (0: at once); a stream sends what
/// was published since it last sent, as one `locations` event.
final class ServeHub: Sendable {
    /// The newest locations kept (100,000: 27 h at 1 Hz).
    static let defaultCapacity = 100_000
    /// Status lines (diagnostics, errors, receivers) a stream that fell behind can still get.
    static let statusLimit = 32

    struct Settings: Sendable {
        var batch: Double = 5
        var capacity = ServeHub.defaultCapacity
        /// The recording being replayed (the page and the API say so), nil when live.
        var replay: String?
    }

    struct State {
        var ring: [LocationValue] = []
        /// Index in `ring` of the oldest location once the ring is full.
        var start = 0
        /// The id of the oldest location held.
        var firstID = 1
        var nextID = 1
        /// Locations up to this id are published (sent to streams).
        var published = 0
        var sky: SkyView?
        var skyVersion = 0
        var authorization: (status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization, reason: String?) = (
            .notDetermined, .fullAccuracy, nil
        )
        var authorizationVersion = 0
        var tracking = false
        var trackingReason: String?
        var trackingVersion = 0
        var statuses: [(sequence: Int, line: [UInt8])] = []
        var statusSequence = 0
        /// Why there is no location now (the latest error), for `/api/location`.
        var problem: CLError?
        var waiters: [Int: DispatchSemaphore] = [:]
        /// Event streams open now (pages and scripts reading `/api/events`).
        var streams = 0
        var nextWaiter = 0
        var stopped = false

        var count: Int { ring.count }
        var newestID: Int { nextID - 1 }

        func location(id: Int) -> LocationValue? {
            guard id >= firstID, id < nextID else { return nil }
            return ring[(start + id - firstID) % ring.count]
        }

        var permits: Bool { authorization.status.isAuthorized }
    }

    let settings: Settings
    let state = Locked(State())
    /// Told the number of open event streams whenever it changes (In Use: a page is open).
    let streamsChanged = Locked<(@Sendable (Int) -> Void)?>(nil)
    private let timer: Locked<DispatchSource?> = Locked(nil)

    init(settings: Settings) {
        self.settings = settings
        guard settings.batch > 0 else { return }
        let source = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "gpsloc.serve.batch"))
        source.schedule(deadline: .now() + settings.batch, repeating: settings.batch)
        source.setEventHandler { [weak self] in self?.publish() }
        source.resume()
        timer.withLock { $0 = DispatchSource.sendable(source) }
    }

    // MARK: - From the engine (the sink)

    func add(_ location: LocationValue) {
        changed { state in
            guard state.permits else { return }
            if state.ring.count < settings.capacity {
                state.ring.append(location)
            } else {
                state.ring[state.start] = location
                state.start = (state.start + 1) % state.ring.count
                state.firstID += 1
            }
            state.nextID += 1
            state.problem = nil
            if settings.batch == 0 { state.published = state.newestID }
        }
    }

    /// Releases the locations gathered since the last batch (the batch timer).
    func publish() {
        changed { state in
            guard state.published != state.newestID else { return }
            state.published = state.newestID
        }
    }

    func sky(_ sky: SkyView) {
        changed { state in
            state.sky = sky
            state.skyVersion += 1
        }
    }

    /// A diagnostic, error or receiver line (an NDJSON object, newline included).
    func status(_ line: [UInt8], problem: CLError? = nil) {
        changed { state in
            state.statusSequence += 1
            state.statuses.append((state.statusSequence, line))
            if state.statuses.count > Self.statusLimit { state.statuses.removeFirst() }
            if let problem { state.problem = problem }
        }
    }

    /// The app's authorization. Losing it, or falling to reduced accuracy, forgets every
    /// location held: what was precise is never served after the grant no longer allows it.
    func authorization(status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization, reason: String?) {
        changed { state in
            let before = state.authorization
            let downgraded =
                !status.isAuthorized || (accuracy == .reducedAccuracy && before.accuracy == .fullAccuracy)
            if downgraded {
                state.firstID = state.nextID
                state.ring = []
                state.start = 0
                state.published = state.newestID
                state.sky = nil
                state.skyVersion += 1
            }
            state.authorization = (status, accuracy, reason)
            state.authorizationVersion += 1
        }
    }

    func tracking(_ on: Bool, reason: String?) {
        changed { state in
            state.tracking = on
            state.trackingReason = reason
            state.trackingVersion += 1
        }
    }

    /// Ends every stream (the server is stopping).
    func stop() {
        timer.withLock { timer in
            timer?.cancel()
            timer = nil
        }
        changed { $0.stopped = true }
    }

    /// Changes the state and wakes every stream.
    private func changed(_ body: (inout State) -> Void) {
        let waiters = state.withLock { state -> [DispatchSemaphore] in
            body(&state)
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.signal() }
    }

    // MARK: - For requests

    /// Registers a stream's wake-up; returns its token.
    func addWaiter(_ semaphore: DispatchSemaphore) -> Int {
        state.withLock { state in
            defer { state.nextWaiter += 1 }
            state.waiters[state.nextWaiter] = semaphore
            return state.nextWaiter
        }
    }

    func removeWaiter(_ token: Int) { _ = state.withLock { $0.waiters.removeValue(forKey: token) } }

    /// An event stream opened (`true`) or closed.
    func stream(opened: Bool) {
        let count = state.withLock { state -> Int in
            state.streams += opened ? 1 : -1
            return state.streams
        }
        streamsChanged.withLock { $0 }?(count)
    }

    /// The locations held, oldest first (the GPX track).
    func track() -> [LocationValue] {
        state.withLock { state in
            Array(state.ring[state.start...]) + Array(state.ring[..<state.start])
        }
    }
}
