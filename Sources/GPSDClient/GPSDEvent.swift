import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// What a `GPSDConnection` reports, in the order it happened: one of gpsd's reports, decoded
/// (TPV, SKY, DEVICE, …), or news of the connection itself. The one type gpsd's side of the
/// package speaks: `GPSDLocationSource` turns it into the core's `LocationSourceEvent`.
public enum GPSDEvent: Sendable, Equatable {
    /// Connected, and the WATCH request was sent.
    case connected(GPSDEndpoint)
    /// A TPV report.
    case fix(Fix)
    /// A SKY report.
    case sky(SkyView)
    /// A DEVICE report (activation or deactivation).
    case device(DeviceEvent)
    /// A DEVICES report: the devices gpsd has active, sent in reply to WATCH (so a client that
    /// connects to a running gpsd learns its receivers without waiting for an activation).
    case devices([DeviceEvent])
    /// A GST report: the receiver's own error estimate for the fix of its time.
    case errorEstimate(ReceiverErrorEstimate)
    /// An ATT report with a heading.
    case heading(HeadingReading)
    /// An ERROR report: gpsd refused a request, in its own words ("No such device as …").
    case error(message: String)
    /// Another class (VERSION, WATCH, …), by name.
    case other(className: String)
    /// gpsd sent no TPV for `noDataTimeout`; sent once per silence, then again after data returns.
    case noData(GPSDError)
    /// The connection could not be made or was lost; the source tries again after `delay`
    /// seconds (only with a `ReconnectPolicy`). `attempt` counts from 1.
    case reconnecting(GPSDError, attempt: Int, delay: Double)
    /// The connection could not be made, or was lost. The source has stopped.
    case failed(GPSDError)

    /// True for what gpsd sent (a decoded object), false for news of the connection.
    public var isReport: Bool {
        switch self {
        case .connected, .noData, .reconnecting, .failed: false
        default: true
        }
    }
}

/// How a `GPSDConnection` reconnects: capped exponential backoff with jitter. Attempt n (from 0)
/// waits `min(maximumDelay, initialDelay × 2ⁿ)` scaled by a random factor in [0.5, 1], so with
/// the defaults (0.1 s, 2 s) the first retry comes within 0.1 s and none waits more than 2 s —
/// a restarted gpsd is found again within 2 s of coming back.
public struct ReconnectPolicy: Sendable, Hashable {
    public var initialDelay: Double
    public var maximumDelay: Double

    public init(initialDelay: Double = 0.1, maximumDelay: Double = 2) {
        self.initialDelay = initialDelay
        self.maximumDelay = maximumDelay
    }

    /// The delay before attempt `attempt` (0-based), for a jitter value in [0, 1].
    public func delay(attempt: Int, jitter: Double) -> Double {
        let exponential = initialDelay * pow(2, Double(min(attempt, 30)))
        return min(maximumDelay, exponential) * (0.5 + 0.5 * min(max(jitter, 0), 1))
    }
}
