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
