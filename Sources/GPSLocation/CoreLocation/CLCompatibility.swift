import Foundation

// Apple's CoreLocation API that a Linux GNSS receiver cannot serve — a compass, geocoding,
// beacons, floors — so that code written for Apple platforms compiles unchanged and, when it
// asks for these, hears clearly that they are not available (an error with the reason), never
// silence and never invented data.

/// Apple's device orientation, for `headingOrientation`.
public enum CLDeviceOrientation: Int32, Sendable {
    /// Not known (the only value that matters here: a heading is the receiver's, not a screen's).
    case unknown = 0
    /// Upright.
    case portrait
    /// Upside down.
    case portraitUpsideDown
    /// On its side, top to the left.
    case landscapeLeft
    /// On its side, top to the right.
    case landscapeRight
    /// Lying face up.
    case faceUp
    /// Lying face down.
    case faceDown
}

/// Apple's `CLHeading`: where the receiver points (its antennas' baseline, a compass), not where
/// it moves (`CLLocation.course`). Delivered by `startUpdatingHeading()` from receivers that report
/// a heading (`HeadingStage` has the rules); `headingAccuracy` is 0 (not reported). Open, with
/// overridable properties and `init()`, as Apple's: apps subclass it for test doubles.
// @unchecked Sendable: a non-final class cannot be checked; its own values are immutable.
open class CLHeading: NSObject, NSCopying, NSSecureCoding, @unchecked Sendable {
    /// Degrees from magnetic north, 0–359.9; −1 when no variation is known yet (no position).
    open var magneticHeading: CLLocationDirection { storedMagneticHeading }
    /// Degrees from true north, 0–359.9; −1 when it cannot be known (a magnetic reading with no
    /// variation known).
    open var trueHeading: CLLocationDirection { storedTrueHeading }
    /// 0: heading sentences and gpsd's ATT carry no accuracy (negative would mean invalid).
    open var headingAccuracy: CLLocationDirectionAccuracy { storedHeadingAccuracy }
    /// When the receiver reported it (the source's clock: a replay's own time).
    open var timestamp: Date { storedTimestamp }
    /// Apple's raw magnetometer value: 0 (a GNSS heading has none).
    open var x: Double { storedX }
    /// Apple's raw magnetometer value: 0.
    open var y: Double { storedY }
    /// Apple's raw magnetometer value: 0.
    open var z: Double { storedZ }

    private let storedMagneticHeading: CLLocationDirection
    private let storedTrueHeading: CLLocationDirection
    private let storedHeadingAccuracy: CLLocationDirectionAccuracy
    private let storedTimestamp: Date
    private let storedX: Double
    private let storedY: Double
    private let storedZ: Double

    /// A heading with its parts (Apple's class has no public initializer of this form; tests
    /// and code that builds one use it).
    public init(
        magneticHeading: CLLocationDirection, trueHeading: CLLocationDirection,
        headingAccuracy: CLLocationDirectionAccuracy, timestamp: Date, x: Double = 0, y: Double = 0, z: Double = 0
    ) {
        storedMagneticHeading = magneticHeading
        storedTrueHeading = trueHeading
        storedHeadingAccuracy = headingAccuracy
        storedTimestamp = timestamp
        storedX = x
        storedY = y
        storedZ = z
        super.init()
    }

    /// The rules core's heading, as CoreLocation delivers it.
    public convenience init(_ value: HeadingValue) {
        self.init(
            magneticHeading: value.magneticHeading, trueHeading: value.trueHeading,
            headingAccuracy: value.headingAccuracy, timestamp: value.timestamp)
    }

    /// Apple's `init()` (NSObject's): an invalid heading — headings and accuracy −1, now, no
    /// magnetometer values. Test doubles start here and override the properties.
    public override convenience init() {
        self.init(magneticHeading: -1, trueHeading: -1, headingAccuracy: -1, timestamp: Date())
    }

    /// Reads what `encode(with:)` wrote (`NSSecureCoding`); nil when the archive lacks the
    /// required fields.
    public required convenience init?(coder: NSCoder) {
        guard let values = Self.decodedValues(coder) else { return nil }
        self.init(values)
    }

    /// The heading itself: it is immutable (`NSCopying`, as Apple's).
    open func copy(with zone: NSZone? = nil) -> Any { self }

    /// Archives every field under its own key (`NSCoding`); a subclass may add its own.
    open func encode(with coder: NSCoder) { encodeFields(with: coder) }
}

/// Apple's `CLFloor`: the floor of a building. GNSS has no floor: `CLLocation.floor` is nil.
// @unchecked Sendable: a non-final class cannot be checked; its own value is immutable.
open class CLFloor: NSObject, NSCopying, @unchecked Sendable {
    /// The floor number (0: ground).
    open var level: Int { storedLevel }
    private let storedLevel: Int
    /// A floor (for code that makes one).
    public init(level: Int) {
        storedLevel = level
        super.init()
    }
    /// Apple's `init()` (NSObject's): the ground floor.
    public override convenience init() { self.init(level: 0) }
    /// The floor itself: it is immutable (`NSCopying`, as Apple's).
    open func copy(with zone: NSZone? = nil) -> Any { self }
}

extension CLLocation {
    /// Apple's floor: always nil (a GNSS fix knows no building).
    public var floor: CLFloor? { nil }
}

extension CLLocationManager {
    /// Apple's instance property from iOS 2 (deprecated there since iOS 4): the class method's
    /// answer, for code that still reads it.
    @available(*, deprecated, message: "Use the class method locationServicesEnabled()")
    public var locationServicesEnabled: Bool { CLLocationManager.locationServicesEnabled() }

    /// Apple's instance property from iOS 3 (deprecated there since iOS 4): the class method's
    /// answer (see `headingAvailable()`).
    @available(*, deprecated, message: "Use the class method headingAvailable()")
    public var headingAvailable: Bool { CLLocationManager.headingAvailable() }

    /// False: no beacon ranging (no Bluetooth scanning here).
    public class func isRangingAvailable() -> Bool { false }

    /// Apple's heading filter: the degrees a heading must change by before the next is delivered
    /// (`kCLHeadingFilterNone`: every one; default 1).
    public var headingFilter: CLLocationDegrees {
        get { runner.withEngine { $0.headingStage.filter } }
        set { runner.withEngine { $0.headingStage.filter = newValue } }
    }

    /// Apple's heading orientation. Kept, unused.
    public var headingOrientation: CLDeviceOrientation {
        get { state.withLock { $0.headingOrientation } }
        set { state.withLock { $0.headingOrientation = newValue } }
    }

    /// The last heading delivered to this manager.
    public var heading: CLHeading? { state.withLock { $0.heading } }

    /// Apple's background location indicator (iOS). Kept, no effect on Linux.
    public var showsBackgroundLocationIndicator: Bool {
        get { state.withLock { $0.showsBackgroundLocationIndicator } }
        set { state.withLock { $0.showsBackgroundLocationIndicator = newValue } }
    }

    /// Heading updates from a receiver that reports a heading, through the same gate as
    /// locations (`locationManager(_:didUpdateHeading:)`). A receiver that reports none is said
    /// once, after ten fixes, with `CLError.headingFailure`.
    public func startUpdatingHeading() {
        guard preflight() else { return }
        runner.drive { $0.startHeading() }
    }

    /// Stops heading updates.
    public func stopUpdatingHeading() { runner.drive { $0.stopHeading() } }

    /// Nothing to dismiss: a GNSS heading needs no compass calibration.
    public func dismissHeadingCalibrationDisplay() {}

    /// Apple's temporary full accuracy (iOS 14). Asked of the same prompt as authorization where
    /// one exists; without one the completion gets `CLError.denied` with the command that grants
    /// full accuracy. Already full: the completion gets nil at once.
    public func requestTemporaryFullAccuracyAuthorization(
        withPurposeKey purposeKey: String, completion: (((any Error)?) -> Void)? = nil
    ) {
        guard accuracyAuthorization != .fullAccuracy else {
            completion?(nil)
            return
        }
        completion?(
            CLError(
                .denied,
                message: "\(authorizer.appID) has approximate accuracy, and full accuracy (\(purposeKey)) cannot be "
                    + "granted from inside the app on Linux — run `gpsloc auth grant \(authorizer.appID) --always --full` "
                    + "(or --when-in-use --full)"))
    }

    /// Beacon ranging is not available: the delegate hears `rangingUnavailable` for the constraint.
    public func startRangingBeacons(satisfying constraint: CLBeaconIdentityConstraint) {
        let error = CLError(
            .rangingUnavailable, message: "beacon ranging is not available: GPSLocation reads GNSS receivers only")
        callDelegate { manager, delegate in
            delegate.locationManager(manager, didFailRangingFor: constraint, error: error)
        }
    }

    /// Nothing is ranged (see `startRangingBeacons(satisfying:)`).
    public func stopRangingBeacons(satisfying constraint: CLBeaconIdentityConstraint) {}

    /// An error for the delegate, where its callbacks come.
    private func fail(_ error: CLError) { runner.enqueue(.failure(error)) }
}

/// Apple's beacon identity constraint (UUID, major, minor).
// @unchecked Sendable (both beacon classes): a non-final class cannot be checked; the values are
// immutable.
open class CLBeaconIdentityConstraint: NSObject, NSCopying, @unchecked Sendable {
    /// The beacons' proximity UUID.
    public let uuid: UUID
    /// The major value, or nil: any.
    public let major: UInt16?
    /// The minor value, or nil: any.
    public let minor: UInt16?
    /// A constraint on UUID, and optionally major and minor.
    public init(uuid: UUID, major: UInt16? = nil, minor: UInt16? = nil) {
        self.uuid = uuid
        self.major = major
        self.minor = minor
    }
    /// The constraint itself: it is immutable (`NSCopying`, as Apple's).
    open func copy(with zone: NSZone? = nil) -> Any { self }
}

/// Apple's ranged beacon. None is ever ranged here (`CLLocationManager.isRangingAvailable()`).
open class CLBeacon: NSObject, NSCopying, @unchecked Sendable {
    /// The beacon's UUID.
    public let uuid: UUID
    /// Its major value.
    public let major: NSNumber
    /// Its minor value.
    public let minor: NSNumber
    /// How near it is.
    public let proximity: CLProximity
    /// Metres (one sigma) of the distance estimate.
    public let accuracy: CLLocationAccuracy
    /// Received signal strength, dBm.
    public let rssi: Int
    /// When it was ranged.
    public let timestamp: Date
    /// A beacon with every value given (for code that builds its own).
    public init(
        uuid: UUID, major: NSNumber, minor: NSNumber, proximity: CLProximity, accuracy: CLLocationAccuracy, rssi: Int,
        timestamp: Date
    ) {
        self.uuid = uuid
        self.major = major
        self.minor = minor
        self.proximity = proximity
        self.accuracy = accuracy
        self.rssi = rssi
        self.timestamp = timestamp
    }
    /// The beacon itself: it is immutable (`NSCopying`, as Apple's).
    open func copy(with zone: NSZone? = nil) -> Any { self }
}

/// Apple's beacon proximity.
public enum CLProximity: Int, Sendable {
    /// Not known.
    case unknown
    /// Within centimetres.
    case immediate
    /// Within a few metres.
    case near
    /// Further.
    case far
}

/// Apple's beacon region: it can be created, and monitoring it fails with
/// `regionMonitoringFailure` (no Bluetooth here).
open class CLBeaconRegion: CLRegion, @unchecked Sendable {
    // @unchecked Sendable: see CLRegion; the constraint is immutable.
    /// The beacons the region stands for.
    public let beaconIdentityConstraint: CLBeaconIdentityConstraint
    /// The constraint's UUID.
    public var uuid: UUID { beaconIdentityConstraint.uuid }

    /// A region of the beacons matching `beaconIdentityConstraint`.
    public init(beaconIdentityConstraint: CLBeaconIdentityConstraint, identifier: String) {
        self.beaconIdentityConstraint = beaconIdentityConstraint
        super.init(identifier: identifier)
    }

    /// A region of every beacon with `uuid`.
    public convenience init(uuid: UUID, identifier: String) {
        self.init(beaconIdentityConstraint: CLBeaconIdentityConstraint(uuid: uuid), identifier: identifier)
    }

    /// Unarchives what `encode(with:)` wrote; nil when a value is missing or of the wrong type.
    public required init?(coder: NSCoder) {
        guard let text = coder.decodeObject(of: NSString.self, forKey: "uuid") as String?,
            let uuid = UUID(uuidString: text)
        else { return nil }
        beaconIdentityConstraint = CLBeaconIdentityConstraint(uuid: uuid)
        super.init(coder: coder)
    }

    /// Archives every value under its own key (`NSCoding`).
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(uuid.uuidString as NSString, forKey: "uuid")
    }
}

/// A beacon's major value (Apple's type).
public typealias CLBeaconMajorValue = UInt16
/// A beacon's minor value (Apple's type).
public typealias CLBeaconMinorValue = UInt16

/// Apple's key for the alternate region in a `regionMonitoringResponseDelayed` error's user info
/// (never set here: no region is ever delayed for a nearby one).
public let kCLErrorUserInfoAlternateRegionKey = "alternateRegion"

extension CLMonitor {
    /// Apple's beacon condition (iOS 17). No Bluetooth scanning here: a monitor given one
    /// reports it with `conditionUnsupported`, state unknown.
    public struct BeaconIdentityCondition: CLCondition, Equatable {
        /// The beacons' proximity UUID.
        public let uuid: UUID
        /// The major value, or nil: any.
        public let major: CLBeaconMajorValue?
        /// The minor value, or nil: any.
        public let minor: CLBeaconMinorValue?
        /// Beacons with this UUID (unsupported on Linux: `conditionUnsupported`).
        public init(uuid: UUID) { (self.uuid, major, minor) = (uuid, nil, nil) }
        /// Beacons with this UUID and major value.
        public init(uuid: UUID, major: CLBeaconMajorValue) { (self.uuid, self.major, minor) = (uuid, major, nil) }
        /// One beacon.
        public init(uuid: UUID, major: CLBeaconMajorValue, minor: CLBeaconMinorValue) {
            (self.uuid, self.major, self.minor) = (uuid, major, minor)
        }
    }
}

extension CLLocationManager {
    /// No beacon is ever ranged: always empty.
    public var rangedBeaconConstraints: Set<CLBeaconIdentityConstraint> { [] }

    /// Apple's deferred updates (deprecated there since iOS 13): not available. A request is
    /// answered with `locationManager(_:didFinishDeferredUpdatesWithError:)` and
    /// `CLError.deferredFailed`, saying to use `distanceFilter` or `minimumUpdateInterval`.
    public class func deferredLocationUpdatesAvailable() -> Bool { false }

    /// Answered at once with `CLError.deferredFailed` (see `deferredLocationUpdatesAvailable()`).
    public func allowDeferredLocationUpdates(untilTraveled distance: CLLocationDistance, timeout: TimeInterval) {
        let error = CLError(
            .deferredFailed,
            message: "deferred location updates are not available: set distanceFilter or minimumUpdateInterval "
                + "(a Linux process is not suspended, so nothing is saved by deferring)")
        callDelegate { manager, delegate in delegate.locationManager(manager, didFinishDeferredUpdatesWithError: error)
        }
    }

    /// Nothing is deferred.
    public func disallowDeferredLocationUpdates() {}

    /// Apple's location push service extension (iOS 15) has no Linux counterpart: the completion
    /// gets `CLError.denied` saying so.
    public func startMonitoringLocationPushes(completion: ((Data?, (any Error)?) -> Void)? = nil) {
        completion?(
            nil,
            CLError(.denied, message: "location pushes (Apple's push service extension) do not exist on Linux"))
    }

    /// Nothing is monitored.
    public func stopMonitoringLocationPushes() {}

    /// Widgets are Apple's: false.
    public var isAuthorizedForWidgetUpdates: Bool { false }
}

// The manager's settings for how updates behave over time (pausing) and for Apple's background
// modes, which a Linux process does not have.
extension CLLocationManager {
    /// What the device is used for, as on Apple platforms: it sets how long the device must stay
    /// put before updates pause automatically (`pausesLocationUpdatesAutomatically`): 5 minutes
    /// for `.automotiveNavigation`, `.otherNavigation` and `.fitness`, 10 minutes otherwise,
    /// never for `.airborne`.
    public var activityType: CLActivityType {
        get { runner.withEngine { $0.configuration.activityType } }
        set { runner.withEngine { $0.configuration.activityType = newValue } }
    }
    /// Accepted for source compatibility; a Linux process is never suspended.
    public var allowsBackgroundLocationUpdates: Bool {
        get { state.withLock { $0.allowsBackgroundLocationUpdates } }
        set { state.withLock { $0.allowsBackgroundLocationUpdates = newValue } }
    }
    /// True by default, as on Apple platforms: once the device has stayed put (within twice its
    /// accuracy, under 0.5 m/s) for the `activityType`'s delay, by the locations' own time, updates
    /// pause and the delegate hears `locationManagerDidPauseLocationUpdates`; nothing is delivered
    /// while paused. Unlike iOS, which leaves restarting to the app, the receiver keeps running
    /// (a Linux process is not suspended), so the first location that moves resumes updates,
    /// after `locationManagerDidResumeLocationUpdates`; `startUpdatingLocation()` resumes them too.
    /// Recordings pause as receivers do.
    public var pausesLocationUpdatesAutomatically: Bool {
        get { runner.withEngine { $0.configuration.pausesAutomatically } }
        set { runner.withEngine { $0.configuration.pausesAutomatically = newValue } }
    }
}
