import Foundation
import GNSSCore
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocCLI
@testable import GPSLocation
@testable import LocationCore

/// A location at `t` seconds after a fixed epoch.
private func spot(_ latitude: Double, _ longitude: Double, accuracy: Double = 2, t: Double) -> LocationValue {
    CLLocation(
        coordinate: CLLocationCoordinate2D(latitude: latitude, longitude: longitude), altitude: 0,
        horizontalAccuracy: accuracy, verticalAccuracy: -1, timestamp: Date(timeIntervalSince1970: 1_781_510_400 + t)
    ).value
}

/// An authorizer that has decided, in use.
private func granted(
    _ status: CLAuthorizationStatus, accuracy: CLAccuracyAuthorization = .fullAccuracy, appID: String
) -> LocationAuthorizer {
    LocationAuthorizer(
        appID: appID, initial: AuthorizationDecision(status: status, accuracy: accuracy), isInUse: true)
}

/// Metres north of (51.45, −2.6) as degrees of latitude (flat, exact enough for tests).
private func north(_ metres: Double) -> Double { 51.45 + metres / 111_250 }

@Suite("region stage: the boundary rule", .timeLimit(.minutes(5)))
struct RegionStageTests {
    let fence = Geofence(identifier: "depot", latitude: 51.45, longitude: -2.6, radius: 100)

    private func run(_ locations: [LocationValue], limitation: RegionEvent.Limitation? = nil) -> [RegionEvent] {
        var stage = RegionMonitorStage()
        var events: [RegionEvent] = []
        stage.add(fence, into: &events)
        for location in locations {
            stage.observe(location, clock: location.timestamp, limitation: limitation, into: &events)
        }
        return events
    }

    @Test("the first decided location determines the state at once; undecided ones do not")
    func initialState() {
        let events = run([
            spot(north(99), -2.6, accuracy: 5, t: 0),  // straddles the boundary: undecided
            spot(north(50), -2.6, accuracy: 5, t: 1),
        ])
        #expect(events.map(\.kind) == [.determined])
        #expect(events.first?.state == .inside)
        #expect(events.first?.timestamp == Date(timeIntervalSince1970: 1_781_510_401))
    }

    @Test("a crossing needs the new state for the dwell on at least three locations")
    func dwell() {
        var locations = (0..<5).map { spot(north(20), -2.6, t: Double($0)) }
        // Outside from t=5 on: the exit comes with the location at t=9 (5 + 4 s).
        locations += (5..<15).map { spot(north(150), -2.6, t: Double($0)) }
        let events = run(locations)
        #expect(events.map(\.kind) == [.determined, .exit])
        #expect(events.last?.timestamp == Date(timeIntervalSince1970: 1_781_510_409))
    }

    @Test("a receiver jittering across the boundary never flaps")
    func noFlapping() {
        var locations = [spot(north(20), -2.6, t: 0)]
        // Alternates wholly outside, undecided and inside, never outside for 4 s in a row.
        for second in 1..<600 {
            let offset: Double = [104, 100, 103, 96, 104, 105, 99][second % 7]
            locations.append(spot(north(offset), -2.6, accuracy: 2, t: Double(second)))
        }
        #expect(run(locations).map(\.kind) == [.determined])
    }

    @Test("a gap turns the state unknown, and the next decided location determines it without a crossing")
    func gap() {
        let events = run([
            spot(north(20), -2.6, t: 0), spot(north(20), -2.6, t: 1),
            spot(north(30), -2.6, t: 200), spot(north(500), -2.6, t: 400),
        ])
        #expect(events.map(\.kind) == [.determined, .determined, .determined, .determined, .exit])
        #expect(events.map(\.state) == [.inside, .unknown, .inside, .unknown, .outside])
        #expect(events[1].timestamp == Date(timeIntervalSince1970: 1_781_510_400 + 61))
    }

    @Test("a location of unknown accuracy decides nothing")
    func unknownAccuracy() {
        #expect(run([spot(north(20), -2.6, accuracy: -1, t: 0)]).isEmpty)
    }

    @Test("limited: each region is told once that its state is unknown, and nothing is evaluated")
    func limited() {
        let events = run(
            (0..<30).map { spot(north($0 % 2 == 0 ? 10 : 900), -2.6, t: Double($0)) }, limitation: .accuracyLimited)
        #expect(events.count == 1)
        #expect(events.first?.state == .unknown)
        #expect(events.first?.limitation == .accuracyLimited)
    }

    @Test("the grid index gives exactly the events of checking every circle, on 400 circles and a long walk")
    func indexMatchesNaive() {
        var random = SplitMix64(seed: 7)
        var stage = RegionMonitorStage()
        var naive = NaiveRegions()
        var events: [RegionEvent] = []
        for index in 0..<400 {
            let fence = Geofence(
                identifier: "c\(index)", latitude: 51.40 + random.unit() * 0.1, longitude: -2.65 + random.unit() * 0.1,
                radius: 20 + random.unit() * 400)
            stage.add(fence, into: &events)
            naive.fences.append(fence)
        }
        var latitude = 51.45
        var longitude = -2.6
        var naiveEvents: [RegionEvent] = []
        for second in 0..<1500 {
            latitude += (random.unit() - 0.45) * 0.0002
            longitude += (random.unit() - 0.45) * 0.0003
            // Now and then a poor fix (beyond the index margin: every circle is checked) or a gap.
            let accuracy = second % 500 == 250 ? 1500 : 1 + random.unit() * 10
            let t = Double(second) + (second > 750 ? 100 : 0)
            let location = spot(latitude, longitude, accuracy: accuracy, t: t)
            stage.observe(location, clock: location.timestamp, limitation: nil, into: &events)
            naive.observe(location, into: &naiveEvents)
        }
        #expect(events.count > 100)
        #expect(events == naiveEvents)
    }
}

/// The documented rule written out plainly, checking every circle for every location — the
/// reference for the index and for the recordings.
struct NaiveRegions {
    struct Tracked {
        var state = RegionPresence.unknown
        var lastKnown: RegionPresence?
        var candidate: RegionPresence?
        var since = Date.distantPast
        var count = 0
    }
    var fences: [Geofence] = []
    var tracked: [String: Tracked] = [:]
    var lastTime: Date?

    /// With `distances` (metres to each fence's centre, by identifier) from elsewhere (GeodSolve).
    mutating func observe(
        _ location: LocationValue, distances: [String: Double]? = nil, into events: inout [RegionEvent]
    ) {
        let time = location.timestamp
        if let lastTime, time.timeIntervalSince(lastTime) >= 60 {
            for fence in fences {
                var entry = tracked[fence.identifier, default: Tracked()]
                entry.candidate = nil
                if entry.state != .unknown {
                    entry.lastKnown = entry.state
                    entry.state = .unknown
                    events.append(
                        RegionEvent(
                            identifier: fence.identifier, kind: .determined, state: .unknown,
                            timestamp: lastTime.addingTimeInterval(60)))
                }
                tracked[fence.identifier] = entry
            }
        }
        lastTime = time
        guard location.horizontalAccuracy >= 0 else { return }
        for fence in fences {
            let distance =
                distances?[fence.identifier]
                ?? Geodesic.wgs84.distance(
                    latitude1: fence.latitude, longitude1: fence.longitude, latitude2: location.coordinate.latitude,
                    longitude2: location.coordinate.longitude)
            let accuracy = location.horizontalAccuracy
            var entry = tracked[fence.identifier, default: Tracked()]
            defer { tracked[fence.identifier] = entry }
            let decided: RegionPresence
            if distance + accuracy <= fence.radius {
                decided = .inside
            } else if distance - accuracy > fence.radius {
                decided = .outside
            } else {
                entry.candidate = nil
                continue
            }
            if entry.state == .unknown {
                let kind: RegionEvent.Kind =
                    entry.lastKnown == .outside && decided == .inside
                    ? .enter : (entry.lastKnown == .inside && decided == .outside ? .exit : .determined)
                entry.state = decided
                entry.lastKnown = decided
                entry.candidate = nil
                events.append(RegionEvent(identifier: fence.identifier, kind: kind, state: decided, timestamp: time))
                continue
            }
            if decided == entry.state {
                entry.candidate = nil
                continue
            }
            if entry.candidate != decided {
                entry.candidate = decided
                entry.since = time
                entry.count = 1
                continue
            }
            entry.count += 1
            if entry.count >= 3 && time.timeIntervalSince(entry.since) >= 4 {
                entry.state = decided
                entry.lastKnown = decided
                entry.candidate = nil
                events.append(
                    RegionEvent(
                        identifier: fence.identifier, kind: decided == .inside ? .enter : .exit, state: decided,
                        timestamp: time))
            }
        }
    }
}

@Suite("visit and significant-change stages", .timeLimit(.minutes(5)))
struct VisitStageTests {
    @Test("a stop of 3 minutes is a visit, dated from the first location in the place; leaving ends it")
    func visit() {
        var stage = VisitStage()
        var visits: [VisitRecord] = []
        var t = 0.0
        var latitude = north(0)
        for _ in 0..<30 {  // approach at 10 m/s
            stage.observe(spot(latitude, -2.6, t: t), reduced: false, into: &visits)
            latitude += 10 / 111_250
            t += 1
        }
        let arrival = t
        for _ in 0..<240 {
            stage.observe(spot(latitude, -2.6, t: t), reduced: false, into: &visits)
            t += 1
        }
        let departure = t - 1
        for _ in 0..<30 {
            latitude += 10 / 111_250
            stage.observe(spot(latitude, -2.6, t: t), reduced: false, into: &visits)
            t += 1
        }
        #expect(visits.count == 2)
        #expect(visits.first?.departure == nil)
        #expect(visits.first?.arrival == Date(timeIntervalSince1970: 1_781_510_400 + arrival))
        #expect(visits.last?.departure == Date(timeIntervalSince1970: 1_781_510_400 + departure))
    }

    @Test("an outage during a stop is not a visit")
    func outage() {
        var stage = VisitStage()
        var visits: [VisitRecord] = []
        for t in 0..<20 { stage.observe(spot(north(0), -2.6, t: Double(t)), reduced: false, into: &visits) }
        for t in 220..<260 { stage.observe(spot(north(0), -2.6, t: Double(t)), reduced: false, into: &visits) }
        #expect(visits.isEmpty)
    }

    @Test("significant changes: the first at once, then 500 m and 5 minutes apart")
    func significant() {
        var stage = SignificantChangeStage()
        let answers = [
            stage.admits(spot(north(0), -2.6, t: 0)),
            stage.admits(spot(north(2000), -2.6, t: 299)),  // far, too soon
            stage.admits(spot(north(400), -2.6, t: 400)),  // late enough, too near
            stage.admits(spot(north(600), -2.6, t: 401)),
        ]
        #expect(answers == [true, false, false, true])
    }
}

/// `gpsloc replay` on the nmea-sim recordings of `fixtures/` (loop, stops, boundary).
@Suite("monitoring on recordings (gpsloc replay)", .timeLimit(.minutes(5)))
struct MonitoringRecordingTests {
    /// The loop scenario circles a 400 m ring round (51.45388, −2.59747) from its south point.
    static let loopCircles = [
        "south=51.450280,-2.597470,60", "east=51.453880,-2.591704,60", "north=51.457480,-2.597470,80",
        "centre=51.453880,-2.597470,100", "ring=51.453880,-2.597470,405",
    ]

    struct Lines {
        var locations: [LocationValue] = []
        var regions: [RegionEvent] = []
        var visits: [[String: Any]] = []
    }

    static func replay(_ fixture: String, _ extra: [String]) async throws -> Lines {
        let result = try await GPSLocBinary.run(
            ["replay", Paths.fixtures.appendingPathComponent(fixture).path, "--fast", "--json"] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        var lines = Lines()
        for line in result.stdout.split(separator: "\n") {
            let object = try #require(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            switch object["type"] as? String {
            case "location":
                lines.locations.append(
                    spot(
                        object["latitude"] as! Double, object["longitude"] as! Double,
                        accuracy: object["horizontalAccuracy"] as? Double ?? -1,
                        t: ISO8601.parse(object["timestamp"] as! String)!.timeIntervalSince1970 - 1_781_510_400))
            case "region":
                lines.regions.append(
                    RegionEvent(
                        identifier: object["identifier"] as! String,
                        kind: RegionEvent.Kind(rawValue: object["event"] as! String)!,
                        state: RegionPresence(rawValue: object["state"] as! String)!,
                        timestamp: ISO8601.parse(object["timestamp"] as! String)!))
            case "visit":
                lines.visits.append(object)
            default:
                break
            }
        }
        return lines
    }

    /// The circles as gpsloc reads them from `--region`.
    static func fences(_ arguments: [String]) throws -> [Geofence] {
        try arguments.map { try PipelineOptions.region($0) }
    }

    /// Distances from every location to every centre, by GeographicLib's own GeodSolve.
    static func geodSolveDistances(_ locations: [LocationValue], _ fences: [Geofence]) async throws -> [[String:
        Double]]
    {
        var input = ""
        for location in locations {
            for fence in fences {
                input += String(
                    format: "%.9f %.9f %.9f %.9f\n", fence.latitude, fence.longitude, location.coordinate.latitude,
                    location.coordinate.longitude)
            }
        }
        let output = try await geodSolveInverse(input, precision: 6)
        let distances = output.split(separator: "\n").map { Double($0.split(separator: " ")[2])! }
        try #require(distances.count == locations.count * fences.count)
        return locations.indices.map { index in
            Dictionary(
                uniqueKeysWithValues: fences.enumerated().map { ($1.identifier, distances[index * fences.count + $0]) })
        }
    }

    static let geodSolve = FileManager.default.isExecutableFile(atPath: "/usr/bin/GeodSolve") || Conditions.underCI

    @Test(
        "loop: the exact events the documented rule gives on GeodSolve's distances, each 4–6.5 s after the true crossing",
        .enabled(if: geodSolve, "GeodSolve not installed: sudo apt-get install geographiclib-tools"))
    func loop() async throws {
        let lines = try await Self.replay("loop-1hz-gp.nmea", Self.loopCircles.flatMap { ["--region", $0] })
        let fences = try Self.fences(Self.loopCircles)
        let distances = try await Self.geodSolveDistances(lines.locations, fences)
        var reference = NaiveRegions(fences: fences)
        var expected: [RegionEvent] = []
        for (location, distance) in zip(lines.locations, distances) {
            reference.observe(location, distances: distance, into: &expected)
        }
        #expect(lines.regions == expected)
        // 2.9 laps: east and north passed three times, south (where it starts, inside) twice more;
        // centre and ring never crossed.
        let kinds = Dictionary(grouping: lines.regions, by: \.identifier).mapValues { $0.map(\.kind.rawValue) }
        #expect(kinds["south"] == ["determined", "exit", "enter", "exit", "enter", "exit"])
        #expect(kinds["east"] == ["determined", "enter", "exit", "enter", "exit", "enter", "exit"])
        #expect(kinds["north"] == ["determined", "enter", "exit", "enter", "exit", "enter", "exit"])
        #expect(kinds["centre"] == ["determined"])
        #expect(kinds["ring"] == ["determined"])
        // The true (noise-free) track: angle (t + 1) · 12 / 400 rad counter-clockwise from south.
        for event in lines.regions where event.kind != .determined {
            let fence = try #require(fences.first { $0.identifier == event.identifier })
            let t = event.timestamp.timeIntervalSince1970 - 1_781_510_400
            var crossing: Double?
            var previousInside: Bool?
            for step in 0..<Int(t * 100) {
                let s = Double(step) / 100
                let angle = (s + 1) * 12 / 400
                let north = -400 * cos(angle)
                let east = 400 * sin(angle)
                let dy = (51.45388 - fence.latitude) * 111_250 + north
                let dx = (-2.59747 - fence.longitude) * 111_320 * cos(51.45388 * .pi / 180) + east
                let inside = (dx * dx + dy * dy).squareRoot() <= fence.radius
                if let previousInside, previousInside != inside { crossing = s }
                previousInside = inside
            }
            let lag = t - (crossing ?? -100)
            #expect(lag >= 4 && lag <= 6.5, "\(event.identifier) \(event.kind) at \(t) s: \(lag) s after the crossing")
        }
    }

    @Test("boundary: a receiver standing on a boundary for 15 minutes gives its state once and no enter or exit")
    func boundary() async throws {
        // The recording stands at (51.453880, −2.597470); this circle's edge passes through it.
        let radius = Geodesic.wgs84.distance(
            latitude1: 51.454780, longitude1: -2.597470, latitude2: 51.453880, longitude2: -2.597470)
        let lines = try await Self.replay("boundary-1hz-gp.nmea", ["--region", "edge=51.454780,-2.597470,\(radius)"])
        #expect(lines.locations.count == 900)
        #expect(lines.regions.map(\.kind) == [.determined], "its state once, then nothing")
    }

    @Test("stops: the two stops are visits with their exact times; the stop whose fix was lost is not")
    func stops() async throws {
        let lines = try await Self.replay("stops-1hz-gp.nmea", ["--visits"])
        let summary = lines.visits.map { [$0["arrival"] as! String, ($0["departure"] as? String) ?? "null"] }
        #expect(
            summary == [
                ["2026-06-15T08:00:59.000Z", "null"], ["2026-06-15T08:00:59.000Z", "2026-06-15T08:05:59.000Z"],
                ["2026-06-15T08:14:59.000Z", "null"], ["2026-06-15T08:14:59.000Z", "2026-06-15T08:18:19.000Z"],
            ])
        for visit in lines.visits {
            #expect((visit["horizontalAccuracy"] as! Double) <= 15)
        }
    }

    @Test("significant changes: the first location, then only ≥ 500 m and ≥ 5 minutes apart")
    func significantChanges() async throws {
        let all = try await Self.replay("stops-1hz-gp.nmea", [])
        let lines = try await Self.replay("stops-1hz-gp.nmea", ["--significant-changes"])
        #expect(lines.locations.first?.timestamp == all.locations.first?.timestamp)
        #expect(lines.locations.count >= 2 && lines.locations.count <= 4)
        for (previous, next) in zip(lines.locations, lines.locations.dropFirst()) {
            #expect(next.timestamp.timeIntervalSince(previous.timestamp) >= 300)
            #expect(next.distance(from: previous) >= 500)
        }
    }

    @Test("reduced accuracy: regions stay unknown (accuracyLimited) and no precise crossing leaks")
    func reduced() async throws {
        let result = try await GPSLocBinary.run(
            [
                "replay", Paths.fixtures.appendingPathComponent("loop-1hz-gp.nmea").path, "--fast", "--json",
                "--accuracy", "reduced", "--region", Self.loopCircles[0], "--visits",
            ])
        let regionLines = result.stdout.split(separator: "\n").filter { $0.contains(#""type":"region""#) }
        #expect(regionLines.count == 1)
        #expect(regionLines.first?.contains(#""state":"unknown""#) == true)
        #expect(regionLines.first?.contains(#""limitation":"accuracyLimited""#) == true)
        #expect(!result.stdout.contains(#""event":"enter""#) && !result.stdout.contains(#""event":"exit""#))
    }

    @Test("--region mistakes are usage errors naming the form")
    func usage() async throws {
        for bad in ["x", "a=1,2", "a=91,0,10", "a=1,2,0", "a=1,2,1e9", "=1,2,3"] {
            let result = try await GPSLocBinary.run([
                "replay", Paths.fixtures.appendingPathComponent("loop-1hz-gp.nmea").path, "--region", bad,
            ])
            #expect(result.status == 2, "\(bad)")
            #expect(result.stderr.contains("--region"), "\(bad): \(result.stderr)")
        }
    }
}

/// The CoreLocation APIs on a manager fed the loop recording by our NMEA engine.
@Suite("CLMonitor and legacy region monitoring", .timeLimit(.minutes(5)))
struct RegionAPITests {
    static let loop = Paths.fixtures.appendingPathComponent("loop-1hz-gp.nmea").path

    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("gpslocation-monitor-\(UUID())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func legacyRun(
        authorization: CLAuthorizationStatus = .authorizedAlways, accuracy: CLAccuracyAuthorization = .fullAccuracy,
        store: MonitorStore
    ) async throws -> [String] {
        let manager = CLLocationManager(
            source: NMEAReplaySource(path: loop),
            authorizer: granted(authorization, accuracy: accuracy, appID: "regiontest"))
        manager.lastLocationCache = nil
        manager.regionStore = store
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.startMonitoring(
            for: CLCircularRegion(
                center: CLLocationCoordinate2D(latitude: 51.453880, longitude: -2.591704), radius: 60,
                identifier: "east"))
        // The 600-cycle replay takes 20–30 s under Thread Sanitizer (it timed out once at 30 s
        // in a fresh-clone CI run): the bound only separates "ends" from "hangs".
        #expect(await delegate.waitForError(.sourceEnded, timeout: 120))
        manager.stopMonitoring(for: CLCircularRegion(center: .init(), radius: 1, identifier: "none"))
        return delegate.regionLog
    }

    @Test("legacy: start, the initial state, then each entry and exit with its state")
    func legacy() async throws {
        let log = try await Self.legacyRun(store: MonitorStore(directory: try Self.folder()))
        #expect(
            log == [
                "start east", "state east outside", "enter east", "state east inside", "exit east",
                "state east outside", "enter east", "state east inside", "exit east", "state east outside",
                "enter east", "state east inside", "exit east", "state east outside",
            ])
    }

    @Test("legacy: When In Use, reduced accuracy and denied each fail with regionMonitoringDenied and say why")
    func legacyAuthorization() async throws {
        let whenInUse = try await Self.legacyRun(
            authorization: .authorizedWhenInUse, store: MonitorStore(directory: try Self.folder()))
        #expect(whenInUse == ["start east", "fail east regionMonitoringDenied alwaysRequired"])
        let reduced = try await Self.legacyRun(
            accuracy: .reducedAccuracy, store: MonitorStore(directory: try Self.folder()))
        #expect(reduced == ["start east", "fail east regionMonitoringDenied reducedAccuracy"])
    }

    /// #24: 80,000 circles were written into a 17 MB file that every reader then refused.
    @Test("a monitor file is never written larger than a reader takes: refused before writing, nothing lost")
    func monitorSizeLimit() throws {
        let store = MonitorStore(directory: try Self.folder())
        let small = [MonitorStore.Condition(identifier: "depot", latitude: 51.45, longitude: -2.59, radius: 50)]
        try store.save(small, monitor: "big", app: "sizetest")
        // Long identifiers reach the limit with few conditions (the limit is on bytes).
        let name = String(repeating: "x", count: 4000)
        let tooMany = (0..<5_000).map {
            MonitorStore.Condition(identifier: "\(name)\($0)", latitude: 51.45, longitude: -2.59, radius: 50)
        }
        #expect {
            try store.save(tooMany, monitor: "big", app: "sizetest")
        } throws: { error in
            "\(error)".contains("more than the 16 MB a monitor file may have")
        }
        #expect(try store.conditions(monitor: "big", app: "sizetest").map(\.identifier) == ["depot"], "unchanged")
    }

    @Test("legacy: regions persist (0600, atomic) and come back with their state in a new manager")
    func legacyPersistence() async throws {
        let folder = try Self.folder()
        let store = MonitorStore(directory: folder)
        _ = try await Self.legacyRun(store: store)
        let file = folder.appendingPathComponent("regiontest/regions.json")
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(
            await whenReplaced(try store.file(monitor: MonitorStore.legacyRegions, app: "regiontest")) {
                (try? store.conditions(monitor: MonitorStore.legacyRegions, app: "regiontest"))?.first?.state
                    == "outside"
            }, "kept within a second")
        let stored = try store.conditions(monitor: MonitorStore.legacyRegions, app: "regiontest")
        #expect(stored.map(\.identifier) == ["east"])
        let again = CLLocationManager(
            source: FixListSource([]), authorizer: granted(.authorizedAlways, appID: "regiontest"))
        again.regionStore = store
        #expect(again.monitoredRegions.map(\.identifier) == ["east"])
    }

    @Test("CLMonitor gives the same crossings as the legacy API, persists, and restores its conditions")
    func monitor() async throws {
        let store = MonitorStore(directory: try Self.folder())
        let monitor = await CLMonitor(
            "depots", source: NMEAReplaySource(path: Self.loop),
            authorizer: granted(.authorizedWhenInUse, appID: "monitortest"), store: store)
        await monitor.add(
            CLMonitor.CircularGeographicCondition(
                center: CLLocationCoordinate2D(latitude: 51.453880, longitude: -2.591704), radius: 60),
            identifier: "east")
        var states: [String] = []
        for try await event in await monitor.events {
            states.append(event.state.description)
            if states.count == 7 { break }
        }
        #expect(
            states == [
                "unsatisfied", "satisfied", "unsatisfied", "satisfied", "unsatisfied", "satisfied", "unsatisfied",
            ])
        #expect(await monitor.identifiers == ["east"])
        #expect(await monitor.record(for: "east")?.lastEvent.state == .unsatisfied)
        // Region events are kept at most once a second (`CoalescedWriter`).
        #expect(
            await whenReplaced(try store.file(monitor: "depots", app: "monitortest")) {
                (try? store.conditions(monitor: "depots", app: "monitortest"))?.first?.state == "outside"
            })
        let restored = await CLMonitor(
            "depots", source: FixListSource([]), authorizer: granted(.authorizedAlways, appID: "monitortest"),
            store: store)
        #expect(await restored.identifiers == ["east"])
        #expect(await restored.record(for: "east")?.lastEvent.state == .unsatisfied)
        await restored.remove("east")
        #expect(try store.conditions(monitor: "depots", app: "monitortest").isEmpty)
    }

    @Test("CLMonitor with reduced accuracy: one unknown event, accuracyLimited, and never a state")
    func monitorReduced() async throws {
        let monitor = await CLMonitor(
            "reduced", source: NMEAReplaySource(path: Self.loop),
            authorizer: granted(.authorizedAlways, accuracy: .reducedAccuracy, appID: "monitortest"), store: nil)
        let said = Watched<[String]>([])
        monitor.diagnosticsHandler = { diagnostic in said.withLock { $0.append(diagnostic.code) } }
        await monitor.add(
            CLMonitor.CircularGeographicCondition(
                center: CLLocationCoordinate2D(latitude: 51.453880, longitude: -2.591704), radius: 60),
            identifier: "east")
        var iterator = await monitor.events.makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.state == .unknown)
        #expect(first?.accuracyLimited == true)
        // The whole loop replayed (its end comes after every event it made): still unknown.
        #expect(await said.wait(timeout: 120) { $0.contains("sourceEnded") })
        #expect(await monitor.record(for: "east")?.lastEvent.state == .unknown)
    }
}

extension MonitoringRecordingTests {
    @Test("gpsloc monitor add, list, remove; watch/replay --monitor uses the kept circles")
    func monitorCommand() async throws {
        let home = try GPSLocBinary.makeConfigHome()
        let added = try await GPSLocBinary.run(
            [
                "monitor", "add", "depots", "east=51.453880,-2.591704,60", "south=51.450280,-2.597470,60", "--app",
                "fleet",
            ],
            configHome: home)
        #expect(added.status == 0, "\(added.stderr)")
        let file = home.appendingPathComponent("state/gpslocation/monitors/fleet/monitor-depots.json")
        #expect((try FileManager.default.attributesOfItem(atPath: file.path)[.posixPermissions] as? Int) == 0o600)
        let listed = try await GPSLocBinary.run(["monitor", "list", "--app", "fleet", "--json"], configHome: home)
        #expect(listed.stdout.split(separator: "\n").count == 2)
        #expect(listed.stdout.contains(#""identifier":"east""#))
        let missing = try await GPSLocBinary.run(
            ["monitor", "remove", "depots", "west", "--app", "fleet"], configHome: home)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no condition west"))
        let removed = try await GPSLocBinary.run(
            ["monitor", "remove", "depots", "south", "--app", "fleet"], configHome: home)
        #expect(removed.status == 0)
        let replay = try await GPSLocBinary.run(
            [
                "replay", Paths.fixtures.appendingPathComponent("loop-1hz-gp.nmea").path, "--fast", "--json", "--app",
                "fleet", "--monitor", "depots",
            ], configHome: home)
        let regions = replay.stdout.split(separator: "\n").filter { $0.contains(#""type":"region""#) }
        #expect(regions.count == 7)
        #expect(regions.allSatisfy { $0.contains(#""identifier":"east""#) })
        let unknown = try await GPSLocBinary.run(
            ["replay", Paths.fixtures.appendingPathComponent("loop-1hz-gp.nmea").path, "--monitor", "nothing"],
            configHome: home)
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("keeps no conditions"))
    }
}

extension RealGPSD.LaneA {
    @Suite(
        "monitoring through a real gpsd (gpsfake)",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason))
    struct MonitoringThroughGPSDTests {
        @Test("replay --via gpsd: the rule's exact events on gpsd's locations, and the crossings of the NMEA engine")
        func loopViaGPSD() async throws {
            let circles = MonitoringRecordingTests.loopCircles
            let viaGPSD = try await MonitoringRecordingTests.replay(
                "loop-1hz-gp.nmea", ["--via", "gpsd"] + circles.flatMap { ["--region", $0] })
            let viaNMEA = try await MonitoringRecordingTests.replay(
                "loop-1hz-gp.nmea", circles.flatMap { ["--region", $0] })
            #expect(viaGPSD.locations.count > 590)
            var reference = NaiveRegions(fences: try MonitoringRecordingTests.fences(circles))
            var expected: [RegionEvent] = []
            for location in viaGPSD.locations { reference.observe(location, into: &expected) }
            #expect(viaGPSD.regions == expected)
            // Both paths give the same locations field for field (the README's field table), so
            // the same region events at the same times — all but gpsd's very first report, which
            // comes before gpsd has seen the whole first cycle.
            let gpsdByRegion = Dictionary(grouping: viaGPSD.regions, by: \.identifier)
            let nmeaByRegion = Dictionary(grouping: viaNMEA.regions, by: \.identifier)
            #expect(Set(nmeaByRegion.keys) == Set(gpsdByRegion.keys))
            for (identifier, events) in gpsdByRegion {
                let others = nmeaByRegion[identifier] ?? []
                #expect(events.map { "\($0.kind) \($0.state)" } == others.map { "\($0.kind) \($0.state)" })
                for (gpsd, nmea) in zip(events, others) {
                    #expect(abs(gpsd.timestamp.timeIntervalSince(nmea.timestamp)) <= 1.0, "\(identifier)")
                }
            }
        }
    }
}

@Suite("LocationEngine: monitoring services", .timeLimit(.minutes(5)))
struct EngineMonitoringTests {
    typealias E = LocationEngineTests
    let fence = Geofence(identifier: "yard", latitude: 51.45, longitude: -2.58, radius: 200)

    static func regions(_ actions: [LocationEngine.Action]) -> [RegionEvent] {
        actions.compactMap { if case .emit(.region(let event)) = $0 { event } else { nil } }
    }

    @Test("live: regions alone run the source; 60 s without a location makes the state unknown via the timer")
    func liveGap() {
        var engine = E.engine()
        let t0 = E.start
        _ = engine.startMonitoring(fence, now: t0)
        #expect(engine.isRunning && engine.mode == .stopped)
        // (The receiver's first epoch goes when its next begins, at 0: from then on at once.)
        let first =
            engine.handle(.fix(E.fix(at: -1)), now: t0 - 1, uptime: -1)
            + engine.handle(.fix(E.fix(at: 0)), now: t0, uptime: 0)
        #expect(Self.regions(first).map(\.state) == [.inside])
        #expect(E.delivered(first).isEmpty, "no location updates were asked for")
        #expect(E.armed(first).map(\.0) == [.monitoringGap])
        // Fires early (a later location moved the deadline): re-armed, nothing said.
        _ = engine.handle(.fix(E.fix(at: 30)), now: t0 + 30, uptime: 30)
        let early = engine.timerFired(.monitoringGap, now: t0 + 60)
        #expect(Self.regions(early).isEmpty && E.armed(early).first?.1 == 30)
        let late = engine.timerFired(.monitoringGap, now: t0 + 90)
        #expect(Self.regions(late).map(\.state) == [.unknown])
        #expect(Self.regions(late).first?.timestamp == t0 + 90)
    }

    @Test("stopping updates keeps monitoring; stopping the last service stops the source")
    func services() {
        var engine = E.engine()
        let t0 = E.start
        _ = engine.start(.continuous, now: t0)
        _ = engine.startVisits()
        _ = engine.stop()
        #expect(engine.isRunning)
        #expect(!E.stopsSource(engine.stopMonitoring("none")))
        #expect(E.stopsSource(engine.stopVisits()))
        #expect(!engine.isRunning)
    }

    @Test("denied: monitoring is refused with the reason, and a region is told it is not authorized")
    func denied() {
        var engine = E.engine(.denied)
        let actions = engine.startMonitoring(fence, now: E.start)
        #expect(E.errors(actions).first?.reason == .notAuthorized)
        #expect(Self.regions(actions).first?.limitation == .notAuthorized)
        #expect(!engine.isRunning)
    }
}

@Suite("kept geofence states are written at most once a second", .timeLimit(.minutes(5)))
struct CoalescedWriterTests {
    @Test("the first write at once, the next ones merged into one with the latest data, flush on demand")
    func coalesces() async throws {
        let writer = CoalescedWriter(interval: 0.3)
        let written = Watched<[Int]>([])
        writer.write { written.withLock { $0.append(1) } }
        for value in 2...50 { writer.write { written.withLock { $0.append(value) } } }
        #expect(written.withLock { $0 } == [1])
        #expect(await written.wait(timeout: 2) { $0 == [1, 50] })
        writer.write { written.withLock { $0.append(51) } }
        writer.flush()
        #expect(written.withLock { $0 }.last == 51)
        #expect(!writer.takePending())
    }

    @Test("a legacy region's last state and its time reach regions.json within a second")
    func keptSoon() async throws {
        let folder = try RegionAPITests.folder()
        let store = MonitorStore(directory: folder)
        _ = try await RegionAPITests.legacyRun(store: store)
        #expect(
            await whenReplaced(try store.file(monitor: MonitorStore.legacyRegions, app: "regiontest")) {
                let stored = try? store.conditions(monitor: MonitorStore.legacyRegions, app: "regiontest")
                return stored?.first?.state == "outside" && stored?.first?.date != nil
            })
    }
}
