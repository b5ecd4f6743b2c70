import Dispatch
import Foundation
import GNSSCore

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
    private let subscription = Locked<UUID?>(nil)

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
        let endpoint = self.endpoint
        // Whether the connection was lost since it last connected (for the "again" notice).
        let lost = Lost()
        let estimates = Locked(EstimatePairing())
        let token = SharedGPSDConnections.shared.subscribe(key) { event in
            // The receiver's own error estimate (GST) for a fix may come after gpsd's TPV: the
            // pairing holds such a fix until the report after it (EstimatePairing).
            if case .report(.fix(let fix)) = event {
                let (released, fix) = estimates.withLock { $0.fix(fix) }
                if let released { handler(.fix(released)) }
                if let fix { handler(.fix(fix)) }
                return
            }
            if case .report(.errorEstimate(let estimate)) = event {
                if let paired = estimates.withLock({ $0.estimate(estimate) }) { handler(.fix(paired)) }
                return
            }
            if let released = estimates.withLock({ $0.release() }) { handler(.fix(released)) }
            // The reports of every receiver cycle go straight through, without an array.
            switch event {
            case .report(.other): break
            case .report(.sky(let sky)): handler(.sky(sky))
            default:
                for mapped in Self.events(for: event, endpoint: endpoint, lost: lost) { handler(mapped) }
            }
        }
        let previous = subscription.withLock { stored in
            defer { stored = token }
            return stored
        }
        if let previous { SharedGPSDConnections.shared.unsubscribe(key, previous) }
    }

    /// Leaves the shared connection (closing it when it is the last).
    public func stop() {
        let token = subscription.withLock { stored in
            defer { stored = nil }
            return stored
        }
        if let token { SharedGPSDConnections.shared.unsubscribe(key, token) }
    }

    /// Pairs gpsd's TPVs with the receiver's own error estimates (GST reports). gpsd 3.22 puts
    /// no GST into its TPV's errors and sends the TPV as soon as the cycle's GGA is in, so a
    /// receiver that sends GST after GGA (most do) has its estimate arrive just after the fix.
    /// Once a receiver has been seen doing that, each of its fixes waits for the next report:
    /// the GST of its time (then it carries it), or anything else (then it goes as it is) —
    /// never longer than gpsd's next line. The NMEA engine applies the same estimate to the
    /// same cycle, so both paths deliver the same location (README, the field table).
    struct EstimatePairing {
        private var latest: ReceiverErrorEstimate?
        private var held: Fix?
        private var lastTime: Date?
        /// This receiver's GST follows its TPV.
        private var estimateFollows = false

        /// A TPV: what to deliver now (a fix held before it, and this one unless it is held).
        mutating func fix(_ fix: Fix) -> (released: Fix?, now: Fix?) {
            let released = release()
            lastTime = fix.time
            if estimateFollows, fix.time != nil, fix.mode >= .twoDimensional {
                held = fix
                return (released, nil)
            }
            return (released, GPSDLocationSource.applying(latest, to: fix))
        }

        /// A GST: the held fix of its time, now carrying it.
        mutating func estimate(_ estimate: ReceiverErrorEstimate) -> Fix? {
            latest = estimate
            if let fix = held, Self.sameTime(fix.time, estimate.time) {
                held = nil
                return GPSDLocationSource.applying(estimate, to: fix)
            }
            if Self.sameTime(lastTime, estimate.time) { estimateFollows = true }
            return nil
        }

        /// Any other report: the held fix goes as it is.
        mutating func release() -> Fix? {
            defer { held = nil }
            return held
        }

        private static func sameTime(_ a: Date?, _ b: Date?) -> Bool {
            guard let a, let b else { return false }
            return abs(a.timeIntervalSince(b)) < 0.01
        }
    }

    /// gpsd 3.22 puts no GST into its TPV's errors; the NMEA engine uses it. Both paths follow
    /// one rule (`ReceiverErrorEstimate.applied`): the estimate for the fix's own time wins.
    static func applying(_ estimate: ReceiverErrorEstimate?, to fix: Fix) -> Fix {
        guard let estimate, let time = estimate.time, let fixTime = fix.time,
            abs(time.timeIntervalSince(fixTime)) < 0.01, fix.mode >= .twoDimensional
        else { return fix }
        var fix = fix
        fix.errors = estimate.applied(to: fix.errors, threeDimensional: fix.mode == .threeDimensional)
        return fix
    }

    /// One connection's outage state: lost or not, and when the last `reconnecting` notice went.
    package final class Lost: Sendable {
        let value = Locked(false)
        /// The `reconnecting` notices of this outage (once a minute after the first three).
        let notices = Locked(RepeatLimiter())
        package init() {}
    }

    /// What a gpsd client event means to the engine; `now` times the notices' rate limit.
    package static func events(
        for event: GPSDEvent, endpoint: GPSDEndpoint, lost: Lost, now: Date = Date()
    ) -> [LocationSourceEvent] {
        func problem(_ error: GPSDError, _ reason: CLError.Reason, message: String? = nil, terminal: Bool = false)
            -> LocationSourceEvent
        {
            // The gpsd client names the fix for its own part; the whole setup is `gpsloc doctor`'s.
            .problem(
                CLError(
                    .locationUnknown,
                    message: (message ?? error.description) + " `gpsloc doctor` checks the whole setup.",
                    reason: reason, underlyingError: error),
                terminal: terminal)
        }
        switch event {
        case .connected:
            lost.notices.withLock { $0.reset("reconnecting") }
            let again = lost.value.withLock { wasLost in
                defer { wasLost = false }
                return wasLost
            }
            return again ? [.notice(code: "reconnected", message: "connected to gpsd at \(endpoint) again")] : []
        case .report(.other), .report(.errorEstimate):
            return []
        case .report(.fix(let fix)):
            return [.fix(fix)]
        case .report(.sky(let sky)):
            return [.sky(sky)]
        case .report(.heading(let heading)):
            return [.heading(heading)]
        case .report(.device(let device)):
            return [.device(device)]
        case .report(.devices(let devices)):
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
                code: "reconnecting",
                message: String(
                    format: "reconnecting to gpsd at %@ (attempt %d, in %.1f s%@)", endpoint.description, attempt,
                    delay,
                    attempt == 3 ? "; from now on said once a minute" : ""))
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
