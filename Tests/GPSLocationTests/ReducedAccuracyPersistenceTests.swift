import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// Restarting an app must not undo reduced accuracy: the offset and the live rate limit are kept.
@Suite("reduced accuracy across restarts", .timeLimit(.minutes(5)))
struct ReducedAccuracyPersistenceTests {
    static func location(_ latitude: Double, _ longitude: Double, at time: Date) -> LocationValue {
        CLLocation(
            coordinate: CLLocationCoordinate2D(latitude: latitude, longitude: longitude), altitude: 0,
            horizontalAccuracy: 3, verticalAccuracy: -1, timestamp: time
        ).value
    }

    @Test("a restarted live app: the same cell, the last location once within the limit, nothing fresher")
    func liveRateLimit() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reduced-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = ReducedAccuracyStore(directory: folder)
        let t0 = Date(timeIntervalSince1970: 1_800_000_000)
        var first = LocationFuzzer(store: store, appID: "app", live: true)
        let firstGiven = first.reduced(Self.location(51.45, -2.59, at: t0), now: t0)
        let given = try #require(firstGiven)
        // The same app never restarted, for comparison: the user's secret, nothing kept.
        var continuous = LocationFuzzer(appID: "app", secret: try store.secret().get())
        _ = continuous.reduced(Self.location(51.45, -2.59, at: t0), now: t0)
        for name in ["app.json", "secret.json"] {
            let attributes = try FileManager.default.attributesOfItem(
                atPath: folder.appendingPathComponent(name).path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(name)")
        }

        // Restarted a minute later, having moved 300 m: the location it was given, once.
        var second = LocationFuzzer(store: store, appID: "app", live: true)
        let again = second.reduced(Self.location(51.4527, -2.59, at: t0 + 60), now: t0 + 60)
        #expect(again?.coordinate == given.coordinate)
        #expect(again?.timestamp == given.timestamp)
        #expect(second.reduced(Self.location(51.4527, -2.59, at: t0 + 61), now: t0 + 61) == nil)
        // After the limit: a fresh one, exactly what the app would have got had it never restarted.
        let fresh = second.reduced(Self.location(51.45, -2.59, at: t0 + 901), now: t0 + 901)
        let later = try #require(fresh)
        let unrestarted = continuous.reduced(Self.location(51.45, -2.59, at: t0 + 901), now: t0 + 901)
        #expect(later.coordinate == unrestarted?.coordinate, "the restart changed nothing")
        // A clock that went back is no time passed: the limit holds from then on.
        var third = LocationFuzzer(store: store, appID: "app", live: true)
        #expect(third.reduced(Self.location(51.45, -2.59, at: t0), now: t0 - 3600) == nil)
        #expect(third.reduced(Self.location(51.45, -2.59, at: t0), now: t0 - 3000) == nil)
        #expect(third.reduced(Self.location(51.45, -2.59, at: t0), now: t0 - 3600 + 901) != nil)
    }

    @Test("a state file of the first design (one drifting offset per app) is ignored and replaced")
    func firstDesignIgnored() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reduced-v1-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let file = folder.appendingPathComponent("app.json")
        try Data(
            #"{"version":1,"seed":7,"generator":9,"offsetNorth":120.5,"offsetEast":-40.25,"lastOutput":1800000000}"#
                .utf8
        ).write(to: file)
        let store = ReducedAccuracyStore(directory: folder)
        #expect(store.load("app") == nil)
        var fuzzer = LocationFuzzer(store: store, appID: "app", live: true)
        let now = Date(timeIntervalSince1970: 1_800_000_060)
        #expect(fuzzer.reduced(Self.location(51.45, -2.59, at: now), now: now) != nil, "no rate limit carried over")
        #expect(store.load("app")?.version == 2)
    }

    @Test("20 restarts of replay --accuracy reduced give one cell, never an average closing in on the truth")
    func replayRestarts() async throws {
        let home = try GPSLocBinary.makeConfigHome()
        defer { try? FileManager.default.removeItem(at: home) }
        var cells = Set<String>()
        for _ in 0..<20 {
            let result = try await GPSLocBinary.run(
                [
                    "replay", Paths.fixtures.appendingPathComponent("boundary-1hz-gp.nmea").path, "--fast", "--json",
                    "--accuracy", "reduced",
                ], configHome: home)
            let first = try #require(
                result.stdout.split(separator: "\n").first { $0.contains(#""type":"location""#) })
            let object = try #require(JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])
            cells.insert("\(object["latitude"]!),\(object["longitude"]!)")
        }
        #expect(cells.count == 1, "every restart snaps to the kept grid: \(cells)")
        // The user's secret is kept; a replay's rate limit runs on the recording's clock, so
        // nothing of the app's own is.
        let folder = home.appendingPathComponent("state/gpslocation/reduced")
        #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent("secret.json").path))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("gpsloc.json").path))
    }

    @Test("a store folder open to others is not used (nothing read from or written to it)")
    func publicFolderRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reduced-open-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        chmod(folder.path, 0o777)
        let store = ReducedAccuracyStore(directory: folder)
        var fuzzer = LocationFuzzer(store: store, appID: "app", live: true)
        guard case .unavailable(let problem) = fuzzer.reduce(Self.location(51.45, -2.59, at: Date()), now: Date())
        else {
            Issue.record("a reduced location left a store it cannot keep")
            return
        }
        #expect(problem.description.contains("chmod 700 \(folder.path)"))
        var state = ReducedAccuracyState()
        state.cellNorth = 1
        #expect(store.save(state, for: "app")?.description.contains("chmod 700 \(folder.path)") == true)
        #expect(store.load("app") == nil)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty, "nothing written")
    }

    @Test("a damaged secret: nothing delivered, and the message says which file to remove")
    func damagedSecret() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reduced-damaged-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let secret = folder.appendingPathComponent("secret.json")
        for damage in [#"{"version":1,"north":0.7,"east":0}"#, "{", ""] {
            try Data(damage.utf8).write(to: secret)
            var fuzzer = LocationFuzzer(store: ReducedAccuracyStore(directory: folder), appID: "app", live: false)
            guard case .unavailable(let problem) = fuzzer.reduce(Self.location(51.45, -2.59, at: Date()), now: Date())
            else {
                Issue.record("a damaged secret was used: \(damage)")
                continue
            }
            #expect(problem.description.contains("rm \(secret.path)"), "\(problem)")
        }
        try FileManager.default.removeItem(at: secret)
        #expect(mkfifo(secret.path, 0o600) == 0)
        let started = ContinuousClock.now
        guard case .failure(let failure) = ReducedAccuracyStore(directory: folder).secret() else {
            Issue.record("a FIFO was read as the secret")
            return
        }
        #expect(failure.description.contains("not a regular file"))
        #expect(ContinuousClock.now - started < .seconds(1))
    }

    @Test("every app id gets a file name that fits: plain names as they are, others hashed")
    func fileNames() {
        #expect(ReducedAccuracyStore.fileName(for: "tracker") == "tracker.json")
        let long = String(repeating: "a", count: 300)
        let hashed = ReducedAccuracyStore.fileName(for: long)
        #expect(hashed.hasPrefix("id-") && hashed.utf8.count == 3 + 32 + 5)
        #expect(ReducedAccuracyStore.fileName(for: long + "b") != hashed)
        for odd in ["", ".hidden", "a/b", "../x", "été", String(repeating: "x", count: 65)] {
            let name = ReducedAccuracyStore.fileName(for: odd)
            #expect(name.hasPrefix("id-") && !name.contains("/"), "\(odd)")
        }
        // A 300-character id is kept and read back.
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reduced-long-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = ReducedAccuracyStore(directory: folder)
        var fuzzer = LocationFuzzer(store: store, appID: long, live: true)
        #expect(fuzzer.reduced(Self.location(51.45, -2.59, at: Date()), now: Date()) != nil)
        let loaded = store.load(long)
        #expect(loaded?.cellNorth != nil && loaded?.lastLatitude == fuzzer.lastGiven?.coordinate.latitude)
    }

    /// Replays with reduced accuracy and a state folder that cannot be used: no location at
    /// all, one error saying why (reason `reducedAccuracyState`), exit status 1.
    static func failsClosed(_ prepare: (URL) throws -> Void) async throws {
        let home = try GPSLocBinary.makeConfigHome()
        defer {
            chmod(home.appendingPathComponent("state/gpslocation/reduced").path, 0o700)
            try? FileManager.default.removeItem(at: home)
        }
        let folder = home.appendingPathComponent("state/gpslocation/reduced")
        try prepare(folder)
        let result = try await GPSLocBinary.run(
            [
                "replay", Paths.fixtures.appendingPathComponent("boundary-1hz-gp.nmea").path, "--fast", "--json",
                "--accuracy", "reduced",
            ], configHome: home)
        let lines = GPSLocBinary.jsonLines(result.stdout)
        #expect(!lines.contains { $0["type"] as? String == "location" }, "no reduced location leaves")
        let errors = lines.filter { $0["type"] as? String == "error" }
        #expect(errors.contains { ($0["message"] as? String)?.contains("secret offset cannot be kept") == true })
        #expect(result.status != 0)
        // Nor by the side door: the last-location cache has nothing from it.
        let last = try await GPSLocBinary.run(["last", "--json"], configHome: home)
        #expect(!GPSLocBinary.jsonLines(last.stdout).contains { $0["type"] as? String == "location" }, "\(last.stdout)")
        #expect(last.status != 0)
    }

    @Test("reduced accuracy fails closed: a state folder open to other users")
    func failsClosedOpenFolder() async throws {
        try await Self.failsClosed { folder in
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            chmod(folder.path, 0o777)
        }
    }

    @Test("reduced accuracy fails closed: the state folder is a file")
    func failsClosedNotAFolder() async throws {
        try await Self.failsClosed { folder in
            try FileManager.default.createDirectory(
                at: folder.deletingLastPathComponent(), withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: folder.path, contents: Data("x".utf8))
        }
    }

    @Test("a FIFO planted as the state file neither hangs the app nor is read")
    func fifoIsNotRead() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("reduced-fifo-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        chmod(folder.path, 0o700)
        #expect(mkfifo(folder.appendingPathComponent("app.json").path, 0o600) == 0)
        #expect(ReducedAccuracyStore(directory: folder).load("app") == nil)
    }
}

extension LocationFuzzer {
    /// The reduced location for `location`, or nil (held, or unavailable).
    mutating func reduced(_ location: LocationValue, now: Date) -> LocationValue? {
        if case .location(let reduced) = reduce(location, now: now) { return reduced }
        return nil
    }
}

/// Live following of the decision files when their folders are missing or replaced.
@Suite("following the authorization files live", .timeLimit(.minutes(5)))
struct FileFollowingTests {
    static func scratch() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("follow-\(UUID())")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("a file whose folders do not exist yet is seen once they and it are created")
    func missingFolder() async throws {
        let root = try Self.scratch()
        let file = root.appendingPathComponent("etc/gpslocation/policy.json")
        let changes = Watched(0)
        let watcher = FileChangeWatcher(paths: [file.path]) { changes.withLock { $0 += 1 } }
        #expect(watcher != nil)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        _ = await changes.wait(timeout: 2) { $0 > 0 }
        let before = changes.withLock { $0 }
        try Data("{}".utf8).write(to: file)
        #expect(await changes.wait(timeout: 5) { $0 > before }, "the new file is reported")
        withExtendedLifetime(watcher) {}
    }

    @Test("a folder moved away and recreated is followed to the new one, every time")
    func replacedFolder() async throws {
        let root = try Self.scratch()
        let folder = root.appendingPathComponent("store")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("authorizations.json")
        let changes = EventCounter()
        let watcher = FileChangeWatcher(paths: [file.path]) { changes.increment() }
        // Twenty rounds, so the watcher is caught at every point of the move and the recreation
        // (a folder created between looking for it and watching its parent was once missed):
        // on even rounds the folder is recreated at once, on odd rounds only after the watcher
        // has reported the move.
        for round in 0..<20 {
            let beforeMove = changes.value
            try FileManager.default.moveItem(at: folder, to: root.appendingPathComponent("store.\(round)"))
            if round % 2 == 1 { #expect(await changes.wait { $0 > beforeMove }, "the move is reported") }
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // The move and the recreation are reported in their own time; writes in the new
            // folder must be reported once the watcher has followed it. Writes repeat (for at
            // most 5 s) until two in a row are each reported: a late report of the move can
            // answer one of them, never two; a watcher still on the old folder answers none.
            var inARow = 0
            for _ in 0..<50 where inARow < 2 {
                let before = changes.value
                try Data("{}".utf8).write(to: file)
                inARow = await changes.wait(hangLimit: 0.1) { $0 > before } ? inARow + 1 : 0
            }
            #expect(inARow == 2, "round \(round): writes in the new folder are reported")
        }
        withExtendedLifetime(watcher) {}
    }

    @Test("a running app sees a policy created later, in a folder that did not exist at its start")
    func policyCreatedLater() async throws {
        let root = try Self.scratch()
        let policy = root.appendingPathComponent("etc/gpslocation/policy.json")
        let store = DecisionStore(directory: root.appendingPathComponent("config"))
        let authorizer = LocationAuthorizer.persistent(
            appID: "latecomer", store: store, policyPath: policy.path, isInUse: false)
        #expect(authorizer.status == .notDetermined)
        let changes = EventCounter()
        _ = authorizer.addObserver { changes.increment() }
        try FileManager.default.createDirectory(
            at: policy.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(#"{"granted":{"latecomer":{"status":"authorizedAlways","accuracy":"full"}}}"#.utf8).write(to: policy)
        chmod(policy.path, 0o644)
        #expect(await changes.wait { _ in authorizer.status == .authorizedAlways })
    }
}
