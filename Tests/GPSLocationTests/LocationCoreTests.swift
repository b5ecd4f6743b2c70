import Foundation
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
                !policy.locationServicesEnabled && policy.problem?.contains("could not be read or is invalid") == true,
                "\(bad)")
        }
        let misspelled = try Self.policy(#"{"restrictd": ["spy"]}"#)
        #expect(!misspelled.locationServicesEnabled && misspelled.problem?.contains("unknown key(s) restrictd") == true)
        let inGrant = try Self.policy(#"{"granted": {"fleetd": {"status": "authorizedAlways", "acuracy": "full"}}}"#)
        #expect(inGrant.problem?.contains("granted.fleetd.acuracy") == true)
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
            #expect(PrivateFile.describe(error) == "No such file or directory", "\(error)")
        }
    }
}
