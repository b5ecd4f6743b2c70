import Foundation
import GPSDProcesses
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #23: ten programs in the styles real apps use (Tests/GPSLocationTests/PortedCode), each as
/// written for Apple platforms but for the import, built here and run against a real gpsd fed
/// by gpsfake — the way a ported app meets a receiver. Serialized in lane B: they point the
/// process-wide default source and shared authorizer at that gpsd.
extension RealGPSD.LaneD {
    @Suite(
        "ported programs against a real gpsd", .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason),
        .timeLimit(.minutes(5)))
    struct PortedProgramsTests {
        /// gpsfake replaying `fixture` (20 ms a sentence: about five fixes a second) behind
        /// `CLLocationManager()`, with the shared authorizer granting Always.
        /// `ended`, when given, counts the end of the replay (gpsd gone once gpsfake has played it all).
        static func withGPSFake(
            _ fixture: String, ended: EventCounter? = nil, _ body: () async throws -> Void
        ) async throws {
            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent(fixture), cycle: 0.02)
            defer { server.stop() }
            // gpsfake attaches its pseudo-terminal in well under a second when idle; on a loaded
            // machine it was seen to take more than the default 5 s.
            // When it does not, the failure says what gpsfake did (session 38: once, under two busy
            // loops beside the whole suite, it was not attached after 30 s — no more was known).
            let attached = await server.waitUntilDeviceAttached(timeout: .seconds(30))
            #expect(
                attached,
                """
                gpsd never listed gpsfake's receiver: \(server.failureAfterExit(timeout: .zero) ?? "gpsfake running, or ended cleanly"); \
                its watcher saw: \(server.watcherOutput.suffix(600))
                """)
            CLLocationManager.setDefaultSource {
                let source = GPSDLocationSource(
                    endpoint: server.endpoint, noDataTimeout: nil, reconnect: nil, isLive: false)
                if let ended { return endTelling(source, ended) }
                return source
            }
            defer { CLLocationManager.setDefaultSource { GPSDLocationSource(sky: false) } }
            CLLocationManager.sharedAuthorizer.set(AuthorizationDecision(status: .authorizedAlways))
            CLLocationManager.sharedAuthorizer.isInUse = true
            try await body()
        }

        /// The circle the programs start in. The replay runs at about five fixes a second from
        /// gpsfake's start: 150 m was left 2 s into it, and a busy fresh-clone run (ci17g) started
        /// the programs later than that ("start outside"). 700 m is left after about 45 fixes
        /// (9 s of the replay); the drive goes on to 3.6 km.
        static let startRadius = 700.0

        @Test(
            "a delegate service, a one-shot helper, a geofence, CLMonitor, significant changes, geocoding, an archive")
        func drive() async throws {
            try await Self.withGPSFake("drive-1hz-gp.nmea") {
                let start = CLLocationCoordinate2D(latitude: 51.454219, longitude: -2.595767)
                let service = LocationService()
                let geofence = GeofenceWatcher()
                let tracker = SignificantChangeTracker()
                let places = PlaceNameService()
                let file = FileManager.default.temporaryDirectory.appendingPathComponent("last-\(UUID()).archive")
                defer { try? FileManager.default.removeItem(at: file) }
                let store = LastLocationStore(file: file)
                let modern = ModernRegionMonitor()
                let monitorName = "ported-\(UUID().uuidString.prefix(8))"
                let monitoring = Task {
                    await modern.run(name: monitorName, center: start, radius: Self.startRadius, until: 2)
                }
                // A thread-safe peer on the same gpsd connection: the ported programs are read only
                // once stopped, and are stopped once this one has seen ten fixes more than the
                // drive needed (all of them get each fix from the one shared connection, in turn).
                let observer = CLLocationManager()
                let observed = RecordingDelegate()
                observer.delegate = observed
                observer.startUpdatingLocation()
                defer { observer.stopUpdatingLocation() }

                let farthest = Watched(0.0)
                let origin = CLLocation(latitude: start.latitude, longitude: start.longitude)
                service.onUpdate = { coordinate in
                    let distance = CLLocation(latitude: coordinate.latitude, longitude: coordinate.longitude)
                        .distance(from: origin)
                    farthest.withLock { $0 = max($0, distance) }
                }
                service.start()
                geofence.watch(
                    latitude: start.latitude, longitude: start.longitude, radius: Self.startRadius, name: "start")
                tracker.start()
                places.start()
                store.start()
                let current = try await CurrentLocation().get()
                #expect(current.horizontalAccuracy >= 0 && current.horizontalAccuracy <= 100)
                #expect(current.sourceInformation?.isSimulatedBySoftware == true, "a gpsfake replay")

                // The drive leaves the start circle within seconds (about five fixes a second);
                // the programs are not thread-safe, so they are read only once stopped.
                #expect(await farthest.wait(timeout: 60) { $0 > Self.startRadius + 400 })
                let seen = observed.locations.count
                #expect(await observed.wait { $0.locations.count >= seen + 10 })
                service.stop()
                geofence.stop()
                tracker.stop()
                store.stop()
                monitoring.cancel()
                _ = await monitoring.value

                #expect(service.received > 10 && service.statusLog.first == "full")
                #expect(geofence.log.prefix(1) == ["start inside"], "\(geofence.log)")
                #expect(geofence.log.contains("left start"), "\(geofence.log)")
                let events = await modern.events
                #expect(events.first == "home satisfied", "\(events)")
                #expect(tracker.points.count >= 1, "the first location at once")
                let place = places.text ?? "nil \(String(describing: places.error))"
                #expect(place == "You are in Bristol, United Kingdom")
                let restored = try #require(store.restored)
                #expect(abs(restored.coordinate.latitude - 51.45) < 0.05 && restored.horizontalAccuracy >= 0)
            }
        }

        @Test("LocationService runs against the drive fixture")
        func runsAgainstFixture() async throws {
            let fixes = try FixtureFixes.load("drive-1hz-gp")
            let ended = EventCounter()
            CLLocationManager.setDefaultSource { endTelling(FixListSource(fixes, interval: 0.0005), ended) }
            CLLocationManager.sharedAuthorizer.set(AuthorizationDecision(status: .authorizedWhenInUse))
            CLLocationManager.sharedAuthorizer.isInUse = true
            defer { CLLocationManager.setDefaultSource { GPSDLocationSource(sky: false) } }

            let service = LocationService()
            service.start()
            // The service, like most CoreLocation code, is not thread-safe: read it only after
            // stop() has returned (which waits for callbacks in flight) — stopped once the list
            // has ended (a recording waits for its app: all but the last batch are delivered).
            #expect(await ended.wait { $0 > 0 })
            service.stop()
            #expect(service.received > 100)
            #expect(service.statusLog.first == "full")
            #expect(
                service.failures.allSatisfy {
                    let reason = ($0 as? CLError)?.reason
                    return reason == .stale || reason == .sourceEnded
                }, "only the drive's no-fix start and tunnel, and the list's end")
            let coordinate = try #require(service.currentCoordinate)
            #expect(abs(coordinate.latitude - 51.45) < 0.1 && abs(coordinate.longitude + 2.5) < 0.2)
            #expect(service.latest != nil)
        }

        @Test("a compass: the receiver's headings as cardinal directions")
        func compass() async throws {
            // The compass is not thread-safe: read once stopped, after the whole replay (240
            // sentences, about 5 s) has reached gpsd's end.
            let ended = EventCounter()
            try await Self.withGPSFake("heading-1hz-gp.nmea", ended: ended) {
                let compass = CompassModel()
                compass.start()
                #expect(await ended.wait { $0 > 0 })
                compass.stop()
                #expect(compass.headings.count >= 20)
                // Nothing failed but the end of the replay: gpsfake's receiver goes, then gpsd
                // closes the connection (the compass keeps the last error it heard).
                let endOfReplay: Set<CLError.Reason> = [.receiverDeactivated, .gpsdLost]
                #expect(
                    compass.failed == nil || (compass.failed as? CLError)?.reason.map(endOfReplay.contains) == true,
                    "\(String(describing: compass.failed))")
                #expect(compass.headings.prefix(3) == [30.0, 37.3, 44.6], "\(compass.headings.prefix(3))")
                #expect(
                    compass.directions.prefix(7) == ["NE", "NE", "NE", "NE", "NE", "NE", "E"],
                    "\(compass.directions.prefix(7))")
            }
        }

        @Test("a heading provider that checks headingAvailable() first, on a recording of a heading receiver")
        func headingFirst() async throws {
            let path = Paths.fixtures.appendingPathComponent("heading-1hz-gp.nmea").path
            let ended = EventCounter()
            CLLocationManager.setDefaultSource {
                endTelling(NMEAReplaySource(path: path, pacing: .realTime(speed: 20)), ended)
            }
            defer { CLLocationManager.setDefaultSource { GPSDLocationSource(sky: false) } }
            CLLocationManager.sharedAuthorizer.set(AuthorizationDecision(status: .authorizedAlways))
            CLLocationManager.sharedAuthorizer.isInUse = true
            // What the box knows before any heading is delivered (the process may have seen
            // one in another test, so the rule is asked without that).
            #expect(
                CLLocationManager.headingAvailable(
                    seenInProcess: false, source: CLLocationManager.defaultSource(),
                    record: HeadingRecord(
                        directory: FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString))))
            // At 20 times real time (3 s), as a receiver sends them: the provider is not
            // thread-safe and is read once the recording has ended.
            let provider = HeadingProvider()
            provider.start()
            #expect(await ended.wait { $0 > 0 })
            provider.stop()
            #expect(
                !provider.unavailable && provider.headings.count >= 20,
                "\(provider.headings.count) \(String(describing: provider.failed))")
        }

        @Test("a visit logger on a recording with stops (the NMEA engine: gpsfake would take 45 minutes)")
        func visits() async throws {
            let path = Paths.fixtures.appendingPathComponent("stops-1hz-gp.nmea").path
            let ended = EventCounter()
            CLLocationManager.setDefaultSource { endTelling(NMEAReplaySource(path: path), ended) }
            defer { CLLocationManager.setDefaultSource { GPSDLocationSource(sky: false) } }
            CLLocationManager.sharedAuthorizer.set(AuthorizationDecision(status: .authorizedAlways))
            CLLocationManager.sharedAuthorizer.isInUse = true
            let logger = VisitLogger()
            logger.start()
            // Read once stopped (the logger is not thread-safe), after the recording has ended.
            #expect(await ended.wait { $0 > 0 })
            logger.stop()
            let visit = try #require(logger.visits.first { $0.departure != nil })
            #expect(visit.departure! > visit.arrival)
        }
    }
}

/// A source that counts its ends: `ended` goes up once the wrapped source's terminal event has
/// been handled (the engine has it; the delegate hears of it in turn).
func endTelling(_ base: any LocationSource, _ ended: EventCounter) -> TappedLocationSource {
    TappedLocationSource(base) { event in
        if case .problem(_, terminal: true) = event { ended.increment() }
    }
}
