import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc

/// gpsd through libgps, as a `LocationSource`. It reconnects when gpsd goes away or is not
/// there yet (`ReconnectPolicy`), reporting the loss once as a non-terminal
/// `CLError.locationUnknown` whose `underlyingError` is the `GPSDError` and whose `reason` says
/// which loss it is (`gpsdUnreachable` at start, `gpsdLost` later, `gpsdSilent`, `noDevice`);
/// each further attempt and the reconnection itself are `notice`s.
///
/// Sources for the same endpoint share one gpsd connection (reference-counted): several
/// managers in one process open one socket, and each keeps its own filters and gate. The
/// connection opens with the first started source and closes when the last one stops.
public final class GPSDLocationSource: LocationSource {
    /// The gpsd this source reads.
    public let endpoint: GPSDEndpoint
    /// False for a gpsd that replays a recording (gpsfake): the recording's clock is used.
    public let isLive: Bool
    /// True for a replay (`isLive` false) and for a gpsd on this machine that gpsfake started
    /// (found in the process table when the source is made): its locations are
    /// `isSimulatedBySoftware`.
    public let isSimulated: Bool
    /// Never: gpsd drops the reports of a client that stops reading (`throttled_write`), so the
    /// reader never waits for the app; a gpsfake replay's locations are kept until taken instead.
    public var waitsForConsumer: Bool { false }
    private let key: SharedGPSDConnections.Key
    /// The shared connection joined, and the token of this source's subscription to it; and
    /// the SKY decoding last asked for by `decodeSky` (nil: as made).
    private let subscription = Locked<(joined: (key: SharedGPSDConnections.Key, token: UUID)?, sky: Bool?)>((nil, nil))

    /// A source reading the gpsd at `endpoint`.
    /// - Parameters:
    ///   - endpoint: the gpsd (default: `GPSLOCATION_GPSD`, else 127.0.0.1:2947).
    ///   - noDataTimeout: report gpsd's silence after this long (nil: never).
    ///   - reconnect: nil: a lost connection ends the source (a terminal problem).
    ///   - isLive: false for gpsfake replays (see `isLive`).
    ///   - sky: deliver gpsd's SKY reports (`.sky` events); false leaves them undecoded — the
    ///     largest and costliest lines gpsd sends — for consumers that only want locations.
    ///     Sources share a connection only when they agree on it.
    public init(
        endpoint: GPSDEndpoint = .fromEnvironment(), noDataTimeout: Duration? = .seconds(5),
        reconnect: ReconnectPolicy? = ReconnectPolicy(), isLive: Bool = true, sky: Bool = true
    ) {
        self.endpoint = endpoint
        self.isLive = isLive
        isSimulated = !isLive || GPSFakeDetection.feeds(endpoint)
        key = SharedGPSDConnections.Key(
            endpoint: endpoint, noDataTimeout: noDataTimeout, reconnect: reconnect, decodesSky: sky)
    }

    /// Joins the endpoint's shared connection (opening it when it is the first).
    public func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) {
        start(handler, burstEnded: nil)
    }

    /// `start`, and `burstEnded` after each burst of reports gpsd sent one after another (a
    /// receiver cycle's fix, error estimate and sky), on the same thread: a relay that holds what
    /// it forwards until then sends a cycle at once (gpslocd). Such a source reads a connection
    /// of its own (sources share one only when they agree on this too).
    public func start(
        _ handler: @escaping @Sendable (LocationSourceEvent) -> Void, burstEnded: (@Sendable () -> Void)?
    ) {
        var key = self.key
        key.reportsBursts = burstEnded != nil
        let endpoint = self.endpoint
        // Whether the connection was lost since it last connected (for the "again" notice).
        let lost = Lost()
        let forward: SharedGPSDConnections.Handler = { event in
            // The reports of every receiver cycle go straight through, without an array; the
            // receiver's error estimates too (gpsd 3.22 puts no GST into its TPV): the engine
            // pairs them with their fixes.
            switch event {
            case .other: break
            case .fix(let fix): handler(.fix(fix))
            case .errorEstimate(let estimate): handler(.errorEstimate(estimate))
            case .sky(let sky): handler(.sky(sky))
            default:
                for mapped in Self.events(for: event, endpoint: endpoint, lost: lost) { handler(mapped) }
            }
        }
        let token = SharedGPSDConnections.shared.subscribe(key, forward, burstEnded: burstEnded)
        let previous = subscription.withLock { stored in
            defer { stored.joined = (key, token) }
            if let sky = stored.sky { SharedGPSDConnections.shared.setDecodesSky(sky, key) }
            return stored.joined
        }
        if let previous { SharedGPSDConnections.shared.unsubscribe(previous.key, previous.token) }
    }

    /// Switches SKY decoding on or off from now on, as `sky` does at the start (`.sky` events
    /// come only while it is on; the next line gpsd sends follows it). It applies to this
    /// source's connection — shared only with sources made and started alike, which it switches
    /// too — and lasts across `stop()` and `start`. gpslocd decodes the sky only while a program
    /// or another face asks for it: a multi-GNSS receiver's SKY is the costliest line gpsd sends.
    public func decodeSky(_ decodes: Bool) {
        subscription.withLock { stored in
            stored.sky = decodes
            if let joined = stored.joined { SharedGPSDConnections.shared.setDecodesSky(decodes, joined.key) }
        }
    }

    /// Whether this source's connection decodes SKY now (nil: not started), for tests.
    var connectionDecodesSky: Bool? {
        subscription.withLock { $0.joined }.flatMap { SharedGPSDConnections.shared.decodesSky($0.key) }
    }

    /// Leaves the shared connection (closing it when it is the last).
    public func stop() {
        let joined = subscription.withLock { stored in
            defer { stored.joined = nil }
            return stored.joined
        }
        if let joined { SharedGPSDConnections.shared.unsubscribe(joined.key, joined.token) }
    }

    /// One connection's outage state: lost or not, and when the last `reconnecting` notice went.
    final class Lost: Sendable {
        let value = Locked(false)
        /// The `reconnecting` notices of this outage (once a minute after the first three).
        let notices = Locked(RepeatLimiter())
        init() {}
    }

    /// What a gpsd client event means to the engine; `now` times the notices' rate limit.
    static func events(
        for event: GPSDEvent, endpoint: GPSDEndpoint, lost: Lost, now: Date = Date()
    ) -> [LocationSourceEvent] {
        func problem(_ error: GPSDError, _ reason: CLError.Reason, terminal: Bool = false)
            -> LocationSourceEvent
        {
            .problem(
                CLError(.locationUnknown, .gpsd(error), reason: reason, underlyingError: error), terminal: terminal)
        }
        switch event {
        case .connected:
            lost.notices.withLock { $0.reset("reconnecting") }
            let again = lost.value.withLock { wasLost in
                defer { wasLost = false }
                return wasLost
            }
            return again
                ? [.notice(LocationDiagnostic(code: "reconnected", .reconnected(endpoint: endpoint.description)))] : []
        case .other:
            return []
        case .error(let message):
            // gpsd's own words, as gpspipe prints them.
            return [
                .problem(
                    CLError(
                        .locationUnknown, .gpsdRefused(endpoint: endpoint.description, said: message),
                        reason: .gpsdRefused),
                    terminal: false)
            ]
        case .errorEstimate(let estimate):
            return [.errorEstimate(estimate)]
        case .fix(let fix):
            return [.fix(fix)]
        case .sky(let sky):
            return [.sky(sky)]
        case .heading(let heading):
            return [.heading(heading)]
        case .device(let device):
            return [.device(device)]
        case .devices(let devices):
            var events = devices.map { LocationSourceEvent.device($0) }
            if devices.isEmpty { events.append(problem(.noDevice(at: endpoint), .noDevice)) }
            return events
        case .noData(let error):
            return [problem(error, .gpsdSilent)]
        case .reconnecting(let error, let attempt, let delay):
            lost.value.withLock { $0 = true }
            // Said for the first three attempts, then once a minute: gpsd gone for an hour is not
            // 2,000 lines in a log or on a broker.
            let say = lost.notices.withLock { $0.allows("reconnecting", at: now, always: attempt <= 3) }
            let notice = LocationSourceEvent.notice(
                LocationDiagnostic(
                    code: "reconnecting",
                    .reconnecting(endpoint: endpoint.description, attempt: attempt, delay: delay)))
            guard attempt == 1 else { return say ? [notice] : [] }
            let reason: CLError.Reason = error.code == .unreachable ? .gpsdUnreachable : .gpsdLost
            // The error says what is wrong; whether anything retries is the `reconnecting` notice's
            // to say (gpsloc watch ends here instead: "Reconnecting" in its last words misled).
            return [problem(error, reason), notice]
        case .failed(let error):
            let reason: CLError.Reason = error.code == .unreachable ? .gpsdUnreachable : .gpsdLost
            return [problem(error, reason, terminal: true)]
        }
    }
}
