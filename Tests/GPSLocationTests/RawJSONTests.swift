import GPSLocation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSDClient

@Test func deactivationIsDetectedFromRawJSON() {
    #expect(GPSDRawJSON.isDeactivation(#"{"class":"DEVICE","path":"/dev/pts/3","activated":0}"#))
    #expect(
        !GPSDRawJSON.isDeactivation(#"{"class":"DEVICE","path":"/dev/pts/3","activated":"2024-01-01T00:00:00.000Z"}"#))
}

@Test("DEVICES (gpsd's reply to WATCH) lists the receivers, decoded by the real libgps")
func devicesListIsDecoded() {
    let decoder = GPSDJSONDecoder()
    let two = decoder.decode(
        #"{"class":"DEVICES","devices":[{"class":"DEVICE","path":"/dev/ttyACM0","driver":"u-blox","activated":"2026-11-30T03:12:36.099Z","native":1,"bps":9600,"parity":"N","stopbits":1,"cycle":1.00},{"class":"DEVICE","path":"/dev/ttyUSB0","activated":"2026-11-30T03:12:36.005Z","native":0,"bps":4800,"parity":"N","stopbits":1,"cycle":1.00}]}"#
    )
    guard case .devices(let devices) = two else {
        Issue.record("not decoded as DEVICES: \(String(describing: two))")
        return
    }
    #expect(devices.map(\.path) == ["/dev/ttyACM0", "/dev/ttyUSB0"])
    #expect(devices.map(\.driver) == ["u-blox", nil])
    #expect(devices.allSatisfy { $0.activated })
    #expect(devices.first?.baudRate == 9600)
    #expect(decoder.decode(#"{"class":"DEVICES","devices":[]}"#) == .devices([]), "gpsd with no receiver")
    #expect(GPSDError.noDevice(at: GPSDEndpoint()).description.contains("gpsdctl add"))
}

@Test("a TPV's device: each fix names its own path when the paths change, repeat, nest or are missing")
func tpvDevicePathsFollowEachLine() {
    // The handle remembers the last path's bytes and number (`deviceNumber(in:)`); a path that
    // is a prefix or an extension of the last, an empty one, or none must not be taken for it.
    let paths: [String?] = [
        "/dev/ttyACM0", "/dev/ttyACM0", "/dev/ttyUSB1", "/dev/ttyACM0", "/dev/ttyACM", "/dev/ttyACM00",
        nil, "/dev/ttyACM00", "", "", "/dev/gnss/é-receiver", "/dev/ttyACM0", nil, nil, "/dev/ttyUSB1",
    ]
    let decoder = GPSDJSONDecoder()
    for (index, path) in paths.enumerated() {
        let device = path.map { #""device":"\#($0)","# } ?? ""
        let line =
            #"{"class":"TPV",\#(device)"mode":3,"time":"2026-12-08T00:00:0\#(index % 10).000Z","lat":48.1,"lon":11.5}"#
        guard case .fix(let fix)? = decoder.decode(line) else {
            Issue.record("line \(index) not decoded as a fix: \(line)")
            continue
        }
        #expect(fix.device == path, "line \(index)")
        // A decoder that saw nothing before agrees.
        guard case .fix(let alone)? = GPSDJSONDecoder().decode(line) else {
            Issue.record("line \(index) not decoded as a fix by a new decoder: \(line)")
            continue
        }
        #expect(alone.device == path, "line \(index), alone")
    }
}
