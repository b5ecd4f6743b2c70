import Foundation
import GNSSCore
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// Shared state read and written from several threads (run under Thread Sanitizer by
/// scripts/test.sh), and Apple's authorization flags, decided in one place.
@Suite("driver races and authorization flags", .timeLimit(.minutes(5)))
struct DriverRaceTests {
    static let loop = Paths.fixtures.appendingPathComponent("loop-1hz-gp.nmea").path

    @Test("NMEAReplaySource.statistics can be read while the recording is read")
    func statisticsWhileReading() async throws {
        let source = NMEAReplaySource(path: Self.loop)
        let ended = ExitLatch()
        // Another thread reads the statistics, without pause, from before the replay starts
        // until it has ended.
        let reads = Locked(0)
        let reader = ExitLatch()
        Thread.detachNewThread {
            repeat { reads.withLock { $0 += source.statistics.sentences >= 0 ? 1 : 0 } } while ended.status == nil
            reader.finish(0)
        }
        source.start { event in
            if case .problem(_, terminal: true) = event { ended.finish(0) }
        }
        await ended.wait()
        await reader.wait()
        source.stop()
        #expect(reads.withLock { $0 } > 0)
        #expect(source.statistics.sentences > 1000)
    }

    @Test("CLMonitor's diagnostics handler can be set from any thread while its manager reports problems")
    func monitorHandlerFromAnyThread() async throws {
        let source = ManualLocationSource(isLive: true)
        let monitor = await CLMonitor(
            "race", source: source,
            authorizer: LocationAuthorizer(
                appID: "race", initial: AuthorizationDecision(status: .authorizedAlways), isInUse: true),
            store: nil)
        let heard = Watched(0)
        let counting: DiagnosticsHandler = { _ in heard.withLock { $0 += 1 } }
        monitor.diagnosticsHandler = counting
        await monitor.add(
            CLMonitor.CircularGeographicCondition(
                center: CLLocationCoordinate2D(latitude: 51.45, longitude: -2.6), radius: 100),
            identifier: "here")
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for index in 0..<200 {
                    source.send(
                        .problem(
                            CLError(.locationUnknown, message: "problem \(index)", reason: CLError.Reason("r\(index)")),
                            terminal: false))
                }
            }
            group.addTask {
                for _ in 0..<200 { monitor.diagnosticsHandler = counting }
            }
        }
        // Each problem (a reason of its own) is said once, to the handler, wherever it was set from.
        #expect(await heard.wait(timeout: 30) { $0 == 200 })
    }

    @Test("not determined is a request in progress everywhere, never denied")
    func notDeterminedFlags() async throws {
        let flags = AuthorizationFlags(AuthorizationState(appID: "a", status: .notDetermined), servicesEnabled: true)
        #expect(flags.requestInProgress && !flags.denied)
        #expect(AuthorizationFlags(reason: .notDetermined, servicesEnabled: true) == flags)
        #expect(AuthorizationFlags(reason: .authorizationRequest, servicesEnabled: true) == flags)
        #expect(AuthorizationFlags(reason: .notAuthorized, servicesEnabled: false).deniedGlobally)
        #expect(AuthorizationFlags(reason: .notAuthorized, servicesEnabled: true).denied)
        #expect(
            AuthorizationFlags(
                AuthorizationState(appID: "a", status: .authorizedWhenInUse, isInUse: false), servicesEnabled: true
            ).insufficientlyInUse)
        #expect(!AuthorizationFlags(reason: .stale, servicesEnabled: true).any)

        // CLMonitor: a condition while not determined says a request is in progress.
        let monitor = await CLMonitor(
            "undetermined", source: NMEAReplaySource(path: Self.loop),
            authorizer: LocationAuthorizer(
                appID: "undetermined", initial: AuthorizationDecision(status: .notDetermined)),
            store: nil)
        monitor.diagnosticsHandler = Diagnostics.discard
        await monitor.add(
            CLMonitor.CircularGeographicCondition(
                center: CLLocationCoordinate2D(latitude: 51.45, longitude: -2.6), radius: 100),
            identifier: "here")
        var events = await monitor.events.makeAsyncIterator()
        let first = try await events.next()
        #expect(first?.state == .unknown)
        #expect(first?.authorizationRequestInProgress == true)
        #expect(first?.authorizationDenied == false)
    }
}
