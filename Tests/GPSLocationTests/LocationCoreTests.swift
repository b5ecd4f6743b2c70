import Foundation
import GNSSCore
import GPSLocationTesting
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #50: the rules' core (LocationCore, FoundationEssentials only) reads the administrator's
/// policy and the user's files as the library did with Foundation: failing closed.
@Suite("LocationCore: the policy and the private files, on FoundationEssentials alone", .timeLimit(.minutes(5)))
struct LocationCoreTests {
    /// The policy at a fresh path of a folder only this user can write.
    static func policy(_ json: String) throws -> LocationPolicy {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("policy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("policy.json").path
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o644)
        return LocationPolicy.load(path: path)
    }

    @Test("a policy reads its four keys; null, a wrong type or an unknown key turns services off, said")
    func policyFailsClosed() throws {
        let good = try Self.policy(
            #"{"locationServicesEnabled": true, "brokerRequired": true, "restricted": ["spy"], "#
                + #""granted": {"fleetd": {"status": "authorizedAlways", "accuracy": "reduced"}}}"#)
        #expect(good.problem == nil && good.locationServicesEnabled && good.brokerRequired)
        #expect(good.restricted == ["spy"])
        #expect(good.granted["fleetd"] == AuthorizationDecision(status: .authorizedAlways, accuracy: .reducedAccuracy))
        for bad in [
            #"{"locationServicesEnabled": null}"#, #"{"restricted": null}"#, #"{"restricted": "spy"}"#,
            #"{"granted": {"fleetd": {"status": "authorizedAlways", "accuracy": 1}}}"#,
            #"{"granted": {"fleetd": {"status": "always"}}}"#, #"["not", "an", "object"]"#, "{",
        ] {
            let policy = try Self.policy(bad)
            #expect(
                !policy.locationServicesEnabled
                    && policy.problem?.description.contains("could not be read or is invalid") == true,
                "\(bad)")
        }
        let misspelled = try Self.policy(#"{"restrictd": ["spy"]}"#)
        #expect(
            !misspelled.locationServicesEnabled
                && misspelled.problem?.description.contains("unknown key(s) restrictd") == true)
        let inGrant = try Self.policy(#"{"granted": {"fleetd": {"status": "authorizedAlways", "acuracy": "full"}}}"#)
        #expect(inGrant.problem?.description.contains("granted.fleetd.acuracy") == true)
    }

    @Test("a file's folder, its bytes to a bound, an error's words")
    func helpers() throws {
        #expect(TrustedFile.folder(of: "/etc/gpslocation/policy.json") == "/etc/gpslocation")
        #expect(TrustedFile.folder(of: "/policy.json") == "/")
        #expect(TrustedFile.folder(of: "policy.json") == "")
        #expect(TrustedFile.folder(of: "/etc/gpslocation/") == "/etc")
        var pipe: [Int32] = [0, 0]
        #expect(Glibc.pipe(&pipe) == 0)
        _ = "0123456789".withCString { write(pipe[1], $0, 10) }
        close(pipe[1])
        #expect(PrivateFile.readAll(pipe[0], maximumSize: 4).map { String(decoding: $0, as: UTF8.self) } == "0123")
        close(pipe[0])
        do {
            try FileManager.default.createDirectory(
                at: URL(fileURLWithPath: "/proc/no-such/folder"), withIntermediateDirectories: true)
            Issue.record("a folder was made under /proc")
        } catch {
            #expect(PrivateFile.systemCode(error) == ENOENT, "\(error)")
        }
    }
}

/// #50: a face builds its runner from the app's authorizer and cannot forget revocation: the
/// runner follows the authorizer by itself.
@Suite("LocationCore: a runner made from an authorizer follows it")
struct FollowingRunnerTests {
    @Test("a revocation stops deliveries without the face doing anything; a new grant's accuracy applies")
    func followsTheAuthorizer() async throws {
        let authorizer = LocationAuthorizer(
            appID: "follow", initial: AuthorizationDecision(status: .authorizedAlways), isInUse: true)
        let source = ManualLocationSource(isLive: true)
        let runner = EngineRunner(
            source: source, configuration: LocationEngine.Configuration(), authorizer: authorizer,
            lastLocationCache: nil, queue: nil)
        let delivered = Locked<[LocationValue]>([])
        let failures = Locked<[CLError.Code]>([])
        runner.setConsumer { output in
            switch output {
            case .locations(let locations): delivered.withLock { $0 += locations }
            case .failure(let error): failures.withLock { $0.append(error.code) }
            default: break
            }
        }
        runner.start(.continuous)
        #expect(await source.wait { $0.isRunning })
        let start = Date()
        func send(_ index: Int) {
            var fix = Fix(
                mode: .threeDimensional, time: start.addingTimeInterval(Double(index)),
                latitude: 51.45 + Double(index) * 1e-4,
                longitude: -2.59)
            fix.errors = FixErrors(horizontal: 5)
            _ = source.send(.fix(fix))
        }
        for index in 0..<4 { send(index) }
        let before = delivered.withLock { $0.count }
        #expect(before >= 2, "locations flow under the grant")
        authorizer.set(AuthorizationDecision(status: .denied))
        for index in 4..<8 { send(index) }
        #expect(delivered.withLock { $0.count } <= before + 1, "at most the epoch already whole before the revocation")
        #expect(failures.withLock { $0.contains(.denied) })
        // Apple's rule: denied ends updates; the app starts them again after a new grant.
        #expect(!runner.isRunning)
        authorizer.set(AuthorizationDecision(status: .authorizedAlways, accuracy: .reducedAccuracy))
        let denied = delivered.withLock { $0.count }
        runner.start(.continuous)
        #expect(await source.wait { $0.isRunning && $0.starts == 2 })
        for index in 8..<12 { send(index) }
        // Reduced: the fuzzer's point, then nothing new for 15 minutes.
        let after = delivered.withLock { Array($0.dropFirst(denied)) }
        #expect(!after.isEmpty, "deliveries resume with the grant")
        #expect(after.allSatisfy { $0.gnss?.reduced == true }, "the grant's reduced accuracy, applied without the face")
        runner.stop()
    }

    /// The CoreLocation face follows through its runner too (no rule of its own): an outside
    /// revocation is heard by the delegate first, then the denied error, then nothing.
    @Test("CLLocationManager: an outside revocation — didChangeAuthorization, then denied, then no location")
    func managerFollowsThroughItsRunner() async throws {
        final class Log: NSObject, CLLocationManagerDelegate, Sendable {
            let entries = Locked<[String]>([])
            func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
                entries.withLock { $0.append("location") }
            }
            func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
                entries.withLock { $0.append("error \((error as? CLError)?.code.name ?? "?")") }
            }
            func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
                entries.withLock { $0.append("authorization \(manager.authorizationStatus.rawValue)") }
            }
        }
        let authorizer = LocationAuthorizer(
            appID: "follow-manager", initial: AuthorizationDecision(status: .authorizedAlways), isInUse: true)
        let source = ManualLocationSource(isLive: true)
        let queue = DispatchQueue(label: "follow-manager")
        let log = Log()
        let manager = CLLocationManager(source: source, authorizer: authorizer, delegateQueue: queue)
        manager.delegate = log
        manager.startUpdatingLocation()
        #expect(await source.wait { $0.isRunning })
        let start = Date()
        func send(_ index: Int) {
            var fix = Fix(
                mode: .threeDimensional, time: start.addingTimeInterval(Double(index)),
                latitude: 51.45 + Double(index) * 1e-4, longitude: -2.59)
            fix.errors = FixErrors(horizontal: 5)
            _ = source.send(.fix(fix))
        }
        for index in 0..<4 { send(index) }
        queue.sync {}
        #expect(log.entries.withLock { $0.contains("location") }, "locations flow under the grant")
        let before = log.entries.withLock { $0.count }
        authorizer.set(AuthorizationDecision(status: .denied))
        for index in 4..<8 { send(index) }
        queue.sync {}
        let after = log.entries.withLock { Array($0.dropFirst(before)) }
        let denied = CLAuthorizationStatus.denied.rawValue
        #expect(after.first == "authorization \(denied)", "the delegate hears of the change first: \(after)")
        #expect(after.contains("error denied"), "then the gate's refusal: \(after)")
        // At most the epoch already whole before the revocation, and it before the change.
        let firstChange = try #require(after.firstIndex(of: "authorization \(denied)"))
        #expect(!after[firstChange...].contains("location"), "no location after the revocation: \(after)")
        #expect(await source.wait { !$0.isRunning }, "denied ends updates and stops the source")
    }
}

/// The sky's duplicates (one satellite in an L1 and an L5 GSV set) merge into one entry, and a
/// sky without any comes back as it was.
@Suite("PhysicalRanges: a sky's repeated satellites merge")
struct MergedSatellitesTests {
    static func satellite(_ prn: Int, _ system: Constellation, _ number: Int, snr: Double?, used: Bool) -> Satellite {
        Satellite(
            prn: prn, constellation: system, satelliteID: number, signalToNoise: snr, elevation: 40, azimuth: 100,
            used: used)
    }

    @Test("no repeat: the same list; repeats: one entry each, the strongest signal, used if any was")
    func merges() {
        let distinct =
            (1...32).map { Self.satellite($0, .gps, $0, snr: 30, used: $0 % 2 == 0) }
            + (1...24).map { Self.satellite(64 + $0, .glonass, $0, snr: 25, used: false) }
        #expect(PhysicalRanges.merged(distinct) == distinct)
        let twice = [
            Self.satellite(7, .gps, 7, snr: 30, used: false), Self.satellite(302, .galileo, 2, snr: 40, used: true),
            Self.satellite(7, .gps, 7, snr: 44, used: true), Self.satellite(8, .gps, 8, snr: nil, used: false),
        ]
        let merged = PhysicalRanges.merged(twice)
        #expect(merged.map(\.prn) == [7, 302, 8])
        #expect(merged[0].signalToNoise == 44 && merged[0].used)
        // Different keys that share a bit (GPS 131 and SBAS 0 hash alike) stay apart.
        let alike = [
            Self.satellite(131, .gps, 131, snr: 30, used: true), Self.satellite(120, .sbas, 0, snr: 20, used: false),
        ]
        #expect(PhysicalRanges.merged(alike) == alike)
    }
}
