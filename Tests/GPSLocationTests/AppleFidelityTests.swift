import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation

// #54: the shapes of real app code that CoreLocation ports lean on — an empty placeholder
// location, a subclass as a test double, an app's own Encodable, a heading check before
// starting, a liveUpdates loop across a stop.

/// An app's own JSON for a location (five keys), as apps that upload positions write it.
extension CLLocation: Encodable {
    private enum AppKeys: String, CodingKey { case lat, lon, acc, t, v }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AppKeys.self)
        try container.encode(coordinate.latitude, forKey: .lat)
        try container.encode(coordinate.longitude, forKey: .lon)
        try container.encode(horizontalAccuracy, forKey: .acc)
        try container.encode(timestamp.timeIntervalSince1970, forKey: .t)
        try container.encode(speed, forKey: .v)
    }
}

/// A test double as apps write one: a fixed position, overridden properties.
final class StubLocation: CLLocation, @unchecked Sendable {
    let label: String
    init(label: String, latitude: Double, longitude: Double) {
        self.label = label
        super.init(latitude: latitude, longitude: longitude)
    }
    required init?(coder: NSCoder) { nil }
    override var horizontalAccuracy: CLLocationAccuracy { 4.5 }
    override var timestamp: Date { Date(timeIntervalSince1970: 1_781_510_400) }
}

/// A subclass that adds no initializer inherits every one of Apple's.
final class PlainSubclass: CLLocation, @unchecked Sendable {}

/// A heading double, made with NSObject's `init()` as apps make them.
final class StubHeading: CLHeading, @unchecked Sendable {
    override var trueHeading: CLLocationDirection { 87 }
    override var headingAccuracy: CLLocationDirectionAccuracy { 2 }
}

/// A visit double: no `init(from:)` needed, as with Apple's.
final class StubVisit: CLVisit {
    override var horizontalAccuracy: CLLocationAccuracy { 25 }
}

/// A placemark double.
final class StubPlacemark: CLPlacemark, @unchecked Sendable {
    override var locality: String? { "Cupertino" }
}

/// A geocoder double: one override serves the completion and the async forms.
final class StubGeocoder: CLGeocoder, @unchecked Sendable {
    override func reverseGeocodeLocation(
        _ location: CLLocation, completionHandler: @escaping CLGeocodeCompletionHandler
    ) {
        completionHandler([StubPlacemark()], nil)
    }
}

/// The model of Apple's live-updates sample: an empty location until the first one comes.
@MainActor final class LastLocationModel {
    var lastLocation = CLLocation()
}

@Suite("Apple fidelity: the types and signals real apps lean on (#54)", .timeLimit(.minutes(5)))
struct AppleFidelityTests {
    @Test("CLLocation() is Apple's empty location, as a @Published placeholder uses it")
    @MainActor func emptyLocation() {
        let model = LastLocationModel()
        let empty = model.lastLocation
        #expect(empty.coordinate.latitude == 0 && empty.coordinate.longitude == 0)
        #expect(empty.horizontalAccuracy == 0 && empty.verticalAccuracy == -1 && empty.altitude == 0)
        #expect(empty.speed == -1 && empty.course == -1 && empty.speedAccuracy == -1 && empty.courseAccuracy == -1)
        #expect(abs(empty.timestamp.timeIntervalSinceNow) < 60)
        #expect(empty.gnss == nil && empty.sourceInformation == nil && empty.floor == nil)
        model.lastLocation = CLLocation(latitude: 51.45, longitude: -2.59)
        #expect(model.lastLocation.coordinate.latitude == 51.45)
    }

    @Test("a subclass is a test double: Apple's initializers are designated, properties overridable")
    func subclasses() throws {
        let stub = StubLocation(label: "depot", latitude: 51.45, longitude: -2.59)
        let asLocation: CLLocation = stub
        #expect(asLocation.horizontalAccuracy == 4.5 && asLocation.timestamp.timeIntervalSince1970 == 1_781_510_400)
        #expect((asLocation as? StubLocation)?.label == "depot")
        #expect(stub.distance(from: CLLocation(latitude: 51.45, longitude: -2.59)) == 0)
        let plain = PlainSubclass(
            coordinate: CLLocationCoordinate2D(latitude: 1, longitude: 2), altitude: 3, horizontalAccuracy: 4,
            verticalAccuracy: 5, course: 6, courseAccuracy: 7, speed: 8, speedAccuracy: 9, timestamp: Date())
        #expect(plain.speedAccuracy == 9 && plain.ellipsoidalAltitude == 3)
        #expect(PlainSubclass().coordinate.latitude == 0)
        // NSCopying as Apple's: an immutable location copies to itself.
        #expect((stub.copy() as? StubLocation) === stub)
        // What a subclass archives is what it reports (its overrides).
        #expect(LocationValues(stub).horizontalAccuracy == 4.5)
        // A location archives whole: Apple's fields and GPSLocation's details.
        let location = CLLocation(
            coordinate: CLLocationCoordinate2D(latitude: 51.45, longitude: -2.59), altitude: 40,
            ellipsoidalAltitude: 88, horizontalAccuracy: 3, verticalAccuracy: 5, course: 90, courseAccuracy: 2,
            speed: 1.5, speedAccuracy: 0.2, timestamp: Date(timeIntervalSince1970: 1_781_510_400),
            gnss: GNSSDetails(fixMode: .threeDimensional, quality: .dgps, accuracyClass: .best, device: "/dev/ttyACM0"),
            sourceInformation: .receiver)
        let data = try NSKeyedArchiver.archivedData(withRootObject: location, requiringSecureCoding: true)
        let back = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: CLLocation.self, from: data))
        #expect(LocationValues(back) == LocationValues(location))

        let heading = StubHeading()
        #expect(heading.trueHeading == 87 && heading.magneticHeading == -1 && heading.headingAccuracy == 2)
        let visit = StubVisit()
        #expect(visit.horizontalAccuracy == 25 && visit.departureDate == .distantFuture)
        #expect(StubPlacemark().locality == "Cupertino" && StubPlacemark().country == nil)
        #expect(CLPlacemark(placemark: StubPlacemark()).locality == "Cupertino")
        #expect(CLFloor().level == 0)
        #expect(!CLLocationSourceInformation().isSimulatedBySoftware)
    }

    @Test("a geocoder double overrides the completion form; the async form goes through it")
    func geocoderDouble() async throws {
        let places = try await StubGeocoder().reverseGeocodeLocation(CLLocation(latitude: 0, longitude: 0))
        #expect(places.first?.locality == "Cupertino")
    }

    @Test("an app's own Encodable is the one JSONEncoder uses (CLLocation is not Codable here, as Apple's)")
    func appEncodable() throws {
        let location = CLLocation(
            coordinate: CLLocationCoordinate2D(latitude: 51.45, longitude: -2.59), altitude: 40, horizontalAccuracy: 3,
            verticalAccuracy: 5, course: 90, speed: 1.5, timestamp: Date(timeIntervalSince1970: 1_781_510_400))
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(location)) as? [String: Double]
        #expect(json.map { Set($0.keys) } == ["lat", "lon", "acc", "t", "v"])
        #expect(json?["v"] == 1.5)
        // A heading and a visit are not Codable either: only NSSecureCoding, as Apple's.
        #expect(!(CLHeading() as Any is any Encodable))
        #expect(!(CLVisit() as Any is any Encodable))
        #expect(!(CLPlacemark() as Any is any Encodable))
    }
}
