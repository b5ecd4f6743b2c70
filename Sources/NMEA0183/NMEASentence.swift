import GNSSCore

/// Counts of what the NMEA parser met and skipped. Nothing here ever produces a position.
public struct NMEAStatistics: Sendable, Equatable {
    /// Sentences decoded: with a valid checksum, or complete without one (`withoutChecksum`).
    public var sentences = 0
    /// Sentences whose `*hh` checksum did not match.
    public var badChecksum = 0
    /// Lines cut off: no `*hh` and not a complete, well-formed sentence (a line cut off
    /// mid-field, the last line of a recording without its line feed, a sentence followed
    /// by another `$` on the same line).
    public var missingChecksum = 0
    /// Complete sentences accepted without a `*hh` checksum, as gpsd accepts them: the line
    /// ends in a line feed, the type is one we decode, and the field count and every field's
    /// syntax are what that type requires. Some timing and older receivers send only these.
    public var withoutChecksum = 0
    /// Satellite lists (GSV) without a checksum: skipped, as gpsd skips them — a GSV's length
    /// varies with its satellites, so a cut-off one cannot be told from a whole one.
    public var satellitesWithoutChecksum = 0
    /// Lines longer than `NMEAParser.maximumLineLength`.
    public var tooLong = 0
    /// Lines with no `$` or `!` start (noise, binary data, comments are not counted here).
    public var noise = 0
    /// Well-formed sentences of a type we do not use (TXT, GBS, proprietary, …).
    public var ignored = 0
    /// Sentences of a known type whose fields made no sense (skipped whole).
    public var malformed = 0
    /// `#` comment lines (gpsfake headers).
    public var comments = 0

    /// Nothing counted yet.
    public init() {}
}

/// A calendar date from RMC (`year` has two digits) or ZDA (four digits).
public struct NMEADate: Sendable, Equatable, BitwiseCopyable {
    /// 1–31.
    public var day: Int
    /// 1–12.
    public var month: Int
    /// Two digits from RMC, four from ZDA.
    public var year: Int
}

/// One satellite of a GSV sentence. Stored compactly (the sentence carries whole numbers;
/// a fraction some receivers add survives as a `Float`): a GSV's four fit without the heap.
public struct NMEASatellite: Sendable, Equatable, BitwiseCopyable {
    private var id: Int32
    /// NaN: the field was empty.
    private var elevationValue: Float
    private var azimuthValue: Float
    private var signalToNoiseValue: Float

    /// A satellite; nil for an empty field.
    public init(prn: Int, elevation: Double?, azimuth: Double?, signalToNoise: Double?) {
        id = Int32(clamping: prn)
        elevationValue = elevation.map(Float.init) ?? .nan
        azimuthValue = azimuth.map(Float.init) ?? .nan
        signalToNoiseValue = signalToNoise.map(Float.init) ?? .nan
    }

    /// The satellite's number as the sentence gives it.
    public var prn: Int { Int(id) }
    /// Degrees above the horizon, or nil.
    public var elevation: Double? { elevationValue.isNaN ? nil : Double(elevationValue) }
    /// Degrees clockwise from true north, or nil.
    public var azimuth: Double? { azimuthValue.isNaN ? nil : Double(azimuthValue) }
    /// dB-Hz, or nil (not tracked).
    public var signalToNoise: Double? { signalToNoiseValue.isNaN ? nil : Double(signalToNoiseValue) }

    /// The same number and fields.
    public static func == (a: Self, b: Self) -> Bool {
        a.prn == b.prn && a.elevation == b.elevation && a.azimuth == b.azimuth && a.signalToNoise == b.signalToNoise
    }
}

/// What fills an `NMEAInlineList`'s unused places.
public protocol NMEAInlineListElement: BitwiseCopyable, Equatable, Sendable {
    /// The value of a place not in use.
    static var filler: Self { get }
}

extension Int16: NMEAInlineListElement {
    /// Zero.
    public static var filler: Int16 { 0 }
}

extension NMEASatellite: NMEAInlineListElement {
    /// Satellite 0 with every field empty.
    public static var filler: NMEASatellite { NMEASatellite(prn: 0, elevation: nil, azimuth: nil, signalToNoise: nil) }
}

/// A short list of at most `capacity` elements kept inline (no heap allocation), so a decoded
/// sentence is plain data: copied by a move of bytes and dropped without any work.
public struct NMEAInlineList<let capacity: Int, Element: NMEAInlineListElement>: RandomAccessCollection, Sendable,
    Equatable, BitwiseCopyable
{
    private var storage: InlineArray<capacity, Element>
    private var length: UInt8 = 0

    /// An empty list.
    public init() { storage = InlineArray(repeating: .filler) }

    /// The first element's position (always zero).
    public var startIndex: Int { 0 }
    /// The number of elements.
    public var endIndex: Int { Int(length) }
    /// The element at `position` (below `endIndex`).
    public subscript(position: Int) -> Element { storage[position] }

    /// Adds `element`; beyond `capacity` elements are dropped.
    public mutating func append(_ element: Element) {
        guard Int(length) < capacity else { return }
        storage[Int(length)] = element
        length += 1
    }

    /// The same elements in the same order.
    public static func == (a: Self, b: Self) -> Bool { a.elementsEqual(b) }
}

extension NMEAInlineList: ExpressibleByArrayLiteral {
    /// A list of `elements` (beyond `capacity`, dropped).
    public init(arrayLiteral elements: Element...) {
        self.init()
        for element in elements { append(element) }
    }
}

extension NMEAInlineList: CustomStringConvertible {
    /// As an array's.
    public var description: String { Array(self).description }
}

/// One decoded sentence, with the values GPSLocation uses. Numbers are nil when the field is empty.
///
/// Every case is plain data (`BitwiseCopyable`): passing a sentence on copies its bytes, and
/// dropping one costs nothing — measured, the runtime's generic copy and destroy of the enum
/// when two cases held arrays were a sixth of the parser's instructions.
public enum NMEASentence: Sendable, Equatable, BitwiseCopyable {
    /// RMC. `valid`: status A.
    case rmc(
        time: Double?, valid: Bool, latitude: Double?, longitude: Double?, speedKnots: Double?, course: Double?,
        date: NMEADate?, modeIndicator: UInt8?)
    /// GGA / GNS: quality 0 means no fix. `talker`: a GGA's two talker letters (gpsd compares a
    /// GGA's time with the previous GGA's of the same talker); 0 for a GNS, which it does not.
    case gga(
        time: Double?, latitude: Double?, longitude: Double?, quality: Int, satellites: Int?, hdop: Double?,
        altitude: Double?, geoidSeparation: Double?, talker: UInt16 = 0)
    /// GLL: `valid`: status A and mode indicator not N.
    case gll(time: Double?, latitude: Double?, longitude: Double?, valid: Bool)
    /// GSA: fix mode 1–3, DOPs, the satellites used (at most 12), the NMEA 4.10 system id, and
    /// how many fields the sentence had (gpsd's rules depend on it).
    case gsa(
        mode: Int?, pdop: Double?, hdop: Double?, vdop: Double?, used: NMEAInlineList<12, Int16>, systemID: Int?,
        talker: UInt16, fieldCount: Int = 18)
    /// One GSV part: up to four satellites (NMEA's most; a fifth and later in one sentence are
    /// dropped), and how many fields the sentence had.
    case gsv(
        talker: UInt16, total: Int, part: Int, inView: Int, satellites: NMEAInlineList<4, NMEASatellite>,
        fieldCount: Int = 20)
    /// VTG: course true and speed.
    case vtg(course: Double?, speedKnots: Double?, valid: Bool)
    /// GST: 1-σ errors in metres.
    case gst(time: Double?, latitudeError: Double?, longitudeError: Double?, altitudeError: Double?)
    /// GBS (NMEA 3.0 and later): the receiver's expected 1-σ errors of latitude, longitude and
    /// altitude in metres, for the fix of `time`.
    case gbs(time: Double?, latitudeError: Double?, longitudeError: Double?, altitudeError: Double?)
    /// ZDA: full date.
    case zda(time: Double?, day: Int, month: Int, year: Int)
    /// Garmin PGRME: estimated horizontal and vertical position errors, metres.
    case pgrme(horizontal: Double?, vertical: Double?)
    /// Garmin PGRMZ: the altitude in whole feet (only when the sentence gives it in feet, `f`),
    /// and the fix mode of its third field (1 none, 2 2D, 3 3D; nil otherwise).
    case pgrmz(altitudeFeet: Int?, mode: Int?)
    /// A heading: HDT (true), THS (true, not when its mode is V), HDG (a magnetic sensor's
    /// reading with its deviation applied, and the sentence's own variation, east positive).
    /// Degrees; the receiver's heading, not its course over ground.
    case heading(trueHeading: Double?, magneticHeading: Double?, variation: Double?)
}
