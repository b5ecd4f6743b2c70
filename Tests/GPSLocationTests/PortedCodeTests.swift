import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// CoreLocation-style async code compiles unchanged and runs against fixtures (the programs
/// that use the process-wide default source run in `PortedProgramsTests`, lane B).
@Suite("CoreLocation code ported by changing its import", .serialized, .timeLimit(.minutes(5)))
struct PortedCodeTests {
    @Test("liveUpdates: an AsyncSequence of locations; cancelling stops the source")
    func liveUpdates() async throws {
        let fixes = try FixtureFixes.load("drive-1hz-gp")
        let final = try #require(fixes.last { $0.mode >= .twoDimensional }?.time)
        // The list does not report its end: the sequence stays open, as a live one does.
        let source = FixListSource(fixes, interval: 0.001, reportsEnd: false)
        var locations: [CLLocation] = []
        for try await update in CLLocationUpdate.liveUpdates(source: source, authorizer: grantedAuthorizer()) {
            if let location = update.location { locations.append(location) }
            // Latest wins: a consumer starved of CPU (a loaded test run) may see fewer than 20
            // of the 277 locations, but always the newest one.
            if locations.count == 20 || locations.last?.timestamp == final { break }
        }
        #expect(!locations.isEmpty)
        #expect(locations.map(\.timestamp) == locations.map(\.timestamp).sorted())
        #expect(await source.wait(timeout: 5) { !$0.isRunning }, "breaking out stops the source")
    }

    @Test("liveUpdates ends, saying why, when its source ends")
    func liveUpdatesEnd() async throws {
        let fixes = try FixtureFixes.load("clean-1hz-multi")
        var last: CLLocationUpdate?
        var count = 0
        for try await update in CLLocationUpdate.liveUpdates(
            source: FixListSource(fixes), authorizer: grantedAuthorizer())
        {
            last = update
            count += 1
        }
        #expect(count >= 1)
        #expect(last?.location == nil && last?.locationUnavailable == true)
        #expect(last?.message?.contains("fixes ended") == true)
    }

    @Test("liveUpdates says why there is no location when denied")
    func liveUpdatesDenied() async throws {
        let fixes = try FixtureFixes.load("drive-1hz-gp")
        for try await update in CLLocationUpdate.liveUpdates(
            source: FixListSource(fixes), authorizer: grantedAuthorizer(.denied))
        {
            #expect(update.location == nil)
            #expect(update.authorizationDenied)
            #expect(update.message?.contains("denied") == true)
            break
        }
    }
}
