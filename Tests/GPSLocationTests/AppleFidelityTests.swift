import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

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

/// A view model as apps write it: the completion, written in a main-actor method, sets the
/// model's state (it compiles only because Apple's handler is not `@Sendable`, and is safe only
/// because the handler runs on the main thread).
@MainActor final class PlaceModel {
    var city = ""
    var completedOnMain = false
    let geocoder = CLGeocoder()

    func look(up location: CLLocation, then done: @escaping () -> Void) {
        geocoder.reverseGeocodeLocation(location) { placemarks, _ in
            // The main actor's queue (a test harness may drain it on another thread than main).
            self.completedOnMain = EngineRunner.onMainQueue
            self.city = placemarks?.first?.locality ?? "?"
            done()
        }
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
        #expect(LocationValue(stub).horizontalAccuracy == 4.5)
        // A location archives whole: Apple's fields and GPSLocation's details.
        let location = CLLocation(
            coordinate: CLLocationCoordinate2D(latitude: 51.45, longitude: -2.59), altitude: 40,
            ellipsoidalAltitude: 88, horizontalAccuracy: 3, verticalAccuracy: 5, course: 90, courseAccuracy: 2,
            speed: 1.5, speedAccuracy: 0.2, timestamp: Date(timeIntervalSince1970: 1_781_510_400),
            gnss: GNSSDetails(fixMode: .threeDimensional, quality: .dgps, accuracyClass: .best, device: "/dev/ttyACM0"),
            sourceInformation: .receiver)
        let data = try NSKeyedArchiver.archivedData(withRootObject: location, requiringSecureCoding: true)
        let back = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: CLLocation.self, from: data))
        #expect(LocationValue(back) == LocationValue(location))

        let heading = StubHeading()
        #expect(heading.trueHeading == 87 && heading.magneticHeading == -1 && heading.headingAccuracy == 2)
        let visit = StubVisit()
        #expect(visit.horizontalAccuracy == 25 && visit.departureDate == .distantFuture)
        #expect(StubPlacemark().locality == "Cupertino" && StubPlacemark().country == nil)
        #expect(CLPlacemark(placemark: StubPlacemark()).locality == "Cupertino")
        let region = CLCircularRegion(
            center: CLLocationCoordinate2D(latitude: 51.45, longitude: -2.59), radius: 150, identifier: "depot")
        region.notifyOnExit = false
        let copied = try #require(region.copy() as? CLCircularRegion)
        #expect(copied !== region && copied == region && copied.radius == 150 && !copied.notifyOnExit)
        #expect(CLFloor().level == 0)
        #expect(!CLLocationSourceInformation().isSimulatedBySoftware)
    }

    @Test("a geocoder double overrides the completion form; the async form goes through it")
    func geocoderDouble() async throws {
        let places = try await StubGeocoder().reverseGeocodeLocation(CLLocation(latitude: 0, longitude: 0))
        #expect(places.first?.locality == "Cupertino")
    }

    @Test("a geocoder asked on the main thread completes there (Apple's rule); elsewhere on a global queue")
    @MainActor func geocoderQueues() async {
        let model = PlaceModel()
        await withCheckedContinuation { continuation in
            model.look(up: CLLocation(latitude: 48.8566, longitude: 2.3522)) { continuation.resume() }
        }
        #expect(model.completedOnMain && model.city == "Paris")
        let elsewhere = await Task.detached { () -> Bool in
            await withCheckedContinuation { continuation in
                CLGeocoder().reverseGeocodeLocation(CLLocation(latitude: 48.8566, longitude: 2.3522)) { _, _ in
                    continuation.resume(returning: EngineRunner.onMainQueue)
                }
            }
        }.value
        #expect(!elsewhere)
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
        // Apple's CLCondition is Codable: an app may keep its conditions itself.
        let condition = CLMonitor.CircularGeographicCondition(
            center: CLLocationCoordinate2D(latitude: 51.45, longitude: -2.59), radius: 150)
        let decoded = try JSONDecoder().decode(
            CLMonitor.CircularGeographicCondition.self, from: JSONEncoder().encode(condition))
        #expect(decoded == condition)
        // An app may declare a region state's description (Support/AppDeclaredConformances.swift):
        // the library declares none, so the app's is the one used.
        #expect((CLRegionState.inside as Any as? any CustomStringConvertible)?.description == "inside")
    }
}

@Suite(
    "Apple fidelity: liveUpdates pauses while stationary; headingAvailable before a heading (#54)",
    .timeLimit(.minutes(5)))
struct StationaryAndHeadingTests {
    /// Every update of a `liveUpdates` loop over `recording`, as an app's loop sees them.
    static func updates(
        _ recording: String, _ configuration: CLLocationUpdate.LiveConfiguration = .default
    ) async throws -> [CLLocationUpdate] {
        var all: [CLLocationUpdate] = []
        for try await update in CLLocationUpdate.liveUpdates(
            configuration, source: NMEAReplaySource(path: recording), authorizer: grantedAuthorizer(.authorizedAlways))
        {
            all.append(update)
        }
        return all
    }

    @Test(
        "a liveUpdates loop across the stops of a drive: one stationary update each, none while still, resumed on moving"
    )
    func stops() async throws {
        let path = Paths.fixtures.appendingPathComponent("stops-1hz-gp.nmea").path
        let located = try await Self.updates(path).filter { $0.location != nil }
        let flags = located.map(\.isStationary)
        let flips = zip(flags, flags.dropFirst()).filter { $0 != $1 }.count
        let stationary = located.filter(\.isStationary)
        let seconds = stationary.compactMap { $0.location?.timestamp.timeIntervalSince(located[0].location!.timestamp) }
        // The recording stands still at 59–359 s, 499–739 s (no fix 520–720 s) and 899–1099 s.
        #expect(stationary.count == 3, "one stationary update per stop: \(seconds)")
        #expect(flips == 6, "stationary once and moving once per stop, never flipping while still")
        for (second, stop) in zip(seconds, [59.0, 499, 899]) {
            // 10 s still at least; a little more where the recording's noise moved the anchor.
            #expect(second >= stop + 10 && second <= stop + 20, "noticed 10–20 s into the stop at \(stop) s: \(second)")
        }
        // Nothing while still: no update falls inside a stop after its stationary one.
        let times = located.compactMap { $0.location?.timestamp.timeIntervalSince(located[0].location!.timestamp) }
        for (noticed, end) in zip(seconds, [359.0, 739, 1099]) {
            #expect(!times.contains { $0 > noticed && $0 < end }, "an update while still after \(noticed) s")
        }
        // An aircraft's updates never pause.
        let airborne = try await Self.updates(path, .airborne).filter { $0.location != nil }
        #expect(airborne.count > located.count + 500)
    }

    @Test("headingAvailable() before any heading: a recording's sentences, the box's record, gpsd's compass drivers")
    func headingKnowledge() throws {
        let heading = Paths.fixtures.appendingPathComponent("heading-1hz-gp.nmea").path
        let drive = Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path
        let gpsdLog = Paths.fixtures.appendingPathComponent("heading-1hz-gp.gpsd.json").path
        #expect(NMEAReplaySource(path: heading).reportsHeading == true)
        #expect(NMEAReplaySource(path: drive).reportsHeading == false)
        #expect(HeadingScan.file(gpsdLog) == false, "gpsd's JSON is not NMEA: a replay of it delivers no heading")
        #expect(HeadingScan.file("/nonexistent.nmea") == nil)
        #expect(NMEAReplaySource(path: "-").reportsHeading == nil, "standard input cannot be read twice")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("heading-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        /// A recording of `sentences` (checksums added), after `padding` bytes of other lines.
        func recording(_ sentences: [String], padding: Int = 0) throws -> String {
            let lines = sentences.map { body -> String in
                let sum = body.utf8.reduce(UInt8(0), ^)
                return "$" + body + "*" + String(format: "%02X", sum) + "\r\n"
            }
            let url = folder.appendingPathComponent("\(UUID().uuidString).nmea")
            try Data(String(repeating: "x", count: padding).utf8 + Array(("\r\n" + lines.joined()).utf8)).write(to: url)
            return url.path
        }
        // Sentences that name a heading but carry none, or an invalid one, do not count; a heading
        // sentence past the scan's first chunk (64 KB) is found.
        #expect(HeadingScan.file(try recording(["GPHDT,,T", "GPTHS,123.4,V"])) == false)
        #expect(HeadingScan.file(try recording(["GNTHS,123.4,A"])) == true)
        #expect(HeadingScan.file(try recording(["GPHDT,87.0,T"], padding: (1 << 16) - 5)) == true)

        // gpsd or gpslocd: the box's record decides.
        let record = HeadingRecord(directory: folder.appendingPathComponent("cache"))
        let live = GPSDLocationSource(sky: false)
        #expect(!CLLocationManager.headingAvailable(seenInProcess: false, source: live, record: record))
        record.record(how: "a heading was delivered")
        #expect(record.entry()?.how == "a heading was delivered")
        #expect(CLLocationManager.headingAvailable(seenInProcess: false, source: live, record: record))
        // A recording says for itself, whatever the box has seen.
        #expect(
            !CLLocationManager.headingAvailable(
                seenInProcess: false, source: NMEAReplaySource(path: drive), record: record))
        #expect(
            CLLocationManager.headingAvailable(
                seenInProcess: true, source: NMEAReplaySource(path: drive), record: record))
        // A record in a folder others can write is not believed.
        chmod(folder.appendingPathComponent("cache").path, 0o777)
        #expect(record.entry() == nil)
        #expect(HeadingRecord.compassDrivers == ["True North", "OceanServer OS5000"])
    }
}
