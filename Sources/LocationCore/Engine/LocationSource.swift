import Dispatch
import FoundationEssentials
import GNSSCore

/// What a location source reports to the engine.
public enum LocationSourceEvent: Sendable {
    /// A fix (or a report of no fix) from the receiver.
    case fix(Fix)
    /// The receiver's own error estimate for a fix (NMEA GST, gpsd's GST report), which may
    /// come after the fix it describes: the engine holds a fix for it (`LocationEngine.held`).
    case errorEstimate(ReceiverErrorEstimate)
    /// The satellites in view and used.
    case sky(SkyView)
    /// A heading report (NMEA HDT/THS/HDG, gpsd ATT).
    case heading(HeadingReading)
    /// A receiver activated or deactivated (gpsd's DEVICE reports).
    case device(DeviceEvent)
    /// News that is not a problem (connected to gpsd again, a reconnection attempt): passed on
    /// as a diagnostic.
    case notice(LocationDiagnostic)
    /// Something went wrong; `terminal` when the source has stopped for good.
    case problem(CLError, terminal: Bool)
}

/// Where the location engine gets fixes: gpsd (the default), a replay, or a test's list.
/// `start` must not block; events arrive on the source's own queue, in order.
public protocol LocationSource: AnyObject, Sendable {
    /// Starts reporting to `handler`; returns at once.
    func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void)
    /// Stops; once it returns no event reaches the handler (unless called from the handler).
    func stop()
    /// True (the default) when the source's clock is the wall clock; false for replays, whose
    /// clock is the recording's own and is known only from fixes that carry a time.
    var isLive: Bool { get }
    /// True when software makes or plays back the fixes (a replay, a list, gpsd fed by
    /// gpsfake): locations carry `sourceInformation.isSimulatedBySoftware`. Default: not live.
    var isSimulated: Bool { get }
    /// True (the default for a source that is not live) when the source can pause while its
    /// consumer catches up: a recording's thread then waits rather than anything being dropped.
    /// False for one that cannot (gpsd drops the reports of a client that stops reading, even
    /// gpsfake's): its locations are kept, however many, until the consumer takes them.
    var waitsForConsumer: Bool { get }
    /// What the source knows before it runs about whether it reports a heading: true or false
    /// when it can tell (a recording's sentences), nil (the default) when only its receiver can
    /// (`CLLocationManager.headingAvailable()` then asks what the box has seen).
    var reportsHeading: Bool? { get }
}

extension LocationSource {
    public var isLive: Bool { true }
    public var isSimulated: Bool { !isLive }
    public var waitsForConsumer: Bool { !isLive }
    public var reportsHeading: Bool? { nil }

    /// What the locations from this source say of where they came from.
    public var sourceInformation: LocationOrigin { isSimulated ? .simulated : .receiver }
}

/// A source that passes on everything `base` reports and, once the handler has taken each event,
/// tells `tap` of it: gpsloc counts the fixes for its summary, a test learns that a recording
/// has ended (the engine has its end).
public final class TappedLocationSource: LocationSource, Sendable {
    let base: any LocationSource
    private let tap: @Sendable (LocationSourceEvent) -> Void

    /// `base`, tapped by `tap`.
    public init(_ base: any LocationSource, tap: @escaping @Sendable (LocationSourceEvent) -> Void) {
        self.base = base
        self.tap = tap
    }

    public var isLive: Bool { base.isLive }
    public var isSimulated: Bool { base.isSimulated }
    public var reportsHeading: Bool? { base.reportsHeading }
    public var waitsForConsumer: Bool { base.waitsForConsumer }
    public func stop() { base.stop() }
    public func start(_ handler: @escaping @Sendable (LocationSourceEvent) -> Void) {
        let tap = tap
        base.start { event in
            handler(event)
            tap(event)
        }
    }
}
