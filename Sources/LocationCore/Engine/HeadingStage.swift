import FoundationEssentials
import GNSSCore
import NMEA0183

/// Heading updates (`startUpdatingHeading()`): a receiver's heading — NMEA HDT, THS, HDG through
/// the NMEA engine; gpsd's ATT reports (HDT, compasses, dual-antenna and moving-base receivers) —
/// becomes a `HeadingValue` (the app's `CLHeading`):
/// - `trueHeading` as reported, or, from a magnetic reading (HDG), magnetic + variation;
/// - `magneticHeading` as reported, or true − variation;
/// - the variation (full accuracy; see `Declination` for reduced): the sentence's own (HDG), else the receiver's (the latest fix's `magvar`),
///   else gpsd's own table at the latest position (`GPSDMagneticVariation`) — so both paths give
///   what gpsd gives; with no position yet, the heading that needs it is −1 (Apple's invalid);
/// - `headingAccuracy` 0: heading sentences and gpsd's ATT carry no accuracy; 0 says "not
///   reported" without marking the heading invalid (negative, Apple's invalid, would make
///   correct code drop every heading);
/// - delivered when it moved at least `filter` degrees from the last one delivered
///   (`kCLHeadingFilterNone`: every one). The timestamp is the source's clock.
/// A receiver that reports no heading is said once, after `patience` fixes without one.
public struct HeadingStage: Sendable {
    private(set) var active = false
    /// Apple's default `headingFilter` is 1°.
    public var filter: CLLocationDegrees = 1
    private var lastDelivered: Double?
    private var fixesWithout = 0
    private var failureSaid = false
    /// True once any heading came from the source.
    private(set) var seen = false
    static let patience = 10
    /// False for gpsloc, which shows headings when they come and says nothing when they do not.
    public var saysWhenMissing = true
    /// True (the manager): heading updates alone run the source. False (gpsloc): headings ride
    /// along with the location updates and never keep the source running by themselves.
    public var runsSource = true

    /// Heading updates stopped, Apple's default filter.
    public init() {}

    mutating func start() {
        active = true
        lastDelivered = nil
        fixesWithout = 0
        failureSaid = false
    }

    mutating func stop() { active = false }

    /// A fix came: with heading updates on and no heading from the source after `patience`
    /// fixes, the failure to tell (once).
    mutating func fixCame() -> CLError? {
        guard active, saysWhenMissing, !seen, !failureSaid else { return nil }
        fixesWithout += 1
        guard fixesWithout >= Self.patience else { return nil }
        failureSaid = true
        return CLError(.headingFailure, .noHeading)
    }

    static func normalized(_ degrees: Double) -> Double {
        let value = degrees.truncatingRemainder(dividingBy: 360)
        return value < 0 ? value + 360 : value
    }

    /// Where the declination between true and magnetic heading is taken.
    enum Declination: Sendable {
        /// The sentence's, the receiver's, or gpsd's table at the latest fix (full accuracy).
        case precise
        /// Reduced accuracy: gpsd's table at the reduced position the app was last given (nil:
        /// none yet), never the sentence's or the receiver's — those are the declination at the
        /// precise position, 0.001° apart for positions ~180 m apart east-west, so they would
        /// tell two positions in one reduced cell apart. A reading's own pair is not passed on
        /// either: the true heading is kept, the magnetic one recomputed (or, from a compass,
        /// the magnetic one kept and the true one recomputed), so true − magnetic is always the
        /// reduced position's declination.
        case reduced(CLLocationCoordinate2D?)
    }

    /// The heading to deliver for `reading`, or nil (heading updates off, nothing usable, or
    /// within the filter of the last one). `lastFix`: the latest fix with a position.
    mutating func heading(
        _ reading: HeadingReading, lastFix: Fix?, time: Date, declination: Declination = .precise
    ) -> HeadingValue? {
        guard reading.trueHeading != nil || reading.magneticHeading != nil else { return nil }
        seen = true
        guard active else { return nil }
        let trueHeading: Double?
        let magneticHeading: Double?
        switch declination {
        case .precise:
            let variation =
                reading.magneticVariation ?? lastFix?.magneticVariation
                ?? lastFix.flatMap { fix in
                    fix.latitude.flatMap { latitude in
                        fix.longitude.map { GPSDMagneticVariation.variation(latitude: latitude, longitude: $0) }
                    }
                }
            trueHeading =
                reading.trueHeading
                ?? reading.magneticHeading.flatMap { magnetic in
                    variation.map { Self.normalized(magnetic + $0) }
                }
            magneticHeading =
                reading.magneticHeading
                ?? trueHeading.flatMap { heading in
                    variation.map { Self.normalized(heading - $0) }
                }
        case .reduced(let position):
            let variation = position.map {
                GPSDMagneticVariation.variation(latitude: $0.latitude, longitude: $0.longitude)
            }
            if let reported = reading.trueHeading {
                trueHeading = reported
                magneticHeading = variation.map { Self.normalized(reported - $0) }
            } else {
                magneticHeading = reading.magneticHeading
                trueHeading = reading.magneticHeading.flatMap { magnetic in
                    variation.map { Self.normalized(magnetic + $0) }
                }
            }
        }
        let basis = trueHeading ?? magneticHeading ?? 0
        if filter >= 0, let last = lastDelivered {
            let change = abs(Self.normalized(basis - last + 180) - 180)
            guard change >= filter else { return nil }
        }
        lastDelivered = basis
        return HeadingValue(
            magneticHeading: magneticHeading ?? -1, trueHeading: trueHeading ?? -1, headingAccuracy: 0,
            timestamp: time)
    }
}
