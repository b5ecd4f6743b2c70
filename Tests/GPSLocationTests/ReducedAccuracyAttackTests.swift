import Foundation
import GNSSCore
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #33: reduced accuracy attacked as a patient app would, in the style of Android's
/// `LocationFudgerTest` (leak-free, consistent, averaging-resistant), over seeded simulations —
/// nine fresh secrets each, so a lucky draw cannot pass a test.
@Suite("reduced accuracy against a patient app", .timeLimit(.minutes(5)))
struct ReducedAccuracyAttackTests {
    static let secrets = (1...9).map { ReducedAccuracySecret.seeded(UInt64($0) &* 7919) }
    static let metresPerDegree = 111_320.0

    /// A normal deviate (Box–Muller) from the test's generator.
    static func gaussian(_ random: inout TestRandom) -> Double {
        sqrt(-2 * log(max(1e-300, random.unit()))) * cos(2 * .pi * random.unit())
    }

    static func precise(
        _ latitude: Double, _ longitude: Double, accuracy: Double = 4, altitude: Double = 60, speed: Double = -1,
        course: Double = -1, time: Date
    ) -> LocationValue {
        CLLocation(
            coordinate: CLLocationCoordinate2D(latitude: latitude, longitude: longitude), altitude: altitude,
            horizontalAccuracy: accuracy, verticalAccuracy: 8, course: course, speed: speed, timestamp: time
        ).value
    }

    static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        return sorted.count % 2 == 1
            ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    @Test("leak-free: every field is a function of the cell alone, on a public lattice with no offset in it")
    func leakFree() {
        var random = TestRandom(seed: 33)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var groups = 0
        for secret in Self.secrets {
            let centre = (latitude: 40 + random.unit() * 20, longitude: -10 + random.unit() * 30)
            var byPoint: [String: [LocationValue]] = [:]
            for _ in 0..<600 {
                // Anywhere in a 12 km box, with any accuracy, altitude, speed, course and time
                // within the minute: none of it may show.
                let input = Self.precise(
                    centre.latitude + (random.unit() - 0.5) * 0.1, centre.longitude + (random.unit() - 0.5) * 0.15,
                    accuracy: 2 + random.unit() * 60, altitude: random.unit() * 500, speed: random.unit() * 30,
                    course: random.unit() * 360, time: now + random.unit() * 59)
                var fuzzer = LocationFuzzer(appID: "leak", secret: secret, minimumInterval: 0)
                guard let output = fuzzer.reduced(input, now: now + random.unit() * 59) else {
                    Issue.record("nothing for a first location")
                    continue
                }
                byPoint["\(output.coordinate.latitude),\(output.coordinate.longitude)", default: []].append(output)
                // The lattice is public: rows from the equator, columns from the meridian, both
                // centred — the secret is nowhere in the point.
                let row = output.coordinate.latitude * Self.metresPerDegree / 2000 - 0.5
                #expect(abs(row - row.rounded()) < 1e-6, "latitude off the public lattice")
                let step = 2000 / (Self.metresPerDegree * cos(output.coordinate.latitude * .pi / 180))
                let column = output.coordinate.longitude / step - 0.5
                #expect(abs(column - column.rounded()) < 1e-6, "longitude off the public lattice")
                #expect(input.distance(from: output) <= output.horizontalAccuracy)
            }
            for outputs in byPoint.values {
                groups += 1
                let first = outputs[0]
                for other in outputs.dropFirst() {
                    #expect(
                        other.horizontalAccuracy == first.horizontalAccuracy && other.altitude == first.altitude
                            && other.verticalAccuracy == first.verticalAccuracy && other.speed == first.speed
                            && other.course == first.course && other.timestamp == first.timestamp
                            && other.gnss == first.gnss)
                }
            }
        }
        #expect(groups > 9 * 20, "the box spans many cells (\(groups))")
    }

    @Test("consistent: the same input gives the same output; within the interval nothing new")
    func consistent() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let input = Self.precise(51.45, -2.59, time: now)
        for secret in Self.secrets {
            var free = LocationFuzzer(appID: "same", secret: secret, minimumInterval: 0)
            let first = free.reduced(input, now: now)
            for step in 1...100 {
                let again = free.reduced(input, now: now + Double(step))
                #expect(
                    again?.coordinate == first?.coordinate && again?.horizontalAccuracy == first?.horizontalAccuracy)
            }
            var limited = LocationFuzzer(appID: "same", secret: secret)
            #expect(limited.reduced(input, now: now) != nil)
            #expect(limited.reduced(Self.precise(51.46, -2.58, time: now + 899), now: now + 899) == nil)
        }
    }

    /// A stationary device sampled every 15 minutes for 83 days (GPS noise of 5 m, 1 % of fixes
    /// 60 m off by multipath), its app restarted every day with no memory of the cell (the worst
    /// case: replays and new app ids), against the three attacks that worked on the first design.
    @Test("averaging-resistant: 83 days of a stationary device, 9 fresh secrets, three attacks")
    func stationaryForWeeks() {
        var random = TestRandom(seed: 83)
        var averaged: [Double] = []
        var midpoints: [Double] = []
        var knowingSecret: [Double] = []
        var jumps = 0
        for secret in Self.secrets {
            let home = (latitude: 50 + random.unit() * 5, longitude: -4 + random.unit() * 6)
            let scale = Self.metresPerDegree * cos(home.latitude * .pi / 180)
            var fuzzer = LocationFuzzer(appID: "patient", secret: secret)
            var outputs: [CLLocationCoordinate2D] = []
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            for sample in 0..<(83 * 96) {
                let time = start + Double(sample) * 900
                if sample % 96 == 0 { fuzzer = LocationFuzzer(appID: "patient", secret: secret) }
                let spread = random.unit() < 0.01 ? 60.0 : 5.0
                let input = Self.precise(
                    home.latitude + Self.gaussian(&random) * spread / Self.metresPerDegree,
                    home.longitude + Self.gaussian(&random) * spread / scale, time: time)
                if let output = fuzzer.reduced(input, now: time) { outputs.append(output.coordinate) }
            }
            #expect(outputs.count == 83 * 96)
            func error(_ latitude: Double, _ longitude: Double) -> Double {
                CLLocation(latitude: latitude, longitude: longitude).distance(
                    from: CLLocation(latitude: home.latitude, longitude: home.longitude))
            }
            let meanLatitude = outputs.map(\.latitude).reduce(0, +) / Double(outputs.count)
            let meanLongitude = outputs.map(\.longitude).reduce(0, +) / Double(outputs.count)
            averaged.append(error(meanLatitude, meanLongitude))
            // The midpoints of jumps between consecutive outputs (none: their mean is the output).
            let pairs = zip(outputs, outputs.dropFirst()).filter { $0.0 != $0.1 }
            jumps += pairs.count
            let centres =
                pairs.isEmpty
                ? [(meanLatitude, meanLongitude)]
                : pairs.map { (($0.0.latitude + $0.1.latitude) / 2, ($0.0.longitude + $0.1.longitude) / 2) }
            midpoints.append(
                error(
                    centres.map(\.0).reduce(0, +) / Double(centres.count),
                    centres.map(\.1).reduce(0, +) / Double(centres.count)))
            // An app that learned the secret (from a precise source of the same user's, say)
            // takes it back out: the most it can know is the cell.
            let point = outputs[0]
            let step = 2000 / (Self.metresPerDegree * cos(point.latitude * .pi / 180))
            knowingSecret.append(
                error(
                    point.latitude - secret.north * 2000 / Self.metresPerDegree, point.longitude - secret.east * step))
        }
        let report = { (values: [Double]) in values.map { String(format: "%.0f", $0) }.joined(separator: " ") }
        print(
            "reduced accuracy, 83 days stationary × 9 secrets: averaging \(report(averaged)) m (median "
                + String(format: "%.0f", Self.median(averaged)) + "); jump midpoints \(report(midpoints)) m (median "
                + String(format: "%.0f", Self.median(midpoints)) + "); \(jumps) jumps; knowing the secret "
                + "\(report(knowingSecret)) m (median " + String(format: "%.0f", Self.median(knowingSecret)) + ")")
        #expect(Self.median(averaged) >= 100)
        #expect(Self.median(midpoints) >= 100)
        // Knowing the secret, the position is still only the cell: ≤ its half-diagonal (+ margin).
        #expect(knowingSecret.allSatisfy { $0 <= 2000 * (0.5 + LocationFuzzer.hysteresis) * 2.squareRoot() })
        #expect(jumps <= 9 * 83, "a parked device does not flip between cells (\(jumps) jumps)")
    }

    /// The residual limit, measured: a device that commutes for 8 weeks (home and work 9 km
    /// apart, a different route each day, nights at home), sampled every 15 minutes. The app
    /// learns the cells it passes through; for home it still knows only the cell.
    @Test("a commuter for 8 weeks: the cells are learned, never where in them")
    func commuterForWeeks() {
        var random = TestRandom(seed: 56)
        var homeErrors: [Double] = []
        var cellsVisited: [Int] = []
        for secret in Self.secrets {
            let home = (latitude: 51 + random.unit(), longitude: -3 + random.unit())
            let work = (latitude: home.latitude + 0.05, longitude: home.longitude + 0.09)
            var fuzzer = LocationFuzzer(appID: "commuter", secret: secret)
            var nightly: [CLLocationCoordinate2D] = []
            var cells = Set<String>()
            let start = Date(timeIntervalSince1970: 1_800_000_000)
            for day in 0..<56 {
                let detour = (random.unit() - 0.5) * 0.04
                for slot in 0..<96 {
                    let time = start + Double(day * 96 + slot) * 900
                    // 0:00–7:00 home, 7:00–8:00 to work, 8:00–17:00 work, 17:00–18:00 back, then home.
                    let progress: Double =
                        slot < 28
                        ? 0 : slot < 32 ? Double(slot - 28) / 4 : slot < 68 ? 1 : slot < 72 ? Double(72 - slot) / 4 : 0
                    let bend = sin(progress * .pi) * detour
                    let latitude = home.latitude + (work.latitude - home.latitude) * progress + bend
                    let longitude = home.longitude + (work.longitude - home.longitude) * progress - bend
                    let input = Self.precise(
                        latitude + Self.gaussian(&random) * 5 / Self.metresPerDegree,
                        longitude + Self.gaussian(&random) * 5 / (Self.metresPerDegree * 0.62), time: time)
                    guard let output = fuzzer.reduced(input, now: time) else { continue }
                    cells.insert("\(output.coordinate.latitude),\(output.coordinate.longitude)")
                    if slot < 24 { nightly.append(output.coordinate) }
                }
            }
            let latitude = nightly.map(\.latitude).reduce(0, +) / Double(nightly.count)
            let longitude = nightly.map(\.longitude).reduce(0, +) / Double(nightly.count)
            homeErrors.append(
                CLLocation(latitude: latitude, longitude: longitude).distance(
                    from: CLLocation(latitude: home.latitude, longitude: home.longitude)))
            cellsVisited.append(cells.count)
        }
        print(
            "reduced accuracy, a commuter for 8 weeks × 9 secrets: home located to "
                + homeErrors.map { String(format: "%.0f", $0) }.joined(separator: " ") + " m (median "
                + String(format: "%.0f", Self.median(homeErrors)) + "); distinct cells seen "
                + cellsVisited.map(String.init).joined(separator: " "))
        #expect(Self.median(homeErrors) >= 100)
        #expect(homeErrors.allSatisfy { $0 <= 2000 * LocationFuzzer.accuracyFactor })
    }

    @Test("one secret per user: five app ids, and eight in-memory authorizers, get one position")
    func oneSecretPerUser() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reduced-ids-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = ReducedAccuracyStore(directory: folder)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let input = Self.precise(51.4538, -2.5917, time: now)
        var points = Set<String>()
        for id in ["tracker", "tracker.2", "Tracker", "x", String(repeating: "t", count: 100)] {
            var fuzzer = LocationFuzzer(store: store, appID: id, live: true)
            let output = fuzzer.reduced(input, now: now)
            points.insert("\(output?.coordinate.latitude ?? 0),\(output?.coordinate.longitude ?? 0)")
        }
        #expect(points.count == 1, "\(points)")
        points = []
        for index in 0..<8 {
            let authorizer = LocationAuthorizer(
                appID: "app\(index)",
                initial: AuthorizationDecision(status: .authorizedAlways, accuracy: .reducedAccuracy))
            var fuzzer = authorizer.makeFuzzer(live: true)
            let output = fuzzer.reduced(input, now: now)
            points.insert("\(output?.coordinate.latitude ?? 0),\(output?.coordinate.longitude ?? 0)")
        }
        #expect(points.count == 1, "\(points)")
    }

    @Test("twelve first runs at once (processes): one secret, one position")
    func simultaneousFirstRuns() async throws {
        let home = try GPSLocBinary.makeConfigHome()
        defer { try? FileManager.default.removeItem(at: home) }
        let fixture = Paths.fixtures.appendingPathComponent("boundary-1hz-gp.nmea").path
        let firsts = try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    let result = try await GPSLocBinary.run(
                        ["replay", fixture, "--fast", "--json", "--accuracy", "reduced"], configHome: home)
                    let line = GPSLocBinary.jsonLines(result.stdout).first { $0["type"] as? String == "location" }
                    return line.map { "\($0["latitude"]!),\($0["longitude"]!)" }
                }
            }
            var firsts: [String?] = []
            for try await first in group { firsts.append(first) }
            return firsts
        }
        #expect(firsts.allSatisfy { $0 != nil }, "every run delivered")
        #expect(Set(firsts).count == 1, "\(Set(firsts))")
        let folder = home.appendingPathComponent("state/gpslocation/reduced")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") } == [
                "secret.json"
            ])
    }

    /// A store that cannot be used: a folder other users can write.
    static func brokenStore() throws -> (ReducedAccuracyStore, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reduced-broken-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        chmod(folder.path, 0o777)
        return (ReducedAccuracyStore(directory: folder), folder)
    }

    @Test("fails closed in the engine: no location, no visit, nothing kept as the last one; said once")
    func failsClosedInTheEngine() throws {
        let (store, folder) = try Self.brokenStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        var engine = LocationEngine(
            authorization: AuthorizationState(appID: "closed", status: .authorizedAlways, accuracy: .reducedAccuracy),
            isLive: false, fuzzer: LocationFuzzer(store: store, appID: "closed", live: false))
        var outputs = engine.startVisits().compactMap(\.output)
        outputs += engine.start(.continuous, now: Date()).compactMap(\.output)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        for second in stride(from: 0, to: 7200, by: 10) {
            let time = start + Double(second)
            let fix = Fix(
                mode: .threeDimensional, time: time, latitude: 51.4538, longitude: -2.5917, altitudeHAE: 90,
                altitudeMSL: 40, errors: FixErrors(longitude: 3, latitude: 3, vertical: 6))
            outputs += engine.handle(.fix(fix), now: time).compactMap(\.output)
        }
        let failures = outputs.compactMap { output -> CLError? in
            if case .failure(let error) = output { error } else { nil }
        }
        #expect(failures.count == 1 && failures.first?.reason == .reducedAccuracyState, "\(failures)")
        #expect(failures.first?.message.contains("chmod 700") == true)
        for output in outputs {
            switch output {
            case .locations, .visit: Issue.record("\(output) left a store that cannot be kept")
            default: break
            }
        }
        #expect(engine.lastDelivered == nil)
    }

    @Test("fails closed in a manager: the delegate hears why, location stays nil")
    func failsClosedInAManager() async throws {
        let (store, folder) = try Self.brokenStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let authorizer = grantedAuthorizer(.authorizedAlways, accuracy: .reducedAccuracy)
        authorizer.keepReducedAccuracy(in: store)
        let manager = CLLocationManager(
            source: NMEAReplaySource(path: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea").path),
            authorizer: authorizer)
        manager.lastLocationCache = nil
        manager.diagnosticsHandler = Diagnostics.discard
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.startUpdatingLocation()
        #expect(await delegate.waitForError(.reducedAccuracyState, timeout: 60))
        manager.stopUpdatingLocation()
        // Every fix meets the same refusal, so whenever this is read, nothing has passed.
        #expect(delegate.locations.isEmpty)
        #expect(manager.location == nil)
    }

    @Test("heading: two positions 1 km apart in one reduced cell give the same magnetic heading")
    func headingInsideACell() throws {
        let secret = Self.secrets[0]
        let time = Date(timeIntervalSince1970: 1_800_000_000)
        // Two positions 1 km apart east-west whose reduced locations are the same point.
        var random = TestRandom(seed: 5)
        var pair: (CLLocationCoordinate2D, CLLocationCoordinate2D)?
        for _ in 0..<200 where pair == nil {
            let a = CLLocationCoordinate2D(latitude: 51 + random.unit(), longitude: -3 + random.unit())
            let b = CLLocationCoordinate2D(
                latitude: a.latitude,
                longitude: a.longitude + 1000 / (Self.metresPerDegree * cos(a.latitude * .pi / 180)))
            var first = LocationFuzzer(appID: "h", secret: secret)
            var second = LocationFuzzer(appID: "h", secret: secret)
            if first.reduced(Self.precise(a.latitude, a.longitude, time: time), now: time)?.coordinate
                == second.reduced(Self.precise(b.latitude, b.longitude, time: time), now: time)?.coordinate
            {
                pair = (a, b)
            }
        }
        let (a, b) = try #require(pair)
        func magnetic(at position: CLLocationCoordinate2D, accuracy: CLAccuracyAuthorization) -> Double? {
            var engine = LocationEngine(
                authorization: AuthorizationState(appID: "h", status: .authorizedAlways, accuracy: accuracy),
                isLive: false, fuzzer: LocationFuzzer(appID: "h", secret: secret))
            _ = engine.start(.continuous, now: time)
            _ = engine.startHeading()
            let fix = Fix(
                mode: .threeDimensional, time: time, latitude: position.latitude, longitude: position.longitude,
                altitudeHAE: 90, altitudeMSL: 40, errors: FixErrors(longitude: 3, latitude: 3, vertical: 6))
            _ = engine.handle(.fix(fix), now: time)
            // A receiver that reports both, as HDG does: its variation is the precise position's.
            let reading = HeadingReading(trueHeading: 90, magneticHeading: 91.234, magneticVariation: -1.234)
            return engine.handle(.heading(reading), now: time + 1).compactMap { action -> Double? in
                if case .emit(.heading(let heading)) = action { heading.magneticHeading } else { nil }
            }.first
        }
        let reducedA = try #require(magnetic(at: a, accuracy: .reducedAccuracy))
        let reducedB = try #require(magnetic(at: b, accuracy: .reducedAccuracy))
        #expect(reducedA == reducedB, "the reduced app cannot tell the two apart")
        #expect(reducedA != 91.234, "the receiver's own (precise) variation is not passed on")
        // Full accuracy, for contrast: the receiver's reading as it is.
        #expect(magnetic(at: a, accuracy: .fullAccuracy) == 91.234)
    }
}
