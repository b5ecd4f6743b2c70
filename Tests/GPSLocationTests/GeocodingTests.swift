import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #23: `CLGeocoder` with real, offline data — GeoNames' towns from Debian's libgeonames0, which
/// `scripts/setup.sh` installs.
@Suite(
    "CLGeocoder: offline place names from GeoNames",
    .enabled(
        if: FileManager.default.fileExists(atPath: "/usr/lib/x86_64-linux-gnu/libgeonames.so.0")
            || FileManager.default.fileExists(atPath: "/usr/lib/aarch64-linux-gnu/libgeonames.so.0")
            || ProcessInfo.processInfo.environment["CI"] != nil,
        "needs libgeonames0 (scripts/setup.sh installs it)"),
    .timeLimit(.minutes(5)))
struct GeocodingTests {
    static func location(_ latitude: Double, _ longitude: Double, accuracy: Double = 5) -> CLLocation {
        CLLocation(
            coordinate: CLLocationCoordinate2D(latitude: latitude, longitude: longitude), altitude: 0,
            horizontalAccuracy: accuracy, verticalAccuracy: -1, timestamp: Date())
    }

    @Test("reverse: the town a precise position is in, its region, country, ISO code and time zone")
    func reverse() async throws {
        let placemarks = try await CLGeocoder().reverseGeocodeLocation(Self.location(51.45388, -2.591704))
        let place = try #require(placemarks.first)
        #expect(placemarks.count == 1)
        #expect(place.locality == "Bristol" && place.name == "Bristol")
        #expect(place.administrativeArea == "England")
        #expect(place.country == "United Kingdom" && place.isoCountryCode == "GB")
        #expect(place.timeZone?.identifier == "Europe/London")
        #expect(place.thoroughfare == nil && place.postalCode == nil, "the table has no streets")
        let centre = try #require(place.location)
        #expect(centre.distance(from: Self.location(51.45388, -2.591704)) < 2_000)
    }

    @Test("a location known only to kilometres names its area's town, never a village it may be in")
    func uncertainty() async throws {
        // Keynsham (15,641 people) is 8.3 km from Bristol's centre.
        let precise = try await CLGeocoder().reverseGeocodeLocation(Self.location(51.4135, -2.4968))
        #expect(precise.first?.locality == "Keynsham")
        let vague = try await CLGeocoder().reverseGeocodeLocation(Self.location(51.4135, -2.4968, accuracy: 9_000))
        #expect(vague.first?.locality == "Bristol")
    }

    @Test("a reduced-accuracy app, through the real gate: only its reduced position's town")
    func reducedThroughTheGate() async throws {
        let manager = CLLocationManager(
            source: NMEAReplaySource(path: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path),
            authorizer: grantedAuthorizer(.authorizedAlways, accuracy: .reducedAccuracy))
        manager.lastLocationCache = nil
        manager.diagnosticsHandler = Diagnostics.discard
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.startUpdatingLocation()
        #expect(await delegate.waitForLocations(1, timeout: 60))
        manager.stopUpdatingLocation()
        let reduced = try #require(delegate.locations.first)
        #expect(reduced.gnss?.reduced == true && reduced.horizontalAccuracy >= 1_000)
        let place = try #require(try await CLGeocoder().reverseGeocodeLocation(reduced).first)
        #expect(place.locality == "Bristol" && place.isoCountryCode == "GB")
    }

    @Test("mid-ocean and invalid coordinates: geocodeFoundNoResult saying why")
    func noResult() async throws {
        let geocoder = CLGeocoder()
        for location in [Self.location(0, -30), Self.location(91, 0)] {
            do {
                _ = try await geocoder.reverseGeocodeLocation(location)
                Issue.record("a town was invented for \(location.coordinate)")
            } catch let error as CLError {
                #expect(error.code == .geocodeFoundNoResult, "\(error)")
                #expect(!error.message.isEmpty)
            }
        }
    }

    @Test("forward: a name, with a region or country to choose between namesakes; accents do not matter")
    func forward() async throws {
        let geocoder = CLGeocoder()
        let bristol = try await geocoder.geocodeAddressString("bristol")
        #expect(bristol.first?.isoCountryCode == "GB", "the largest namesake first")
        #expect(bristol.count > 1)
        let american = try await geocoder.geocodeAddressString("Bristol, US")
        #expect(!american.isEmpty && american.allSatisfy { $0.isoCountryCode == "US" })
        let tennessee = try await geocoder.geocodeAddressString("Bristol, Tennessee")
        #expect(tennessee.map(\.administrativeArea) == ["Tennessee"])
        let zurich = try await geocoder.geocodeAddressString("ZURICH")
        #expect(zurich.first?.isoCountryCode == "CH")
        let near = try await geocoder.geocodeAddressString(
            "Bristol",
            in: CLCircularRegion(center: .init(latitude: 41.67, longitude: -71.27), radius: 10_000, identifier: "RI"))
        #expect(near.map(\.administrativeArea) == ["Rhode Island"])
        do {
            _ = try await geocoder.geocodeAddressString("Xyzzyville")
            Issue.record("a town was invented")
        } catch let error as CLError {
            #expect(error.code == .geocodeFoundNoResult && error.message.contains("Xyzzyville"))
        }
    }

    @Test("completion handlers, isGeocoding, and a placemark through NSKeyedArchiver")
    func handlersAndArchiving() async throws {
        let geocoder = CLGeocoder()
        let result = Watched<[CLPlacemark]?>(nil)
        geocoder.reverseGeocodeLocation(Self.location(48.8566, 2.3522)) { placemarks, _ in
            result.withLock { $0 = placemarks }
        }
        #expect(await result.wait { $0 != nil })
        #expect(!geocoder.isGeocoding)
        let paris = try #require(result.withLock { $0 }?.first)
        #expect(paris.locality == "Paris" && paris.timeZone?.identifier == "Europe/Paris")
        let data = try NSKeyedArchiver.archivedData(withRootObject: paris, requiringSecureCoding: true)
        let back = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: CLPlacemark.self, from: data))
        #expect(back.locality == "Paris" && back.isoCountryCode == "FR" && back.timeZone == paris.timeZone)
        #expect(back.location?.coordinate == paris.location?.coordinate)
    }

    @Test("without the data: CLError.network naming the package to install, never an invented place")
    func missingData() async throws {
        let geocoder = CLGeocoder(library: "libgeonames-not-installed.so.0")
        do {
            _ = try await geocoder.reverseGeocodeLocation(Self.location(51.45, -2.59))
            Issue.record("a place without data")
        } catch let error as CLError {
            #expect(error.code == .network)
            #expect(error.message.contains("apt-get install libgeonames0"), "\(error.message)")
        }
    }
}

/// #23: a heading and a visit archive and come back, as apps cache them.
@Suite("CLHeading and CLVisit archive (NSSecureCoding)", .timeLimit(.minutes(5)))
struct HeadingVisitArchivingTests {
    @Test("NSKeyedArchiver with secure coding gives back every field")
    func roundTrips() throws {
        let heading = CLHeading(
            magneticHeading: 38.344, trueHeading: 37.3, headingAccuracy: 0, timestamp: Date(timeIntervalSince1970: 1e9))
        let visit = CLVisit(
            arrivalDate: Date(timeIntervalSince1970: 1e9), departureDate: .distantFuture,
            coordinate: CLLocationCoordinate2D(latitude: 51.45, longitude: -2.59), horizontalAccuracy: 35)
        let headingData = try NSKeyedArchiver.archivedData(withRootObject: heading, requiringSecureCoding: true)
        let headingBack = try #require(
            try NSKeyedUnarchiver.unarchivedObject(ofClass: CLHeading.self, from: headingData))
        #expect(headingBack.trueHeading == 37.3 && headingBack.magneticHeading == 38.344)
        #expect(headingBack.timestamp == heading.timestamp && headingBack.headingAccuracy == 0)
        let visitData = try NSKeyedArchiver.archivedData(withRootObject: visit, requiringSecureCoding: true)
        let visitBack = try #require(try NSKeyedUnarchiver.unarchivedObject(ofClass: CLVisit.self, from: visitData))
        #expect(visitBack.coordinate == visit.coordinate && visitBack.departureDate == .distantFuture)
        #expect(visitBack.horizontalAccuracy == 35 && visitBack.arrivalDate == visit.arrivalDate)
    }
}
