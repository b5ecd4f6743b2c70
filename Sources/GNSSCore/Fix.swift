import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// The kind of position solution a receiver reports (gpsd's TPV `mode`).
public enum FixMode: Int, Sendable, Comparable, CustomStringConvertible {
    /// No report has been seen yet (gpsd `MODE_NOT_SEEN`).
    case notSeen = 0
    /// The receiver reports, but has no position (gpsd `MODE_NO_FIX`).
    case noFix = 1
    /// Latitude and longitude only; altitude is unknown.
    case twoDimensional = 2
    /// Latitude, longitude and altitude.
    case threeDimensional = 3

    public static func < (lhs: FixMode, rhs: FixMode) -> Bool { lhs.rawValue < rhs.rawValue }

    /// `"none"`, `"nofix"`, `"2d"` or `"3d"`, as the NDJSON output spells it.
    public var description: String {
        switch self {
        case .notSeen: "none"
        case .noFix: "nofix"
        case .twoDimensional: "2d"
        case .threeDimensional: "3d"
        }
    }
}

/// The quality of a fix beyond its mode (gpsd's TPV `status`; NMEA GGA quality).
///
/// gpsd 3.22 omits `status` when it is below 2, so a plain GPS fix reads as `.unknown`.
public enum FixQuality: Int, Sendable, CustomStringConvertible {
    case unknown = 0
    case gps = 1
    case dgps = 2
    case rtkFixed = 3
    case rtkFloat = 4
    case deadReckoning = 5
    case gnssDeadReckoning = 6
    case timeOnly = 7
    case simulated = 8
    case pps = 9

    public var description: String {
        switch self {
        case .unknown: "unknown"
        case .gps: "gps"
        case .dgps: "dgps"
        case .rtkFixed: "rtkFixed"
        case .rtkFloat: "rtkFloat"
        case .deadReckoning: "deadReckoning"
        case .gnssDeadReckoning: "gnssDeadReckoning"
        case .timeOnly: "timeOnly"
        case .simulated: "simulated"
        case .pps: "pps"
        }
    }
}

/// A receiver's own estimate of its position error (NMEA GST, gpsd's GST report): one
/// standard deviation, metres, for the fix of `time`.
public struct ReceiverErrorEstimate: Sendable, Equatable {
    /// The time of the fix it describes.
    public var time: Date?
    public var latitude: Double?
    public var longitude: Double?
    public var altitude: Double?

    public init(time: Date?, latitude: Double?, longitude: Double?, altitude: Double?) {
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.altitude = altitude
    }

    /// gpsd's errors are per axis at 95 %: 1.96 σ.
    public static let confidenceScale = 1.96

    /// The one rule both paths follow (README, the field table): where the receiver reports its
    /// own estimate for a fix, its latitude and longitude errors (and the altitude error, for a
    /// 3D fix) replace the DOP × UERE model's; nothing else changes.
    public func applied(to errors: FixErrors, threeDimensional: Bool) -> FixErrors {
        guard let latitude, let longitude else { return errors }
        var result = errors
        result.latitude = latitude * Self.confidenceScale
        result.longitude = longitude * Self.confidenceScale
        if threeDimensional, let altitude { result.vertical = altitude * Self.confidenceScale }
        return result
    }
}

/// An optional `Double` in eight bytes, where `Double?` takes sixteen in a struct: nil is one
/// signalling-NaN bit pattern, which no arithmetic produces (an operation on a NaN gives a quiet
/// one), so every value a receiver or a computation gives, NaN and infinities included, is kept
/// as it is. `Fix` and `FixErrors` store their values so: a fix is half the size, and each of
/// the copies on its way from a source to the app moves half the bytes. Equality is `Double?`'s.
@propertyWrapper
public struct PackedDouble: Sendable, Equatable, BitwiseCopyable {
    @usableFromInline var bits: UInt64

    @inlinable static var absent: UInt64 { 0x7FF4_0000_0000_0B5E }

    @inlinable public init(wrappedValue: Double?) { bits = wrappedValue?.bitPattern ?? Self.absent }

    @inlinable public var wrappedValue: Double? {
        get { bits == Self.absent ? nil : Double(bitPattern: bits) }
        set { bits = newValue?.bitPattern ?? Self.absent }
    }

    /// As `Double?` compares: nil equals nil, values by `==` (NaN equals nothing).
    @inlinable public static func == (a: Self, b: Self) -> Bool { a.wrappedValue == b.wrappedValue }
}

/// A `Date?` in eight bytes, as `PackedDouble` keeps its seconds since the reference date (the
/// `Double` a `Date` is).
@propertyWrapper
public struct PackedDate: Sendable, Equatable, BitwiseCopyable {
    @usableFromInline var seconds: PackedDouble

    @inlinable public init(wrappedValue: Date?) {
        seconds = PackedDouble(wrappedValue: wrappedValue?.timeIntervalSinceReferenceDate)
    }

    @inlinable public var wrappedValue: Date? {
        get { seconds.wrappedValue.map { Date(timeIntervalSinceReferenceDate: $0) } }
        set { seconds.wrappedValue = newValue?.timeIntervalSinceReferenceDate }
    }
}

/// gpsd's error estimates for one fix, in its own units and at its own confidence (about 95 %).
///
/// `nil` means the receiver or gpsd did not report the value. These are *not* CoreLocation's
/// accuracies (68 %); the accuracy stage converts them.
public struct FixErrors: Sendable, Equatable {
    /// Time uncertainty, seconds (gpsd `ept`).
    @PackedDouble public var time: Double?
    /// Longitude error, metres (gpsd `epx`).
    @PackedDouble public var longitude: Double?
    /// Latitude error, metres (gpsd `epy`).
    @PackedDouble public var latitude: Double?
    /// Horizontal (2D) position error, metres (gpsd `eph`).
    @PackedDouble public var horizontal: Double?
    /// Vertical error, metres (gpsd `epv`).
    @PackedDouble public var vertical: Double?
    /// Speed error, metres per second (gpsd `eps`).
    @PackedDouble public var speed: Double?
    /// Course error, degrees (gpsd `epd`).
    @PackedDouble public var course: Double?
    /// Climb error, metres per second (gpsd `epc`).
    @PackedDouble public var climb: Double?

    @inlinable
    public init(
        time: Double? = nil, longitude: Double? = nil, latitude: Double? = nil, horizontal: Double? = nil,
        vertical: Double? = nil, speed: Double? = nil, course: Double? = nil, climb: Double? = nil
    ) {
        self.time = time
        self.longitude = longitude
        self.latitude = latitude
        self.horizontal = horizontal
        self.vertical = vertical
        self.speed = speed
        self.course = course
        self.climb = climb
    }
}

extension FixErrors: CustomStringConvertible {
    /// The values reported, by gpsd's names: `FixErrors(epx: 3.2, epy: 4.1, eph: 5.0)`.
    public var description: String {
        let named: [(String, Double?)] = [
            ("ept", time), ("epx", longitude), ("epy", latitude), ("eph", horizontal), ("epv", vertical),
            ("eps", speed), ("epd", course), ("epc", climb),
        ]
        return "FixErrors(" + named.compactMap { name, value in value.map { "\(name): \($0)" } }.joined(separator: ", ")
            + ")"
    }
}

/// One time-position-velocity report from any source (gpsd, our NMEA engine, a replay).
///
/// Every unknown value is `nil` — never NaN, never a negative marker. Units: degrees (WGS 84)
/// for positions, metres for heights, metres per second for speeds, degrees clockwise from true
/// north for courses. (Stored eight bytes a value, `PackedDouble`: a fix is copied on each step
/// from its source to the app.)
public struct Fix: Sendable, Equatable {
    public var mode: FixMode
    public var quality: FixQuality
    /// When the receiver computed the fix (UTC), or nil when it did not say.
    @PackedDate public var time: Date?
    @PackedDouble public var latitude: Double?
    @PackedDouble public var longitude: Double?
    /// Height above the WGS 84 ellipsoid, metres (gpsd `altHAE`).
    @PackedDouble public var altitudeHAE: Double?
    /// Height above mean sea level, metres (gpsd `altMSL`).
    @PackedDouble public var altitudeMSL: Double?
    /// Geoid separation (MSL − HAE offset), metres (gpsd `geoidSep`).
    @PackedDouble public var geoidSeparation: Double?
    public var errors: FixErrors
    /// Speed over ground, m/s.
    @PackedDouble public var speed: Double?
    /// Course over ground, degrees from true north (gpsd `track`).
    @PackedDouble public var course: Double?
    /// Vertical speed, m/s, positive up.
    @PackedDouble public var climb: Double?
    /// Magnetic variation, degrees, east positive (gpsd `magvar`).
    @PackedDouble public var magneticVariation: Double?
    /// The device that produced the fix, when the source knows it (kept once for the process:
    /// `DeviceNames`).
    public var device: String? {
        get { DeviceNames.name(deviceNumber) }
        set { deviceNumber = DeviceNames.number(newValue) }
    }
    /// `device`'s number in `DeviceNames` (0: none). A fix is plain data: with the path's
    /// `String` in it, every copy and every destroy of a fix — a dozen a report on its way to the
    /// app — went through the runtime's generic value witnesses (a replay's delivering thread ran
    /// 6.5 % fewer instructions without it). The engine's stages compare and pass on the number,
    /// never the path.
    package var deviceNumber: UInt32 = 0

    @inlinable
    public init(
        mode: FixMode, quality: FixQuality = .unknown, time: Date? = nil, latitude: Double? = nil,
        longitude: Double? = nil, altitudeHAE: Double? = nil, altitudeMSL: Double? = nil,
        geoidSeparation: Double? = nil, errors: FixErrors = FixErrors(), speed: Double? = nil,
        course: Double? = nil, climb: Double? = nil, magneticVariation: Double? = nil, device: String? = nil
    ) {
        self.mode = mode
        self.quality = quality
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.altitudeHAE = altitudeHAE
        self.altitudeMSL = altitudeMSL
        self.geoidSeparation = geoidSeparation
        self.errors = errors
        self.speed = speed
        self.course = course
        self.climb = climb
        self.magneticVariation = magneticVariation
        self.device = device
    }

    /// True when the fix carries a horizontal position (mode 2D or 3D and both coordinates).
    @inlinable public var hasPosition: Bool { mode >= .twoDimensional && latitude != nil && longitude != nil }
}

extension Fix: CustomStringConvertible {
    /// The values reported: `Fix(3d, time: …, latitude: 48.1, longitude: 11.5, errors: …)`.
    public var description: String {
        let named: [(String, Any?)] = [
            ("quality", quality == .unknown ? nil : quality), ("time", time), ("latitude", latitude),
            ("longitude", longitude), ("altitudeHAE", altitudeHAE), ("altitudeMSL", altitudeMSL),
            ("geoidSeparation", geoidSeparation), ("speed", speed), ("course", course), ("climb", climb),
            ("magneticVariation", magneticVariation), ("device", device),
        ]
        let values = named.compactMap { name, value in value.map { "\(name): \($0)" } }
        return "Fix(" + ([mode.description] + values + ["errors: \(errors)"]).joined(separator: ", ") + ")"
    }
}

/// Dilution-of-precision figures (dimensionless); nil when unknown.
public struct DilutionOfPrecision: Sendable, Equatable {
    public var x: Double?
    public var y: Double?
    public var position: Double?
    public var horizontal: Double?
    public var vertical: Double?
    public var time: Double?
    public var geometric: Double?

    public init(
        x: Double? = nil, y: Double? = nil, position: Double? = nil, horizontal: Double? = nil,
        vertical: Double? = nil, time: Double? = nil, geometric: Double? = nil
    ) {
        self.x = x
        self.y = y
        self.position = position
        self.horizontal = horizontal
        self.vertical = vertical
        self.time = time
        self.geometric = geometric
    }
}

/// The satellite constellation a signal belongs to (gpsd/u-blox `gnssid`).
public enum Constellation: Int, Sendable, CustomStringConvertible {
    case gps = 0
    case sbas = 1
    case galileo = 2
    case beidou = 3
    case imes = 4
    case qzss = 5
    case glonass = 6
    case navic = 7
    case unknown = -1

    public var description: String {
        switch self {
        case .gps: "GPS"
        case .sbas: "SBAS"
        case .galileo: "Galileo"
        case .beidou: "BeiDou"
        case .imes: "IMES"
        case .qzss: "QZSS"
        case .glonass: "GLONASS"
        case .navic: "NavIC"
        case .unknown: "unknown"
        }
    }
}

/// One satellite in view.
public struct Satellite: Sendable, Equatable {
    /// gpsd's PRN (its own numbering across constellations).
    public var prn: Int
    public var constellation: Constellation
    /// Satellite number within its constellation.
    public var satelliteID: Int
    /// Signal-to-noise ratio, dB-Hz; nil when unknown.
    public var signalToNoise: Double?
    /// Elevation above the horizon, degrees; nil when unknown.
    public var elevation: Double?
    /// Azimuth, degrees from true north; nil when unknown.
    public var azimuth: Double?
    /// Whether the receiver used it in the solution.
    public var used: Bool

    public init(
        prn: Int, constellation: Constellation, satelliteID: Int, signalToNoise: Double?, elevation: Double?,
        azimuth: Double?, used: Bool
    ) {
        self.prn = prn
        self.constellation = constellation
        self.satelliteID = satelliteID
        self.signalToNoise = signalToNoise
        self.elevation = elevation
        self.azimuth = azimuth
        self.used = used
    }
}

/// A satellite report (gpsd SKY): the satellites in view and the DOPs.
public struct SkyView: Sendable, Equatable {
    public var time: Date?
    public var satellites: [Satellite]
    public var dilution: DilutionOfPrecision

    public var satellitesVisible: Int { satellites.count }
    public var satellitesUsed: Int { satellites.count(where: \.used) }

    public init(time: Date?, satellites: [Satellite], dilution: DilutionOfPrecision) {
        self.time = time
        self.satellites = satellites
        self.dilution = dilution
    }
}

/// A receiver that gpsd started or stopped reading (gpsd DEVICE).
public struct DeviceEvent: Sendable, Equatable {
    /// The device path, e.g. `/dev/ttyACM0`.
    public var path: String
    /// gpsd's driver name (e.g. `NMEA0183`, `u-blox`), nil until identified.
    public var driver: String?
    /// True when gpsd (re)activated the device, false when it deactivated it.
    public var activated: Bool
    /// Serial speed, bits per second, when known.
    public var baudRate: Int?
    /// Reporting cycle, seconds, when known.
    public var cycle: Double?

    public init(path: String, driver: String?, activated: Bool, baudRate: Int? = nil, cycle: Double? = nil) {
        self.path = path
        self.driver = driver
        self.activated = activated
        self.baudRate = baudRate
        self.cycle = cycle
    }
}

extension Double {
    /// `self` when finite, else nil: how every libgps double enters Swift.
    @inline(__always) package var finiteOrNil: Double? { isFinite ? self : nil }
}

/// A receiver's heading — where its antennas point, not where it moves (`course`): NMEA HDT,
/// THS and HDG, gpsd's ATT `heading`. Degrees from north, clockwise; nil when not reported.
public struct HeadingReading: Sendable, Equatable {
    /// Degrees from true north.
    public var trueHeading: Double?
    /// Degrees from magnetic north (a magnetic sensor's, deviation applied).
    public var magneticHeading: Double?
    /// The magnetic variation the sentence itself gave (HDG), degrees, east positive.
    public var magneticVariation: Double?
    /// The receiver (gpsd's device path), when known.
    public var device: String?

    public init(
        trueHeading: Double? = nil, magneticHeading: Double? = nil, magneticVariation: Double? = nil,
        device: String? = nil
    ) {
        self.trueHeading = trueHeading
        self.magneticHeading = magneticHeading
        self.magneticVariation = magneticVariation
        self.device = device
    }
}

extension FixErrors {
    /// The errors gpsd 3.22's UERE model (`gpsd_error_model`) makes from a DOP of 99 — NMEA's
    /// "no solution" (99.9, 99.99) — and above: eph = HDOP × 19 m, epx/epy = X/Y DOP × 15 m,
    /// epv = VDOP × 23 m, a quarter of each with DGPS. An error at or above these is the outage's,
    /// never a fix's estimate (the engine's `NoSolutionErrors`, the NMEA engine's GST rule).
    public struct NoSolution: Sendable {
        /// The smallest DOP taken for "no solution".
        public static let dilution = 99.0
        public let horizontal: Double
        public let axis: Double
        public let vertical: Double

        public init(dgps: Bool) {
            let scale = dgps ? 0.25 : 1.0
            horizontal = Self.dilution * 19 * scale
            axis = Self.dilution * 15 * scale
            vertical = Self.dilution * 23 * scale
        }

        /// True when `errors` has no horizontal estimate below the no-solution level.
        public func lacksHorizontal(_ errors: FixErrors) -> Bool {
            if let x = errors.longitude, let y = errors.latitude, x < axis, y < axis { return false }
            if let eph = errors.horizontal, eph < horizontal { return false }
            return true
        }
    }
}
