import Testing

@testable import GPSLocation

@Test func deactivationIsDetectedFromRawJSON() {
    #expect(GPSDRawJSON.isDeactivation(#"{"class":"DEVICE","path":"/dev/pts/3","activated":0}"#))
    #expect(
        !GPSDRawJSON.isDeactivation(#"{"class":"DEVICE","path":"/dev/pts/3","activated":"2024-01-01T00:00:00.000Z"}"#))
}
