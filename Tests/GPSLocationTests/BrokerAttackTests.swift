import Foundation
import GNSSCore
import GPSDProcesses
import TestSupport
import Testing

@testable import GPSLocation

extension RealGPSD.LaneC {
    /// #51's attacks on gpslocd, each run for real: gpslocd as a user of its own, a real gpsd
    /// (gpsfake), and the attacking program on its socket.
    @Suite(
        "gpslocd under attack: what a hostile local client can make it spend",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason),
        .enabled(
            if: OtherUserPrograms.canRunAsOtherUser, Comment(rawValue: OtherUserPrograms.cannotRunAsOtherUserReason)),
        .timeLimit(.minutes(5)))
    struct BrokerAttackTests {
        /// gpslocd's resident memory, MB (/proc/PID/status).
        static func residentMegabytes(_ pid: Int32) throws -> Double {
            let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
            return Double(line.split(separator: " ", omittingEmptySubsequences: true)[1]).map { $0 / 1024 } ?? 0
        }

        /// #51 (and #50's one pass): WATCH on and off 2,000 times with a reduced grant took
        /// gpslocd from 22 MB to 475 MB, never freed — each WATCH made a session with a whole
        /// location engine and a gpsd connection of its own. A session is now a fuzzer and a
        /// point, fed from gpslocd's one connection.
        @Test("WATCH toggled 2,000 times under a reduced grant: memory stays flat, and reduced points still come")
        func watchToggles() async throws {
            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea"), cycle: 0.05)
            defer { server.stop() }
            let broker = try await OwnUserBroker.start(gpsdPort: server.endpoint.port)
            defer { broker.stop() }
            let points = EventCounter()
            let precise = EventCounter()
            let link = BrokerLink(
                path: broker.socket, app: "toggler", afterWelcome: [],
                onMessage: { message in
                    guard message.messageClass == "FIX", message.double("lat") != nil else { return }
                    if message.bool("reduced") == true { points.increment() } else { precise.increment() }
                }, onState: { _ in })
            defer { link.close() }
            _ = try link.startAndWait()
            let reply = try link.request(
                {
                    $0.add("app", "toggler")
                    $0.add("status", "authorizedAlways")
                    $0.add("accuracy", "reduced")
                }, className: "GRANT", timeout: 10)
            #expect(reply.bool("ok") == true, "\(reply.fields)")
            #expect(link.send(BrokerLine("WATCH").line))
            #expect(await points.wait(hangLimit: 30) { $0 >= 1 }, "no reduced point before the toggles")
            let before = try Self.residentMegabytes(broker.daemon.processIdentifier)
            var off = BrokerLine("WATCH")
            off.add("enable", false)
            for _ in 0..<2000 {
                #expect(link.send(off.line) && link.send(BrokerLine("WATCH").line))
            }
            // Everything sent has been read once a request after it is answered.
            _ = try link.request({ _ in }, className: "WHO", timeout: 30)
            let seen = points.value
            #expect(await points.wait(hangLimit: 30) { $0 > seen }, "no reduced point after the toggles")
            let after = try Self.residentMegabytes(broker.daemon.processIdentifier)
            print("gpslocd after 2,000 WATCH toggles under a reduced grant: \(before) MB -> \(after) MB")
            #expect(after - before < 20, "\(before) MB -> \(after) MB")
            #expect(precise.value == 0, "a precise fix reached a reduced program")
        }
    }
}
