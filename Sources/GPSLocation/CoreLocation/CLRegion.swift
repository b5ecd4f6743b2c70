import Foundation
import GNSSCore

/// Apple's `CLRegionState`: where the device is relative to a monitored region. Not
/// `CustomStringConvertible`, as Apple's is not (an app may declare it); `name` spells it.
public enum CLRegionState: Int, Sendable {
    /// Not known yet (no location decides it, or reduced accuracy cannot).
    case unknown = 0
    /// Inside the region.
    case inside = 1
    /// Outside the region.
    case outside = 2

    init(_ presence: RegionPresence) {
        switch presence {
        case .unknown: self = .unknown
        case .inside: self = .inside
        case .outside: self = .outside
        }
    }

    var presence: RegionPresence {
        switch self {
        case .unknown: .unknown
        case .inside: .inside
        case .outside: .outside
        }
    }

    /// The state's name (a GPSLocation addition).
    public var name: String {
        switch self {
        case .unknown: "unknown"
        case .inside: "inside"
        case .outside: "outside"
        }
    }
}

/// Apple's `CLRegion`: an area to monitor, named by `identifier` (regions are compared by
/// identifier and geometry, never by object).
open class CLRegion: NSObject, NSCopying, NSSecureCoding, @unchecked Sendable {
    // @unchecked Sendable: a non-final NSObject subclass cannot be checked; the two flags are
    // behind a lock and everything else is immutable.
    /// The name the app gave the region; unique among its regions.
    public let identifier: String
    private let flags = Locked((entry: true, exit: true))

    /// Whether entering is reported (`didEnterRegion`); default true.
    public var notifyOnEntry: Bool {
        get { flags.withLock { $0.entry } }
        set { flags.withLock { $0.entry = newValue } }
    }
    /// Whether leaving is reported (`didExitRegion`); default true.
    public var notifyOnExit: Bool {
        get { flags.withLock { $0.exit } }
        set { flags.withLock { $0.exit = newValue } }
    }

    init(identifier: String) {
        self.identifier = identifier
        super.init()
    }

    // Archiving (`NSKeyedArchiver`, secure coding), as Apple's regions archive.
    /// True: unarchiving checks each value's class (`NSSecureCoding`).
    open class var supportsSecureCoding: Bool { true }

    /// Unarchives what `encode(with:)` wrote; nil when a value is missing or of the wrong type.
    public required init?(coder: NSCoder) {
        guard let identifier = coder.decodeObject(of: NSString.self, forKey: "identifier") as String? else {
            return nil
        }
        self.identifier = identifier
        super.init()
        notifyOnEntry = coder.decodeBool(forKey: "notifyOnEntry")
        notifyOnExit = coder.decodeBool(forKey: "notifyOnExit")
    }

    /// Archives every value under its own key (`NSCoding`).
    open func encode(with coder: NSCoder) {
        coder.encode(identifier as NSString, forKey: "identifier")
        coder.encode(notifyOnEntry, forKey: "notifyOnEntry")
        coder.encode(notifyOnExit, forKey: "notifyOnExit")
    }

    /// A new region of the same class with the same values, flags included (`NSCopying`, as
    /// Apple's: the flags are mutable, so a copy is not the region itself). Made through the
    /// region's own archiving, so a subclass that archives its values copies them too.
    open func copy(with zone: NSZone? = nil) -> Any {
        let archiver = NSKeyedArchiver(requiringSecureCoding: true)
        encode(with: archiver)
        archiver.finishEncoding()
        guard let unarchiver = try? NSKeyedUnarchiver(forReadingFrom: archiver.encodedData),
            let copy = type(of: self).init(coder: unarchiver)
        else { return self }
        unarchiver.finishDecoding()
        return copy
    }

    /// The same kind of region with the same identifier.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CLRegion else { return false }
        return type(of: other) == type(of: self) && other.identifier == identifier
    }

    /// The identifier's hash.
    open override var hash: Int { identifier.hashValue }
}

/// Apple's `CLCircularRegion`: a circle on the WGS 84 ellipsoid.
open class CLCircularRegion: CLRegion, @unchecked Sendable {
    // @unchecked Sendable: see CLRegion; the geometry is immutable.
    /// The circle's centre.
    public let center: CLLocationCoordinate2D
    /// Metres from `center` to the boundary.
    public let radius: CLLocationDistance

    /// A circle named `identifier`; checked when it is monitored (see `problem(maximumDistance:)`).
    public init(center: CLLocationCoordinate2D, radius: CLLocationDistance, identifier: String) {
        self.center = center
        self.radius = radius
        super.init(identifier: identifier)
    }

    /// Unarchives what `encode(with:)` wrote; nil when a value is missing or of the wrong type.
    public required init?(coder: NSCoder) {
        center = CLLocationCoordinate2D(
            latitude: coder.decodeDouble(forKey: "latitude"), longitude: coder.decodeDouble(forKey: "longitude"))
        radius = coder.decodeDouble(forKey: "radius")
        super.init(coder: coder)
    }

    /// Archives every value under its own key (`NSCoding`).
    open override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(center.latitude, forKey: "latitude")
        coder.encode(center.longitude, forKey: "longitude")
        coder.encode(radius, forKey: "radius")
    }

    /// Whether `coordinate` is within `radius` of `center` (the geodesic distance on WGS 84) —
    /// the plain geometric test. Monitoring decides with each location's accuracy too (see
    /// `CLLocationManager.startMonitoring(for:)`).
    public func contains(_ coordinate: CLLocationCoordinate2D) -> Bool {
        guard CLLocationCoordinate2DIsValid(coordinate), CLLocationCoordinate2DIsValid(center) else { return false }
        return Geodesic.wgs84.distance(
            latitude1: center.latitude, longitude1: center.longitude, latitude2: coordinate.latitude,
            longitude2: coordinate.longitude) <= radius
    }

    /// Apple's format: identifier, centre and radius.
    open override var description: String {
        String(
            format: "CLCircularRegion (identifier:'%@', center:<%+.8f,%+.8f>, radius:%.2f)", identifier,
            center.latitude, center.longitude, radius)
    }

    var geofence: Geofence {
        Geofence(identifier: identifier, latitude: center.latitude, longitude: center.longitude, radius: radius)
    }

    /// Why this region cannot be monitored (nil: it can): the rule `startMonitoring` and
    /// `CLMonitor.add` apply, for a daemon to check its configuration before it starts.
    public func problem(maximumDistance: CLLocationDistance = 100_000) -> String? {
        guard CLLocationCoordinate2DIsValid(center), center.latitude.isFinite, center.longitude.isFinite else {
            return "the region \(identifier) has an invalid centre (latitude −90…90, longitude −180…180)"
        }
        guard radius.isFinite, radius > 0 else {
            return "the region \(identifier) has radius \(radius): it must be a positive number of metres"
        }
        guard radius <= maximumDistance else {
            return "the region \(identifier) has radius \(radius) m, more than maximumRegionMonitoringDistance "
                + "(\(Int(maximumDistance)) m)"
        }
        return nil
    }
}

/// Apple's `CLVisit`: a stop (see `startMonitoringVisits()` for the rule). Open, with read-only
/// properties a subclass may override, as Apple's: apps subclass it for test doubles. Not
/// `Sendable`, as Apple's is not (a visit is made for one delegate call and only read).
open class CLVisit: NSObject, NSCopying, NSSecureCoding {
    /// When the device arrived (`Date.distantPast` when unknown).
    open var arrivalDate: Date { storedArrivalDate }
    /// When it left; `Date.distantFuture` while the visit goes on.
    open var departureDate: Date { storedDepartureDate }
    /// The centre of the places the device was seen during the stop.
    open var coordinate: CLLocationCoordinate2D { storedCoordinate }
    /// The radius of the visited place (metres); negative when unknown.
    open var horizontalAccuracy: CLLocationAccuracy { storedHorizontalAccuracy }

    private let storedArrivalDate: Date
    private let storedDepartureDate: Date
    private let storedCoordinate: CLLocationCoordinate2D
    private let storedHorizontalAccuracy: CLLocationAccuracy

    /// A visit (Apple's class has no public initializer of this form; tests and ported code use it).
    public init(
        arrivalDate: Date, departureDate: Date, coordinate: CLLocationCoordinate2D,
        horizontalAccuracy: CLLocationAccuracy
    ) {
        storedArrivalDate = arrivalDate
        storedDepartureDate = departureDate
        storedCoordinate = coordinate
        storedHorizontalAccuracy = horizontalAccuracy
    }

    /// Apple's `init()` (NSObject's): an unknown visit — arrival `distantPast`, departure
    /// `distantFuture`, `kCLLocationCoordinate2DInvalid`, accuracy −1. Test doubles start here
    /// and override the properties.
    public override convenience init() {
        self.init(
            arrivalDate: .distantPast, departureDate: .distantFuture, coordinate: kCLLocationCoordinate2DInvalid,
            horizontalAccuracy: -1)
    }

    /// Reads what `encode(with:)` wrote; nil when the archive lacks the required fields.
    public required convenience init?(coder: NSCoder) {
        guard let values = Self.decodedValues(coder) else { return nil }
        self.init(values)
    }

    /// The visit itself: it is immutable (`NSCopying`, as Apple's).
    open func copy(with zone: NSZone? = nil) -> Any { self }

    /// Archives every field under its own key (`NSCoding`); a subclass may add its own.
    open func encode(with coder: NSCoder) { encodeFields(with: coder) }

    convenience init(_ record: VisitRecord) {
        self.init(
            arrivalDate: record.arrival, departureDate: record.departure ?? .distantFuture,
            coordinate: CLLocationCoordinate2D(latitude: record.latitude, longitude: record.longitude),
            horizontalAccuracy: record.horizontalAccuracy)
    }

    /// Arrival, departure (or "ongoing"), place and radius.
    open override var description: String {
        let departure = departureDate == .distantFuture ? "ongoing" : iso8601Milliseconds(departureDate)
        return String(
            format: "CLVisit (arrival %@, departure %@, <%+.6f,%+.6f> ±%.0f m)", iso8601Milliseconds(arrivalDate),
            departure, coordinate.latitude, coordinate.longitude, horizontalAccuracy)
    }
}
