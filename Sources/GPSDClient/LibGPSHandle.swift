internal import CGPS
import FoundationEssentials
import GNSSCore

#if canImport(Glibc)
    import Glibc
#endif

/// The one owner of a heap-allocated `gps_data_t`. Nothing of C leaves this file.
///
/// Not thread-safe: each handle is used from one serial queue (`GPSDConnection`'s) or one test.
/// The struct is allocated once in `init` and freed only in `deinit`.
package final class LibGPSHandle {
    private let data: UnsafeMutablePointer<gps_data_t>
    private var isOpen = false
    /// The path the last TPV named, and its number (`deviceNumber(in:)`).
    private var lastDevice: (path: [UInt8], number: UInt32)?

    init() {
        guard let pointer = cgps_alloc() else { fatalError("GPSLocation: out of memory allocating gps_data_t") }
        data = pointer
    }

    deinit {
        if isOpen { _ = cgps_close(data) }
        cgps_free(data)
        inbound.deallocate()
        window.deallocate()
    }

    /// The libgps API version this binary was built against, e.g. (11, 0).
    static var apiVersion: (major: Int, minor: Int) { (Int(cgps_api_major()), Int(cgps_api_minor())) }

    /// libgps's text for a code (`NL_*` negative codes, or errno values).
    static func errorText(_ code: Int32) -> String {
        if code > 0 { return String(cString: strerror(code)) }
        return cgps_errstr(code).map { String(cString: $0) } ?? "unknown libgps error \(code)"
    }

    func open(_ endpoint: GPSDEndpoint) throws(GPSDError) {
        precondition(!isOpen, "LibGPSHandle.open called twice")
        let code = cgps_open(endpoint.host, String(endpoint.port), data)
        guard code == 0 else {
            throw GPSDError(
                code: .unreachable, endpoint: endpoint, libgpsCode: code, libgpsMessage: Self.errorText(code))
        }
        // A port in the kernel's ephemeral range with nothing listening can be reached by a
        // connection to itself (TCP simultaneous open): that is "nothing listens", not a gpsd.
        if SelfConnection.check(cgps_fd(data)) {
            _ = cgps_close(data)
            throw GPSDError(
                code: .unreachable, endpoint: endpoint, libgpsCode: ECONNREFUSED,
                libgpsMessage: Self.errorText(ECONNREFUSED))
        }
        isOpen = true
    }

    /// Sends `?WATCH={"enable":true,"json":true}` (with `"device"` when the endpoint names one).
    func watch(_ endpoint: GPSDEndpoint) throws(GPSDError) {
        var flags = UInt32(CGPS_WATCH_ENABLE | CGPS_WATCH_JSON)
        if endpoint.device != nil { flags |= UInt32(CGPS_WATCH_DEVICE) }
        errno = 0
        let result: Int32 =
            if let device = endpoint.device {
                device.withCString { cgps_stream(data, flags, $0) }
            } else {
                cgps_stream(data, flags, nil)
            }
        if result != 0 {
            let code = errno != 0 ? errno : Int32(result)
            throw GPSDError(
                code: .watchFailed, endpoint: endpoint, libgpsCode: code, libgpsMessage: Self.errorText(code))
        }
    }

    var fileDescriptor: Int32 { cgps_fd(data) }

    // MARK: - Reading the stream

    /// gpsd's lines, framed as `gps_read` frames them: a buffer of libgps's size
    /// (`GPS_JSON_RESPONSE_MAX` × 2), a line ends at `\n`, and a buffer full without one is an
    /// error. Each line is decoded in place by `gps_unpack` — the decoder `gps_read` calls — and
    /// only when it is a report we turn into a value (TPV, DEVICE, DEVICES, and SKY when wanted);
    /// the others (GST, VERSION, WATCH, ERROR, …) become `.other` without being decoded, as
    /// their decoded fields were never read. One `recv` per wake-up fills the buffer, so a burst
    /// of lines costs no `select` per line and no copy of each line.
    ///
    /// The buffer and its window live in memory of their own, not in stored properties: every
    /// access to a class's stored property is checked for exclusivity at run time (a thread-local
    /// lookup each), and these are reached several times for every report.
    private let inbound = UnsafeMutablePointer<UInt8>.allocate(capacity: LibGPSHandle.capacity)
    private static let capacity = 20_480
    /// `inbound[start..<end]` holds bytes received but not yet consumed.
    private struct Window {
        var start = 0
        var end = 0
    }
    private let window: UnsafeMutablePointer<Window> = {
        let window = UnsafeMutablePointer<Window>.allocate(capacity: 1)
        window.initialize(to: Window())
        return window
    }()

    enum ReceiveResult: Equatable {
        /// New bytes are buffered (`nextReport` gives the complete lines among them).
        case received
        /// Nothing came: the receive timeout passed, or a signal interrupted the wait.
        case nothing
        /// The connection closed or failed; `errno` then (0: gpsd closed it).
        case closed(errno: Int32)
        /// The buffer is full and holds no complete line: a line longer than libgps accepts.
        case overlong
    }

    /// Reads what the socket holds, blocking until something comes (or the socket's receive
    /// timeout passes, or it is shut down); with `wait` false, only what has come (else
    /// `.nothing`).
    func receive(wait: Bool = true) -> ReceiveResult {
        if window.pointee.start > 0 {
            // Move the unconsumed tail to the front (once per receive, not once per line).
            let start = window.pointee.start
            _ = memmove(inbound, inbound + start, window.pointee.end - start)
            window.pointee.end -= start
            window.pointee.start = 0
        }
        let end = window.pointee.end
        guard end < Self.capacity else { return .overlong }
        let count = recv(cgps_fd(data), inbound + end, Self.capacity - end, wait ? 0 : Int32(MSG_DONTWAIT))
        if count > 0 {
            window.pointee.end += count
            return .received
        }
        if count == 0 { return .closed(errno: 0) }
        if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { return .nothing }
        return .closed(errno: errno)
    }

    /// The next complete buffered line as a report, or nil when no complete line is buffered.
    /// `sky`: decode SKY reports (else they are `.other("SKY")`).
    func nextReport(sky: Bool) -> GPSDEvent? {
        let (start, end) = (window.pointee.start, window.pointee.end)
        guard start < end, let newline = memchr(inbound + start, 0x0A, end - start) else { return nil }
        let lineStart = inbound + start
        let length = newline.assumingMemoryBound(to: UInt8.self) - lineStart
        window.pointee.start = start + length + 1
        // Terminated where the newline was, as libgps does (a `\r` before it stays).
        lineStart[length] = 0
        return report(line: lineStart, length: length, sky: sky)
    }

    /// Decodes one NUL-terminated line (in place) when it is a report we read.
    private func report(line: UnsafeMutablePointer<UInt8>, length: Int, sky: Bool) -> GPSDEvent {
        let bytes = UnsafeBufferPointer(start: line, count: length)
        guard let kind = GPSDRawJSON.classValue(bytes) else { return .other(className: "") }
        let wanted =
            GPSDRawJSON.classIs(kind, "TPV") || GPSDRawJSON.classIs(kind, "DEVICE")
            || GPSDRawJSON.classIs(kind, "DEVICES") || GPSDRawJSON.classIs(kind, "GST")
            || GPSDRawJSON.classIs(kind, "ATT") || (sky && GPSDRawJSON.classIs(kind, "SKY"))
        if GPSDRawJSON.classIs(kind, "ERROR") {
            return .error(message: GPSDRawJSON.stringField("\"message\":\"", in: bytes) ?? "(no message)")
        }
        guard wanted else {
            // A SKY left undecoded comes every cycle: its name is the literal, not a new string.
            return .other(className: GPSDRawJSON.classIs(kind, "SKY") ? "SKY" : String(decoding: kind, as: UTF8.self))
        }
        line.withMemoryRebound(to: CChar.self, capacity: length + 1) { _ = cgps_unpack($0, data) }
        return currentReport(line: bytes, kind: kind)
    }

    /// Decodes one JSON object without a socket (`gps_unpack`), for tests and offline tools.
    func unpack(_ json: String) -> GPSDEvent? {
        var bytes = Array(json.utf8CString)
        let status = bytes.withUnsafeMutableBufferPointer { cgps_unpack($0.baseAddress, data) }
        if status < 0 && !GPSDRawJSON.isDeactivation(Substring(json)) { return nil }
        return Array(json.utf8).withUnsafeBufferPointer { line in
            guard let kind = GPSDRawJSON.classValue(line) else { return .other(className: "") }
            return currentReport(line: line, kind: kind)
        }
    }

    // MARK: - Conversion

    /// The report `line` (whose class value is `kind`) gave, from what `gps_unpack` stored.
    private func currentReport(line: UnsafeBufferPointer<UInt8>, kind: UnsafeBufferPointer<UInt8>) -> GPSDEvent {
        if GPSDRawJSON.classIs(kind, "TPV") {
            return .fix(currentFix(deviceNumber: deviceNumber(in: line)))
        }
        if GPSDRawJSON.classIs(kind, "SKY") { return .sky(currentSky()) }
        if GPSDRawJSON.classIs(kind, "GST") {
            var raw = cgps_gst()
            cgps_copy_gst(data, &raw)
            let time: Date? =
                raw.time_seconds == 0 && raw.time_nanoseconds == 0
                ? nil : Date(timeIntervalSince1970: Double(raw.time_seconds) + Double(raw.time_nanoseconds) / 1e9)
            return .errorEstimate(
                ReceiverErrorEstimate(
                    time: time, latitude: raw.latitude.finiteOrNil, longitude: raw.longitude.finiteOrNil,
                    altitude: raw.altitude.finiteOrNil))
        }
        if GPSDRawJSON.classIs(kind, "ATT") {
            guard let heading = cgps_attitude_heading(data).finiteOrNil, (0...360).contains(heading) else {
                return .other(className: "ATT")
            }
            return .heading(
                HeadingReading(
                    trueHeading: heading == 360 ? 0 : heading,
                    device: GPSDRawJSON.stringField("\"device\":\"", in: line)))
        }
        if GPSDRawJSON.classIs(kind, "DEVICE") {
            if GPSDRawJSON.isDeactivation(line) {
                let path = GPSDRawJSON.stringField("\"path\":\"", in: line) ?? ""
                return .device(DeviceEvent(path: path, driver: nil, activated: false))
            }
            return .device(currentDevice())
        }
        if GPSDRawJSON.classIs(kind, "DEVICES") {
            var devices: [DeviceEvent] = []
            var raw = cgps_device()
            var index: Int32 = 0
            while cgps_copy_listed_device(data, index, &raw) {
                devices.append(Self.deviceEvent(raw))
                index += 1
            }
            return .devices(devices)
        }
        return .other(className: String(decoding: kind, as: UTF8.self))
    }

    /// The number (`DeviceNames`) of the path in a TPV line's `"device"` (0 when it has none). A
    /// receiver names the same path in every fix: that path's bytes are compared with the last
    /// ones, and only a new path is made a string and looked up in the process's table.
    private func deviceNumber(in line: UnsafeBufferPointer<UInt8>) -> UInt32 {
        guard let path = GPSDRawJSON.fieldBytes("\"device\":\"", in: line) else { return 0 }
        if let last = lastDevice, last.path.count == path.count,
            path.isEmpty || memcmp(last.path, path.baseAddress!, path.count) == 0
        {
            return last.number
        }
        let number = DeviceNames.number(String(decoding: path, as: UTF8.self))
        lastDevice = (Array(path), number)
        return number
    }

    private func currentFix(deviceNumber: UInt32) -> Fix {
        var raw = cgps_fix()
        cgps_copy_fix(data, &raw)
        let time: Date? =
            raw.time_seconds == 0 && raw.time_nanoseconds == 0
            ? nil : Date(timeIntervalSince1970: Double(raw.time_seconds) + Double(raw.time_nanoseconds) / 1e9)
        var fix = Fix(
            mode: FixMode(rawValue: Int(raw.mode)) ?? .notSeen,
            quality: FixQuality(rawValue: Int(raw.status)) ?? .unknown,
            time: time,
            latitude: raw.latitude.finiteOrNil,
            longitude: raw.longitude.finiteOrNil,
            altitudeHAE: raw.alt_hae.finiteOrNil,
            altitudeMSL: raw.alt_msl.finiteOrNil,
            geoidSeparation: raw.geoid_sep.finiteOrNil,
            errors: FixErrors(
                time: raw.ept.finiteOrNil, longitude: raw.epx.finiteOrNil, latitude: raw.epy.finiteOrNil,
                horizontal: raw.eph.finiteOrNil, vertical: raw.epv.finiteOrNil, speed: raw.eps.finiteOrNil,
                course: raw.epd.finiteOrNil, climb: raw.epc.finiteOrNil),
            speed: raw.speed.finiteOrNil,
            course: raw.track.finiteOrNil,
            climb: raw.climb.finiteOrNil,
            magneticVariation: raw.magnetic_var.finiteOrNil
        )
        fix.deviceNumber = deviceNumber
        return fix
    }

    private func currentSky() -> SkyView {
        var raw = cgps_sky()
        cgps_copy_sky(data, &raw)
        var satellites: [Satellite] = []
        satellites.reserveCapacity(Int(raw.visible))
        var sat = cgps_satellite()
        var index: Int32 = 0
        while cgps_copy_satellite(data, index, &sat) {
            satellites.append(
                Satellite(
                    prn: Int(sat.prn), constellation: Constellation(rawValue: Int(sat.gnssid)) ?? .unknown,
                    satelliteID: Int(sat.svid), signalToNoise: sat.ss.finiteOrNil,
                    elevation: sat.elevation.finiteOrNil, azimuth: sat.azimuth.finiteOrNil, used: sat.used))
            index += 1
        }
        let time: Date? =
            raw.time_seconds == 0
            ? nil : Date(timeIntervalSince1970: Double(raw.time_seconds) + Double(raw.time_nanoseconds) / 1e9)
        return SkyView(
            time: time, satellites: satellites,
            dilution: DilutionOfPrecision(
                x: raw.xdop.finiteOrNil, y: raw.ydop.finiteOrNil, position: raw.pdop.finiteOrNil,
                horizontal: raw.hdop.finiteOrNil, vertical: raw.vdop.finiteOrNil, time: raw.tdop.finiteOrNil,
                geometric: raw.gdop.finiteOrNil))
    }

    private func currentDevice() -> DeviceEvent {
        var raw = cgps_device()
        cgps_copy_device(data, &raw)
        return Self.deviceEvent(raw)
    }

    private static func deviceEvent(_ raw: cgps_device) -> DeviceEvent {
        let path = withUnsafeBytes(of: raw.path) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        let driver = withUnsafeBytes(of: raw.driver) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
        return DeviceEvent(
            path: path, driver: driver.isEmpty || driver == "-" ? nil : driver, activated: true,
            baudRate: raw.baudrate > 0 ? Int(raw.baudrate) : nil,
            // libgps 3.22 stores a DEVICES list's "cycle" (a real) into a timespec's seconds as
            // raw bits (1.0 reads back as 4.6e18 s): a cycle beyond an hour is no cycle.
            cycle: raw.cycle_seconds > 0 && raw.cycle_seconds <= 3600 ? raw.cycle_seconds : nil)
    }
}
