import Foundation
import GNSSCore
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// The last known location: kept per app, only what passed its gate, only from receivers, and
/// shown to a new manager at once when (and as far as) the app is authorized.
@Suite("last known location: the per-app cache and manager.location", .timeLimit(.minutes(5)))
struct LastLocationTests {
    /// A manager on `source` with `cache`, updating, its delegate recording (recordings dated
    /// 2026: no age limit).
    static func updatingManager(
        _ source: ManualLocationSource, _ authorizer: LocationAuthorizer, cache: LastLocationCache?
    ) -> (CLLocationManager, RecordingDelegate) {
        let manager = CLLocationManager(source: source, authorizer: authorizer)
        manager.lastLocationCache = cache
        manager.maximumLocationAge = 1e9
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.startUpdatingLocation()
        return (manager, delegate)
    }

    static func scratch() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("last-\(UUID().uuidString)")
    }

    static func location(reduced: Bool = false, source: CLLocationSourceInformation? = .receiver, age: Double = 600)
        -> LocationValue
    {
        CLLocation(
            coordinate: CLLocationCoordinate2D(latitude: 51.4539, longitude: -2.5973), altitude: 45.5,
            ellipsoidalAltitude: 93.7, horizontalAccuracy: reduced ? 2000 : 1.6, verticalAccuracy: reduced ? -1 : 2.6,
            course: 72, courseAccuracy: -1, speed: 13.4, speedAccuracy: -1, timestamp: Date() - age,
            gnss: GNSSDetails(
                fixMode: .threeDimensional, quality: .gps, accuracyClass: reduced ? .threeKilometers : .best,
                reduced: reduced, device: "/dev/ttyACM0"),
            sourceInformation: source
        ).value
    }

    @Test("a receiver's location round-trips whole; files are private and written whole")
    func roundTrip() throws {
        let folder = Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = LastLocationCache(directory: folder)
        let original = Self.location()
        #expect(cache.record(original, for: "widget"))
        let read = try #require(cache.location(for: "widget"))
        #expect(read.coordinate == original.coordinate && read.altitude == original.altitude)
        #expect(read.horizontalAccuracy == original.horizontalAccuracy && read.speed == original.speed)
        #expect(abs(read.timestamp.timeIntervalSince(original.timestamp)) < 1e-6)
        #expect(read.gnss == original.gnss && read.origin?.isProducedByAccessory == true)
        let file = folder.appendingPathComponent("widget.json").path
        let attributes = try FileManager.default.attributesOfItem(atPath: file)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect((try FileManager.default.attributesOfItem(atPath: folder.path)[.posixPermissions] as? Int) == 0o700)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["widget.json"], "no temp files left")
    }

    @Test("replays are never cached; writes are throttled, except the one when updates stop")
    func whatIsWritten() {
        let folder = Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = LastLocationCache(directory: folder, writeInterval: 30)
        #expect(!cache.record(Self.location(source: .simulated), for: "a"))
        #expect(!cache.record(Self.location(source: nil), for: "a"), "unknown origin: not kept")
        #expect(cache.location(for: "a") == nil)
        let now = Date()
        #expect(cache.record(Self.location(age: 10), for: "a", now: now))
        #expect(!cache.record(Self.location(age: 5), for: "a", now: now + 10), "within 30 s")
        #expect(cache.record(Self.location(age: 1), for: "a", now: now + 11, force: true))
        #expect(cache.record(Self.location(age: 0), for: "a", now: now + 45))
        #expect(!cache.record(Self.location(), for: "../etc/passwd"), "app ids are names, not paths")
    }

    @Test("only an authorized app sees it; a reduced app never sees a precise one; planted links are not read")
    func whoSeesWhat() throws {
        let folder = Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = LastLocationCache(directory: folder)
        cache.record(Self.location(), for: "precise")
        cache.record(Self.location(reduced: true), for: "approx")
        let full = AuthorizationDecision(status: .authorizedWhenInUse)
        let reduced = AuthorizationDecision(status: .authorizedAlways, accuracy: .reducedAccuracy)
        #expect(cache.location(for: "precise", allowedBy: full) != nil)
        #expect(cache.location(for: "precise", allowedBy: reduced) == nil)
        #expect(cache.location(for: "approx", allowedBy: reduced)?.gnss?.reduced == true)
        for status in [CLAuthorizationStatus.notDetermined, .denied, .restricted] {
            #expect(cache.location(for: "precise", allowedBy: AuthorizationDecision(status: status)) == nil)
        }
        // A symlink planted in place of an app's file is neither read nor written through.
        let target = folder.appendingPathComponent("elsewhere.txt")
        try Data("precious".utf8).write(to: target)
        try FileManager.default.createSymbolicLink(
            atPath: folder.appendingPathComponent("victim.json").path, withDestinationPath: target.path)
        #expect(cache.location(for: "victim") == nil)
        #expect(cache.record(Self.location(), for: "victim"))
        #expect(try String(contentsOf: target, encoding: .utf8) == "precious")
    }

    @Test("a cache folder other users can write is not read: a planted file is never the app's location")
    func plantedInOpenFolder() throws {
        let folder = Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = LastLocationCache(directory: folder)
        #expect(cache.record(Self.location(), for: "widget"))
        #expect(cache.location(for: "widget") != nil && cache.folderProblem == nil)
        // Another user, through the open folder, replaces the file with a position of their choice.
        chmod(folder.path, 0o777)
        #expect(cache.location(for: "widget") == nil)
        #expect(cache.folderProblem?.description.contains("chmod 700 \(folder.path)") == true)
        chmod(folder.path, 0o700)
        // A FIFO in its place neither hangs the reader nor is read.
        let file = folder.appendingPathComponent("fifo-app.json").path
        #expect(mkfifo(file, 0o600) == 0)
        #expect(cache.location(for: "fifo-app") == nil)
    }

    /// The attack as it happens: another user (nobody, through setpriv) replaces the app's cached
    /// location through a cache folder left open to everyone.
    @Test(
        "another user planting a location through an open cache folder: gpsloc last shows nothing of it",
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "needs root and setpriv"))
    func plantedBySecondUser() async throws {
        let home = try GPSLocBinary.makeConfigHome()
        defer { try? FileManager.default.removeItem(at: home) }
        let folder = home.appendingPathComponent("cache/gpslocation/last")
        let cache = LastLocationCache(directory: folder)
        #expect(cache.record(Self.location(), for: "widget"))
        #expect(try await GPSLocBinary.run(["auth", "grant", "widget", "--always"], configHome: home).status == 0)
        chmod(home.path, 0o755)
        chmod(home.appendingPathComponent("cache").path, 0o755)
        chmod(home.appendingPathComponent("cache/gpslocation").path, 0o755)
        chmod(folder.path, 0o777)  // the mistake
        // As nobody: move the app's file away and write another position in its place.
        let planted =
            #"{"version":1,"app":"widget","location":{"latitude":48.8584,"longitude":2.2945,"altitude":0,"ellipsoidalAltitude":0,"horizontalAccuracy":5,"verticalAccuracy":-1,"course":-1,"courseAccuracy":-1,"speed":-1,"speedAccuracy":-1,"timestamp":0,"accessory":true}}"#
        let script =
            "mv \(folder.path)/widget.json \(folder.path)/moved.json; printf '%s' '\(planted)' > \(folder.path)/widget.json"
        let attacker = try await runProgram(
            "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", script])
        #expect(attacker.status == 0, "the second user could write into the open folder")
        let shown = try await GPSLocBinary.run(["last", "--app", "widget", "--json"], configHome: home)
        #expect(!shown.stdout.contains("48.858"), "the planted position is never shown: \(shown.stdout)")
        #expect(shown.status == 1 && shown.stdout.contains("chmod 700"), "\(shown.stdout)")
        // The same file, the user's own in a private folder, is read: what was refused was the
        // folder and the owner, not a file the reader cannot decode.
        let file = folder.appendingPathComponent("widget.json")
        let data = try Data(contentsOf: file)
        try FileManager.default.removeItem(at: file)
        try data.write(to: file)
        chmod(folder.path, 0o700)
        let own = try await GPSLocBinary.run(["last", "--app", "widget", "--json"], configHome: home)
        #expect(own.stdout.contains("48.858"), "\(own.stdout)")
    }

    @Test("gpsloc last applies watch's gate: a When-In-Use app that is not in use sees nothing")
    func lastAppliesTheGate() async throws {
        let home = try GPSLocBinary.makeConfigHome()
        defer { try? FileManager.default.removeItem(at: home) }
        let cache = LastLocationCache(directory: home.appendingPathComponent("cache/gpslocation/last"))
        #expect(cache.record(Self.location(), for: "widget"))
        #expect(
            try await GPSLocBinary.run(["auth", "grant", "widget", "--when-in-use"], configHome: home).status == 0)
        // Not from a terminal: not in use, as watch would say.
        let notInUse = try await GPSLocBinary.run(["last", "--app", "widget", "--json"], configHome: home)
        #expect(notInUse.status == 1 && !notInUse.stdout.contains(#""type":"location""#), "\(notInUse.stdout)")
        #expect(notInUse.stdout.contains("in use"), "\(notInUse.stdout)")
        let inUse = try await GPSLocBinary.run(["last", "--app", "widget", "--json", "--in-use"], configHome: home)
        #expect(inUse.status == 0 && inUse.stdout.contains(#""type":"location""#), "\(inUse.stdout)")
        // Always: shown without a terminal.
        #expect(try await GPSLocBinary.run(["auth", "grant", "widget", "--always"], configHome: home).status == 0)
        #expect(try await GPSLocBinary.run(["last", "--app", "widget", "--json"], configHome: home).status == 0)
    }

    @Test("a Today-widget style reader shows the cached location at once, old and marked stale")
    func widgetPattern() throws {
        let folder = Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = LastLocationCache(directory: folder)
        cache.record(Self.location(age: 3600), for: "test")
        // The widget: a manager, no updates started, reading `location`.
        let manager = CLLocationManager(source: FixListSource([]), authorizer: grantedAuthorizer())
        manager.lastLocationCache = cache
        let shown = try #require(manager.location)
        #expect(abs(shown.coordinate.latitude - 51.4539) < 1e-9)
        #expect(manager.isLocationStale)
        #expect((manager.locationAge ?? 0) > 3500)
        let denied = CLLocationManager(source: FixListSource([]), authorizer: grantedAuthorizer(.denied))
        denied.lastLocationCache = cache
        #expect(denied.location == nil)
    }

    @Test("a manager on a receiver writes what its delegate got; a replay writes nothing")
    func managerWrites() async throws {
        let folder = Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = LastLocationCache(directory: folder, writeInterval: 30)
        let fixes = try FixtureFixes.load("clean-1hz-multi")
        for (source, written) in [(ManualLocationSource(isLive: false), false)] {
            let (manager, delegate) = Self.updatingManager(
                source, grantedAuthorizer(.authorizedAlways), cache: cache)
            for fix in fixes.prefix(20) { _ = source.send(.fix(fix)) }
            #expect(await delegate.waitForLocations(3))
            manager.stopUpdatingLocation()
            #expect((cache.location(for: "test") != nil) == written)
        }
        // Receivers: the cache's own rule, with a receiver's location as a live source makes it.
        let live = LastLocationCache(directory: folder, writeInterval: 30, recordsSimulated: true)
        let source = ManualLocationSource(isLive: false)
        let (manager, delegate) = Self.updatingManager(
            source, grantedAuthorizer(.authorizedAlways, accuracy: .reducedAccuracy), cache: live)
        for fix in fixes.prefix(20) { _ = source.send(.fix(fix)) }
        #expect(await delegate.waitForLocations(1))
        manager.stopUpdatingLocation()
        let kept = try #require(live.location(for: "test"))
        #expect(kept.gnss?.reduced == true, "a reduced app's cache holds the reduced location")
        #expect(kept.coordinate == delegate.locations.last?.coordinate)
    }

    /// Every thirtieth second's location waited for two fsyncs on the thread that delivers it: on
    /// an SD card that is a late location, on a hung NFS home no location at all and no word why.
    @Test("a disk that takes its time never holds a location back: the cache is written on a thread of its own")
    func slowDisk() async throws {
        let folder = Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let disk = HeldDisk()
        let cache = disk.cache(in: folder)
        let fixes = try FixtureFixes.load("clean-1hz-multi")
        let source = ManualLocationSource(isLive: false)
        let (manager, delegate) = Self.updatingManager(source, grantedAuthorizer(.authorizedAlways), cache: cache)
        // Sent from a thread of their own: the old way this thread itself would wait for the disk.
        DispatchQueue.global().async { for fix in fixes.prefix(20) { _ = source.send(.fix(fix)) } }
        #expect(await delegate.waitForLocations(5), "locations come while the first one's write waits for the disk")
        #expect(disk.began.wait(timeout: .now() + 60) == .success, "the first location's write began")
        #expect(
            !FileManager.default.fileExists(atPath: folder.appendingPathComponent("test.json").path),
            "not written yet: the disk has not answered")
        let said = Locked<[LocationDiagnostic]>([])
        manager.diagnosticsHandler = { diagnostic in said.withLock { $0.append(diagnostic) } }
        disk.answer()
        manager.stopUpdatingLocation()
        #expect(!said.withLock { $0 }.contains { $0.code == "lastLocationNotSaved" }, "saved in time: nothing to say")
        // The write when updates stop waits for the one before it; both are done now.
        #expect(cache.location(for: "test")?.coordinate == delegate.locations.last?.coordinate)
    }

    /// A disk that does not answer (a hung NFS home) must not have a write queued every 30 s for
    /// as long as the program runs, nor hold a read of the cache.
    @Test("a disk that does not answer: one write waits per app, the newest; reads do not wait for it")
    func hungDisk() throws {
        let folder = Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let disk = HeldDisk()
        let cache = disk.cache(in: folder)
        let start = Date()
        // Ten minutes of locations, one due every 30 s: the first write hangs on the disk.
        for step in 0..<20 {
            var location = Self.location()
            location.altitude = Double(step)
            #expect(cache.record(location, for: "a", now: start + Double(step) * 31, inBackground: true))
            if step == 0 { disk.began.wait() }  // the first write is on the disk
        }
        #expect(cache.location(for: "a") == nil, "a read does not wait for the disk, and nothing is written yet")
        disk.answer()
        // A write made now waits for the ones queued before it: then all are done.
        #expect(cache.record(Self.location(), for: "b", now: start, force: true))
        let altitudes = disk.written.withLock { $0 }.map { data in
            let entry = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            return (entry?["location"] as? [String: Any])?["altitude"] as? Double ?? -1
        }
        #expect(altitudes == [0, 19, 45.5], "the first, then only the newest of the nineteen after it")
        #expect(cache.location(for: "a")?.altitude == 19)
    }

    /// The write when updates stop waits for the disk, but not for ever: on a disk that does not
    /// answer, `stopUpdatingLocation()` returns after the cache's final wait and the app's
    /// diagnostics handler is told which file was not saved; the write finishes if the disk does.
    @Test("a disk that does not answer when updates stop: stop returns, and says the last location was not saved")
    func hungDiskAtStop() async throws {
        let folder = Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let disk = HeldDisk()
        let thread = JobThread(name: "test.files")
        let cache = disk.cache(in: folder, thread: thread, finalWait: 0.05)
        let said = Locked<[LocationDiagnostic]>([])
        let fixes = try FixtureFixes.load("clean-1hz-multi")
        let source = ManualLocationSource(isLive: false)
        let (manager, delegate) = Self.updatingManager(source, grantedAuthorizer(.authorizedAlways), cache: cache)
        manager.diagnosticsHandler = { diagnostic in said.withLock { $0.append(diagnostic) } }
        for fix in fixes.prefix(10) { _ = source.send(.fix(fix)) }
        #expect(await delegate.waitForLocations(3))
        manager.runner.settle()
        // The disk holds the first write; the one when updates stop waits behind it.
        manager.stopUpdatingLocation()
        let notes = said.withLock { $0 }.filter { $0.code == "lastLocationNotSaved" }
        let file = folder.appendingPathComponent("test.json").path
        #expect(notes.count == 1)
        #expect(notes.first?.facts == .lastLocationNotSaved(path: file, waited: 0.05))
        #expect(notes.first?.message.hasPrefix("the last location was not saved: writing \(file)") == true)
        // The disk answers: both writes finish, the last location is the one delivered last.
        disk.answer()
        _ = thread.sync {}
        #expect(cache.location(for: "test")?.coordinate == delegate.locations.last?.coordinate)
    }

    /// A full disk: the location is not saved, and that is said — once, not at every write, and
    /// again only after a write worked in between — in order with the app's other diagnostics;
    /// locations go on.
    @Test("a full disk: the last location not saved is said once (again only after a write worked); locations go on")
    func fullDisk() async throws {
        let folder = Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let full = Locked(true)
        let thread = JobThread(name: "test.files")
        let cache = LastLocationCache(
            directory: folder, writeInterval: 0, recordsSimulated: true,
            writer: { data, url in
                full.withLock { $0 }
                    ? .incompleteWrite(path: url.path) : LastLocationCache.writeAtomically(data, to: url)
            }, thread: thread)
        let said = Locked<[LocationDiagnostic]>([])
        let fixes = try FixtureFixes.load("clean-1hz-multi")
        let source = ManualLocationSource(isLive: false)
        let (manager, delegate) = Self.updatingManager(source, grantedAuthorizer(.authorizedAlways), cache: cache)
        manager.diagnosticsHandler = { diagnostic in said.withLock { $0.append(diagnostic) } }
        func notes() -> [LocationDiagnostic] { said.withLock { $0 }.filter { $0.code == "lastLocationNotSaved" } }
        // One location at a time, each written (interval 0) and its write done before the next.
        func send(_ range: Range<Int>) async {
            for fix in fixes[range] {
                _ = source.send(.fix(fix))
                manager.runner.settle()
                _ = thread.sync {}
            }
        }
        await send(0..<10)
        #expect(await delegate.waitForLocations(5), "locations go on")
        manager.runner.settle()
        #expect(notes().count == 1, "said once for nine failed writes: \(notes().map(\.message))")
        #expect(
            notes().first?.facts
                == .lastLocationWriteFailed(.incompleteWrite(path: folder.appendingPathComponent("test.json").path)))
        #expect(
            notes().first?.message.hasPrefix("the last location could not be saved: could not write all of") == true)
        full.withLock { $0 = false }
        await send(10..<13)
        #expect(cache.location(for: "test") != nil, "written once the disk has room")
        full.withLock { $0 = true }
        await send(13..<16)
        manager.runner.settle()
        #expect(notes().count == 2, "full again after a write worked: said again")
        manager.stopUpdatingLocation()
        #expect(notes().count == 2, "the write when updates stop fails too, but that was said already")
    }

    /// A program stopped while its write waited for the disk leaves its temporary file; the next
    /// write removes those of ended programs (only when old: a write in progress is never cut).
    @Test("temporary files left by ended programs are removed by the next write; live or recent ones stay")
    func abandonedTemporaryFiles() throws {
        let folder = Self.scratch()
        defer { try? FileManager.default.removeItem(at: folder) }
        let cache = LastLocationCache(directory: folder, writeInterval: 0, recordsSimulated: true)
        #expect(cache.record(Self.location(), for: "app"))
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        let dead = ended.processIdentifier
        let old = Date(timeIntervalSinceNow: -3_600)
        func plant(_ name: String, modified: Date) throws -> String {
            let path = folder.appendingPathComponent(name).path
            #expect(FileManager.default.createFile(atPath: path, contents: Data("{".utf8)))
            try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: path)
            return path
        }
        let abandoned = try plant(".app.json.\(dead).\(UUID().uuidString).tmp", modified: old)
        let recent = try plant(".app.json.\(dead).\(UUID().uuidString).tmp", modified: Date())
        let ours = try plant(".app.json.\(getpid()).\(UUID().uuidString).tmp", modified: old)
        let running = try plant(".app.json.1.\(UUID().uuidString).tmp", modified: old)
        let otherFile = try plant(".other.json.\(dead).\(UUID().uuidString).tmp", modified: old)
        #expect(cache.record(Self.location(), for: "app", force: true))
        let manager = FileManager.default
        #expect(!manager.fileExists(atPath: abandoned), "its program ended an hour ago: removed")
        #expect(manager.fileExists(atPath: recent), "maybe still being written (another PID namespace): kept")
        #expect(manager.fileExists(atPath: ours), "this process's own")
        #expect(manager.fileExists(atPath: running), "pid 1 runs")
        #expect(manager.fileExists(atPath: otherFile), "another file's: its own write removes it")
        #expect(cache.location(for: "app") != nil)
    }

    /// `location` is the object the delegate was handed, read after read (Apple's manager keeps
    /// it): an app that compares it with what it received (`===`, NSObject's `isEqual`), or a
    /// SwiftUI model that publishes it, sees one location, not a new object on every read.
    @Test("manager.location is the very object the delegate last received, on every read")
    func locationKeepsItsIdentity() async throws {
        let fixes = try FixtureFixes.load("clean-1hz-multi")
        let source = ManualLocationSource(isLive: false)
        let (manager, delegate) = Self.updatingManager(source, grantedAuthorizer(.authorizedAlways), cache: nil)
        for fix in fixes.prefix(20) { _ = source.send(.fix(fix)) }
        #expect(await delegate.waitForLocations(3))
        // Everything sent is delivered (the source stopped sending): what the delegate holds is final.
        manager.runner.settle()
        let count = delegate.locations.count
        let received = try #require(delegate.locations.last)
        let first = try #require(manager.location)
        #expect(delegate.locations.count == count, "no location came in between")
        #expect(first === received)
        #expect(manager.location === first)
        #expect(manager.location?.isEqual(received) == true)
        manager.stopUpdatingLocation()
    }

    /// The same attack on the authorization store (#24): a second user replaces the decisions
    /// file through an open folder to grant an app of theirs Always. Nothing is read from it.
    @Test(
        "another user planting a grant through an open authorization folder: no app gets it",
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "needs root and setpriv"))
    func grantPlantedBySecondUser() async throws {
        let home = try GPSLocBinary.makeConfigHome()
        defer { try? FileManager.default.removeItem(at: home) }
        #expect(try await GPSLocBinary.run(["auth", "grant", "widget", "--when-in-use"], configHome: home).status == 0)
        let folder = home.appendingPathComponent("gpslocation")
        chmod(home.path, 0o755)
        chmod(folder.path, 0o777)  // the mistake
        let planted =
            #"{"spy":{"status":"authorizedAlways","accuracy":"full","decidedAt":"2026-12-01T00:00:00Z"}}"#
        let script =
            "mv \(folder.path)/authorizations.json \(folder.path)/moved.json; "
            + "printf '%s' '\(planted)' > \(folder.path)/authorizations.json"
        let attacker = Process()
        attacker.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        attacker.arguments = ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", script]
        try attacker.run()
        _ = try await offConcurrencyThreads { attacker.waitUntilExit() }
        #expect(attacker.terminationStatus == 0, "the second user could write into the open folder")
        let status = try await GPSLocBinary.run(["auth", "status", "spy"], configHome: home)
        #expect(status.status == 1 && !status.stdout.contains("authorizedAlways"), "\(status.stdout)")
        #expect(status.stderr.contains("chmod 700 \(folder.path)"), "\(status.stderr)")
        // The library reads nothing from the folder either: the planted grant is not a decision.
        let store = DecisionStore(directory: folder)
        #expect(store.decision(for: "spy") == nil && store.decision(for: "widget") == nil)
        chmod(folder.path, 0o700)
    }
}

/// A disk the test holds: each write says it began, then waits until `answer()`, after which
/// every write goes through at once. What reached it is kept.
final class HeldDisk: Sendable {
    private let gate = DispatchSemaphore(value: 0)
    /// Signalled as each write begins.
    let began = DispatchSemaphore(value: 0)
    /// The files' contents written, in order.
    let written = Locked<[Data]>([])

    func answer() { gate.signal() }

    /// A cache in `folder` writing to this disk, every 30 s, simulated locations kept — on a write
    /// thread of the test's own (the process's is shared by the tests around it).
    func cache(
        in folder: URL, thread: JobThread = JobThread(name: "test.files"),
        finalWait: TimeInterval = LastLocationCache.finalWriteWait
    ) -> LastLocationCache {
        LastLocationCache(
            directory: folder, writeInterval: 30, recordsSimulated: true,
            writer: { [self] data, url in
                began.signal()
                gate.wait()
                gate.signal()
                written.withLock { $0.append(data) }
                return LastLocationCache.writeAtomically(data, to: url)
            }, thread: thread, finalWait: finalWait)
    }
}
