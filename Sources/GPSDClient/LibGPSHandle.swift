internal import CGPS
import Foundation
import GNSSCore

/// The one owner of a heap-allocated `gps_data_t`. Nothing of C leaves this file.
///
/// Not thread-safe: each handle is used from one serial queue (`GPSDSource`'s) or one test.
/// The struct is allocated once in `init` and freed only in `deinit`.
final class LibGPSHandle {
    private let data: UnsafeMutablePointer<gps_data_t>
    private var isOpen = false
    /// Raw JSON of the last line `read()` consumed (gpsd's lines are < 10 KB; room for more).
    private var lineBuffer = [CChar](repeating: 0, count: 32 * 1024)

    init() {
        guard let pointer = cgps_alloc() else { fatalError("GPSLocation: out of memory allocating gps_data_t") }
        data = pointer
    }

    deinit {
        if isOpen { _ = cgps_close(data) }
        cgps_free(data)
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

    enum ReadResult {
        /// The connection failed or closed (`gps_read` returned -1); `errno` at that moment.
        case disconnected(errno: Int32)
        /// Only a partial line is buffered: wait for the socket to be readable again.
        case partial
        case report(GPSDReport)
    }

    func read() -> ReadResult {
        errno = 0
        let count = lineBuffer.withUnsafeMutableBufferPointer { buffer in
            cgps_read(data, buffer.baseAddress, Int32(buffer.count))
        }
        if count < 0 { return .disconnected(errno: errno) }
        if count == 0 { return .partial }
        // The line as bytes where libgps put them: no String of it is made.
        let report = lineBuffer.withUnsafeBufferPointer { buffer in
            let length = strnlen(buffer.baseAddress!, buffer.count)
            return UnsafeRawBufferPointer(start: buffer.baseAddress, count: length).withMemoryRebound(to: UInt8.self) {
                currentReport(line: $0)
            }
        }
        return .report(report)
    }

    /// True when another line is buffered or the socket is readable right now (no waiting).
    var hasPendingInput: Bool { cgps_waiting(data, 0) }

    /// Decodes one JSON object without a socket (`gps_unpack`), for tests and offline tools.
    func unpack(_ json: String) -> GPSDReport? {
        var bytes = Array(json.utf8CString)
        let status = bytes.withUnsafeMutableBufferPointer { cgps_unpack($0.baseAddress, data) }
        if status < 0 && !GPSDRawJSON.isDeactivation(Substring(json)) { return nil }
        return Array(json.utf8).withUnsafeBufferPointer { currentReport(line: $0) }
    }

    // MARK: - Conversion

    private func currentReport(line: UnsafeBufferPointer<UInt8>) -> GPSDReport {
        if GPSDRawJSON.hasClass("TPV", line) {
            return .fix(currentFix(device: GPSDRawJSON.stringField("\"device\":\"", in: line)))
        }
        if GPSDRawJSON.hasClass("SKY", line) { return .sky(currentSky()) }
        if GPSDRawJSON.hasClass("DEVICE", line) {
            if GPSDRawJSON.isDeactivation(line) {
                let path = GPSDRawJSON.stringField("\"path\":\"", in: line) ?? ""
                return .device(DeviceEvent(path: path, driver: nil, activated: false))
            }
            return .device(currentDevice())
        }
        if GPSDRawJSON.hasClass("DEVICES", line) {
            var devices: [DeviceEvent] = []
            var raw = cgps_device()
            var index: Int32 = 0
            while cgps_copy_listed_device(data, index, &raw) {
                devices.append(Self.deviceEvent(raw))
                index += 1
            }
            return .devices(devices)
        }
        return .other(className: GPSDRawJSON.stringField("\"class\":\"", in: line) ?? "")
    }

    private func currentFix(device: String?) -> Fix {
        var raw = cgps_fix()
        cgps_copy_fix(data, &raw)
        let time: Date? =
            raw.time_seconds == 0 && raw.time_nanoseconds == 0
            ? nil : Date(timeIntervalSince1970: Double(raw.time_seconds) + Double(raw.time_nanoseconds) / 1e9)
        return Fix(
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
            magneticVariation: raw.magnetic_var.finiteOrNil,
            device: device
        )
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
            cycle: raw.cycle_seconds > 0 ? raw.cycle_seconds : nil)
    }
}
