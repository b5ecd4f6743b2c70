import Foundation
import Testing

@testable import GPSLocation
@testable import LocationCore

/// The accuracy stage's rules for the altitude: a receiver's altitude reaches the app whenever
/// the fix is 3D and has one, with an honest vertical accuracy (README, the field table).
@Suite("accuracy rules: the altitude is never hidden")
struct AccuracyRulesTests {
    static func fix(errors: FixErrors, mode: FixMode = .threeDimensional, altitude: Double? = 41.6) -> Fix {
        Fix(
            mode: mode, time: Date(timeIntervalSince1970: 1_781_510_400), latitude: 51.45, longitude: -2.59,
            altitudeHAE: altitude.map { $0 + 48.2 }, altitudeMSL: altitude, geoidSeparation: 48.2, errors: errors)
    }

    @Test("epv gives the vertical accuracy (epv / 1.96)")
    func fromEPV() {
        let location = AccuracyStage().location(
            from: Self.fix(errors: FixErrors(longitude: 6, latitude: 8, vertical: 19.6)))
        #expect(abs(location.verticalAccuracy - 10) < 1e-12)
        #expect(location.altitude == 41.6 && abs(location.ellipsoidalAltitude - 89.8) < 1e-9)
    }

    @Test("no vertical estimate: the horizontal accuracy × 23/15 (gpsd's UERE ratio), altitude kept")
    func fromHorizontal() {
        let location = AccuracyStage().location(from: Self.fix(errors: FixErrors(horizontal: 20)))
        #expect(abs(location.horizontalAccuracy - 10) < 1e-12)
        #expect(abs(location.verticalAccuracy - 10 * 23 / 15) < 1e-12)
        #expect(location.altitude == 41.6)
    }

    @Test("no estimate at all: altitude kept with an unbounded accuracy; a 2D fix has none")
    func unbounded() {
        let location = AccuracyStage().location(from: Self.fix(errors: FixErrors()))
        #expect(location.verticalAccuracy == CLLocationDistanceMax && location.altitude == 41.6)
        let flat = AccuracyStage().location(from: Self.fix(errors: FixErrors(horizontal: 20), mode: .twoDimensional))
        #expect(flat.verticalAccuracy < 0)
        let none = AccuracyStage().location(from: Self.fix(errors: FixErrors(horizontal: 20), altitude: nil))
        #expect(none.verticalAccuracy < 0)
    }
}
