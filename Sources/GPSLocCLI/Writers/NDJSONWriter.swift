import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// Writes gpsloc's NDJSON lines (see ARCHITECTURE.md and the README): one object per line,
/// each with `"type"`; unknown values are `null` (never −1, never NaN); timestamps are UTC
/// ISO 8601 with milliseconds; coordinates have 9 decimals.
///
/// Formatting is done by hand into a byte buffer: `String(format:)` costs microseconds a field.
public struct NDJSONWriter: Sendable {
    public private(set) var buffer: [UInt8] = []

    public init() { buffer.reserveCapacity(1 << 16) }

    public mutating func removeAll() { buffer.removeAll(keepingCapacity: true) }

    public mutating func location(_ location: LocationValue) {
        // A location line has a bounded length (fixed keys, 14 numbers of at most 21 bytes, a
        // timestamp, short enum names): it is laid out on the stack and appended at once.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Self.locationLineCapacity) { scratch in
            var line = ByteCursor(scratch.baseAddress!)
            Self.location(location, into: &line)
            buffer.append(contentsOf: UnsafeBufferPointer(start: scratch.baseAddress!, count: line.count))
        }
    }

    /// More than the longest location line (about 700 bytes).
    private static let locationLineCapacity = 1024

    private static func location(_ location: LocationValue, into line: inout ByteCursor) {
        let gnss = location.gnss
        line.put(#"{"type":"location","timestamp":""#)
        line.putTimestamp(location.timestamp)
        line.put(#"","latitude":"#)
        line.putFixed(location.coordinate.latitude, decimals: 9)
        line.put(#","longitude":"#)
        line.putFixed(location.coordinate.longitude, decimals: 9)
        let altitudeValid = location.verticalAccuracy > 0
        line.put(#","altitude":"#)
        line.putOptional(altitudeValid ? location.altitude : nil, decimals: 3)
        line.put(#","ellipsoidalAltitude":"#)
        line.putOptional(altitudeValid ? location.ellipsoidalAltitude : nil, decimals: 3)
        line.put(#","horizontalAccuracy":"#)
        let horizontal = location.horizontalAccuracy
        line.putOptional(horizontal >= 0 && horizontal < CLLocationDistanceMax ? horizontal : nil, decimals: 3)
        line.put(#","verticalAccuracy":"#)
        let vertical = location.verticalAccuracy
        line.putOptional(altitudeValid && vertical < CLLocationDistanceMax ? vertical : nil, decimals: 3)
        line.put(#","speed":"#)
        line.putOptional(location.speed >= 0 ? location.speed : nil, decimals: 3)
        line.put(#","speedAccuracy":"#)
        line.putOptional(location.speedAccuracy >= 0 ? location.speedAccuracy : nil, decimals: 3)
        line.put(#","course":"#)
        line.putOptional(location.course >= 0 ? location.course : nil, decimals: 3)
        line.put(#","courseAccuracy":"#)
        line.putOptional(location.courseAccuracy >= 0 ? location.courseAccuracy : nil, decimals: 3)
        line.put(#","fixMode":""#)
        line.put(gnss?.fixMode == .threeDimensional ? "3d" : "2d")
        line.put(#"","accuracyClass":""#)
        line.put(location.accuracyClass.literal)
        line.put(#"","reduced":"#)
        line.put(gnss?.reduced == true ? "true" : "false")
        line.put(#","simulated":"#)
        line.put(location.origin?.isSimulatedBySoftware == true ? "true" : "false")
        line.put("}\n")
    }

    /// `{"type":"region","identifier":ID,"event":"determined"|"enter"|"exit","state":"inside"|"outside"|"unknown","timestamp":ISO}`,
    /// with `"limitation"` when the region cannot be evaluated (`accuracyLimited`, `notAuthorized`).
    mutating func region(_ event: RegionEvent) {
        append(#"{"type":"region","identifier":"#)
        appendString(event.identifier)
        append(#","event":""#)
        appendText(event.kind.rawValue)
        append(#"","state":""#)
        appendText(event.state.rawValue)
        append(#"","timestamp":""#)
        appendTimestamp(event.timestamp)
        append("\"")
        if let limitation = event.limitation {
            append(#","limitation":""#)
            appendText(limitation.rawValue)
            append("\"")
        }
        append("}\n")
    }

    /// `{"type":"visit","arrival":ISO,"departure":ISO|null,"latitude":…,"longitude":…,"horizontalAccuracy":…}`.
    /// `{"type":"heading","timestamp":…,"trueHeading":…,"magneticHeading":…,"headingAccuracy":…}`;
    /// a heading the receiver cannot give is `null` (in Swift, −1).
    mutating func heading(_ heading: HeadingValue) {
        append(#"{"type":"heading","timestamp":""#)
        appendTimestamp(heading.timestamp)
        append(#"","trueHeading":"#)
        if heading.trueHeading >= 0 { appendFixed(heading.trueHeading, decimals: 3) } else { append("null") }
        append(#","magneticHeading":"#)
        if heading.magneticHeading >= 0 { appendFixed(heading.magneticHeading, decimals: 3) } else { append("null") }
        append(#","headingAccuracy":"#)
        appendFixed(heading.headingAccuracy, decimals: 1)
        append("}\n")
    }

    mutating func visit(_ visit: VisitRecord) {
        append(#"{"type":"visit","arrival":""#)
        appendTimestamp(visit.arrival)
        append(#"","departure":"#)
        if let departure = visit.departure {
            append("\"")
            appendTimestamp(departure)
            append("\"")
        } else {
            append("null")
        }
        append(#","latitude":"#)
        appendFixed(visit.latitude, decimals: 9)
        append(#","longitude":"#)
        appendFixed(visit.longitude, decimals: 9)
        append(#","horizontalAccuracy":"#)
        appendFixed(visit.horizontalAccuracy, decimals: 3)
        append("}\n")
    }

    public mutating func error(code: String, message: String) { codeAndMessage(type: "error", code, message) }

    public mutating func error(_ error: CLError) {
        self.error(code: error.code.name, message: error.description)
    }

    public mutating func authorization(
        status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization, reason: String? = nil
    ) {
        append(#"{"type":"authorization","status":"#)
        appendString(status.name)
        append(#","accuracy":"#)
        appendString(accuracy.name)
        if let reason {
            append(#","reason":"#)
            appendString(reason)
        }
        append("}\n")
    }

    public mutating func device(_ device: DeviceEvent) {
        append(#"{"type":"device","path":"#)
        appendString(device.path)
        append(#","driver":"#)
        if let driver = device.driver { appendString(driver) } else { append("null") }
        append(#","activated":"#)
        append(device.activated ? "true" : "false")
        append("}\n")
    }

    /// `{"type":"sky","time":…|null,"satellitesVisible":N,"satellitesUsed":N,"hdop":…,"vdop":…,"pdop":…,
    /// "satellites":[{"prn":…,"constellation":"GPS","svid":…,"elevation":…,"azimuth":…,"signalToNoise":…,"used":…}]}`
    public mutating func sky(_ sky: SkyView) {
        append(#"{"type":"sky","time":"#)
        if let time = sky.time {
            buffer.append(UInt8(ascii: "\""))
            appendTimestamp(time)
            buffer.append(UInt8(ascii: "\""))
        } else {
            append("null")
        }
        appendText(#","satellitesVisible":\#(sky.satellitesVisible),"satellitesUsed":\#(sky.satellitesUsed),"hdop":"#)
        appendOptional(sky.dilution.horizontal, decimals: 2)
        append(#","vdop":"#)
        appendOptional(sky.dilution.vertical, decimals: 2)
        append(#","pdop":"#)
        appendOptional(sky.dilution.position, decimals: 2)
        append(#","satellites":["#)
        for (index, satellite) in sky.satellites.enumerated() {
            if index > 0 { append(",") }
            appendText(#"{"prn":\#(satellite.prn),"constellation":"#)
            appendString(satellite.constellation.description)
            appendText(#","svid":\#(satellite.satelliteID),"elevation":"#)
            appendOptional(satellite.elevation, decimals: 1)
            append(#","azimuth":"#)
            appendOptional(satellite.azimuth, decimals: 1)
            append(#","signalToNoise":"#)
            appendOptional(satellite.signalToNoise, decimals: 1)
            append(#","used":"#)
            append(satellite.used ? "true" : "false")
            append("}")
        }
        append("]}\n")
    }

    public mutating func diagnostic(code: String, message: String) { codeAndMessage(type: "diagnostic", code, message) }

    /// One of `gpsloc doctor --json`'s checks: `{"type":"check","level":"ok|warn|fail","message":…}`.
    mutating func check(level: String, message: String) {
        append(#"{"type":"check","level":"#)
        appendString(level)
        append(#","message":"#)
        appendString(message)
        append("}\n")
    }

    /// One value of `object(_:)`'s fields.
    enum Field {
        case string(String)
        case bool(Bool)
        case integer(Int)
        case number(Double, decimals: Int)
        case null
    }

    /// `{"key":value,…}` in the order given (gpsloc serve's own objects).
    mutating func object(_ fields: [(String, Field)]) {
        append("{")
        for (index, (key, value)) in fields.enumerated() {
            if index > 0 { append(",") }
            appendString(key)
            append(":")
            switch value {
            case .string(let text): appendString(text)
            case .bool(let flag): append(flag ? "true" : "false")
            case .integer(let number): appendText(String(number))
            case .number(let number, let decimals): appendOptional(number, decimals: decimals)
            case .null: append("null")
            }
        }
        append("}\n")
    }

    /// `{"type":TYPE,"code":…,"message":…}`: the shape errors and diagnostics share.
    private mutating func codeAndMessage(type: String, _ code: String, _ message: String) {
        append(#"{"type":""#)
        appendText(type)
        append(#"","code":"#)
        appendString(code)
        append(#","message":"#)
        appendString(message)
        append("}\n")
    }

    // MARK: - Formatting

    /// A literal (the keys and punctuation): its bytes copied at once, with no String in between.
    @inline(__always) private mutating func append(_ text: StaticString) {
        text.withUTF8Buffer { buffer.append(contentsOf: $0) }
    }

    /// A value's text (an enum's name, a type).
    @inline(__always) private mutating func appendText(_ text: String) { buffer.append(contentsOf: text.utf8) }

    /// `value` as `ByteCursor.putOptional` writes it (`null` when nil or not finite).
    private mutating func appendOptional(_ value: Double?, decimals: Int) {
        appendFormatted { $0.putOptional(value, decimals: decimals) }
    }

    /// `value` rounded to `decimals` places, without exponent; `null` when not finite or too large.
    mutating func appendFixed(_ value: Double, decimals: Int) {
        appendFormatted { $0.putFixed(value, decimals: decimals) }
    }

    /// One number, laid out on the stack by `ByteCursor` (the one formatter) and appended once.
    private mutating func appendFormatted(_ put: (inout ByteCursor) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: ByteCursor.fixedCapacity) { scratch in
            var cursor = ByteCursor(scratch.baseAddress!)
            put(&cursor)
            buffer.append(contentsOf: UnsafeBufferPointer(start: scratch.baseAddress!, count: cursor.count))
        }
    }

    /// `2026-06-15T08:00:00.100Z`.
    mutating func appendTimestamp(_ date: Date) { appendISO8601Milliseconds(date, to: &buffer) }

    /// A JSON string with the escapes RFC 8259 requires (GNSSCore's `appendJSONString`).
    mutating func appendString(_ text: String) { appendJSONString(text, to: &buffer) }
}

/// Writes into memory its owner sized for what is written (a stack buffer): no capacity or
/// uniqueness checks per byte, as an array append makes.
struct ByteCursor {
    private let start: UnsafeMutablePointer<UInt8>
    private var next: UnsafeMutablePointer<UInt8>

    init(_ start: UnsafeMutablePointer<UInt8>) {
        self.start = start
        next = start
    }

    /// Bytes written so far.
    var count: Int { next - start }

    /// The most `putFixed` writes: `-`, 19 digits, `.`.
    static let fixedCapacity = 24

    /// (Through `withUTF8Buffer`: a one-character literal may be stored as a scalar, with no
    /// `utf8Start` to copy from.)
    @inline(__always) mutating func put(_ text: StaticString) {
        text.withUTF8Buffer { bytes in
            guard let base = bytes.baseAddress else { return }
            next.update(from: base, count: bytes.count)
            next += bytes.count
        }
    }

    @inline(__always) mutating func put(byte: UInt8) {
        next.pointee = byte
        next += 1
    }

    /// 10ⁿ for n in 0…18 (a switch: no array behind a lazy global on every number).
    @inline(__always) private static func power(_ exponent: Int) -> Int {
        switch exponent {
        case 0: 1
        case 1: 10
        case 2: 100
        case 3: 1000
        case 4: 10_000
        case 5: 100_000
        case 6: 1_000_000
        case 7: 10_000_000
        case 8: 100_000_000
        case 9: 1_000_000_000
        case 10: 10_000_000_000
        case 11: 100_000_000_000
        case 12: 1_000_000_000_000
        case 13: 10_000_000_000_000
        case 14: 100_000_000_000_000
        case 15: 1_000_000_000_000_000
        case 16: 10_000_000_000_000_000
        case 17: 100_000_000_000_000_000
        default: 1_000_000_000_000_000_000
        }
    }

    /// The decimal digits of `value` (none for 0), below 9e18: from its bit length (log₁₀ 2 ≈
    /// 1233 / 4096; at most 18 for 63 bits), corrected by one comparison.
    @inline(__always) private static func digitCount(_ value: UInt64) -> Int {
        let guess = ((64 - (value | 1).leadingZeroBitCount) &* 1233) &>> 12
        return guess &+ (value >= UInt64(truncatingIfNeeded: power(guess)) ? 1 : 0)
    }

    /// Two digits of `pair` (0…99) at `position`.
    @inline(__always) private static func putPair(_ pair: UInt64, at position: UnsafeMutablePointer<UInt8>) {
        let tens = pair / 10
        position[0] = UInt8(truncatingIfNeeded: tens) &+ 48
        position[1] = UInt8(truncatingIfNeeded: pair &- tens &* 10) &+ 48
    }

    /// `value` rounded to `decimals` places (≤ 9), without exponent; `null` when it is not
    /// finite or its scaled value passes 9e18. At most `fixedCapacity` bytes. Its length is
    /// known first, and the digits are written from the right, two at a time (half the
    /// divisions of one at a time, and no reversal).
    mutating func putFixed(_ value: Double, decimals: Int) {
        let magnitude = abs(value) * Double(Self.power(decimals))
        guard value.isFinite, magnitude < 9e18 else {
            put("null")
            return
        }
        // Rounded half away from zero, as `rounded()`, without its libm call: below 2^53 the
        // integer part and the remainder are exact, and above it the value is whole already.
        // (Through Int64: below 9e18 it is the same value, and one instruction on x86-64.)
        let whole = Int64(magnitude)
        var scaled = UInt64(bitPattern: magnitude - Double(whole) >= 0.5 ? whole &+ 1 : whole)
        let negative = value < 0 && scaled != 0
        let length =
            max(Self.digitCount(scaled), decimals &+ 1) &+ (decimals > 0 ? 1 : 0) &+ (negative ? 1 : 0)
        var position = next + length
        next = position
        var remaining = decimals
        while remaining >= 2 {
            position -= 2
            Self.putPair(scaled % 100, at: position)
            scaled /= 100
            remaining &-= 2
        }
        if remaining == 1 {
            position -= 1
            position.pointee = UInt8(truncatingIfNeeded: scaled % 10) &+ 48
            scaled /= 10
        }
        if decimals > 0 {
            position -= 1
            position.pointee = UInt8(ascii: ".")
        }
        while scaled >= 100 {
            position -= 2
            Self.putPair(scaled % 100, at: position)
            scaled /= 100
        }
        if scaled >= 10 {
            position -= 2
            Self.putPair(scaled, at: position)
        } else {
            position -= 1
            position.pointee = UInt8(truncatingIfNeeded: scaled) &+ 48
        }
        if negative {
            position -= 1
            position.pointee = UInt8(ascii: "-")
        }
    }

    mutating func putOptional(_ value: Double?, decimals: Int) {
        if let value, value.isFinite { putFixed(value, decimals: decimals) } else { put("null") }
    }

    /// `2026-06-15T08:00:00.100Z` (24 bytes).
    mutating func putTimestamp(_ date: Date) { next += writeISO8601Milliseconds(date, to: next) }
}
