import Foundation
// What gpsd says, told as it says it: a satellite once (sky), its own words for a device it does
// not read, and its trouble to a subscriber that joins late.
import GNSSCore
import GPSDProcesses
import TestSupport
import Testing

@testable import GPSLocCLI
@testable import GPSLocation
@testable import LocationCore

/// #36: `gpsloc sky` once showed PRNs 23–29 twice ("13 used of 16 seen" for 10 satellites). The
/// cause is gpsd 3.22's `processGSV`: it starts a new satellite list only at the first part of a
/// GPS GSV set, so a GLONASS (Galileo, BeiDou) GSV set that comes twice before the next GPS set
/// is appended twice — gpsd's own SKY then lists those satellites twice (seen with gpspipe:
/// `[23, 24, 25, 70, 71, 70, 71]`) — and `sky` kept the fullest report, exactly that one.
enum SkyDuplicates {
    static func sentence(_ body: String) -> String {
        "$\(body)*" + String(format: "%02X", body.utf8.reduce(UInt8(0), ^)) + "\r\n"
    }

    /// Ten cycles: RMC, GGA, GSA, the GPS sky (23–25), the GLONASS sky (70, 71) — sent twice
    /// every other cycle, the interleaving that makes gpsd list 70 and 71 twice.
    static func recording() -> String {
        var text = ""
        for second in 0..<10 {
            let time = String(format: "0800%02d.00", second)
            text += sentence("GPRMC,\(time),A,5127.2400,N,00235.8000,W,0.0,0.0,150626,,,A")
            text += sentence("GPGGA,\(time),5127.2400,N,00235.8000,W,1,05,0.9,40.0,M,48.0,M,,")
            text += sentence("GNGSA,A,3,23,24,25,70,71,,,,,,,,1.6,0.9,1.3")
            text += sentence("GPGSV,1,1,03,23,40,050,41,24,35,120,40,25,60,200,44")
            text += sentence("GLGSV,1,1,02,70,40,050,41,71,35,120,40")
            if second % 2 == 0 { text += sentence("GLGSV,1,1,02,70,40,050,41,71,35,120,40") }
        }
        return text
    }
}

extension RealGPSD.LaneA {
    @Suite(
        "gpsloc sky never shows a satellite twice",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason), .timeLimit(.minutes(2)))
    struct SkyDuplicateTests {
        @Test("a GLONASS sky sent twice, through a real gpsd: each PRN once, used counted once")
        func eachSatelliteOnce() async throws {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sky-\(UUID())")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let log = folder.appendingPathComponent("glonass-twice.nmea")
            try SkyDuplicates.recording().write(to: log, atomically: true, encoding: .utf8)
            let server = try await GPSFakeServer.started(log: log, cycle: 0.05)
            defer { server.stop() }
            let run = try await GPSLocBinary.run(["sky", "127.0.0.1:\(server.endpoint.port)", "--json"])
            let sky = try #require(GPSLocBinary.jsonLines(run.stdout).first { $0["type"] as? String == "sky" })
            let prns = (sky["satellites"] as? [[String: Any]] ?? []).compactMap { $0["prn"] as? Int }
            #expect(prns.sorted() == [23, 24, 25, 70, 71], "\(prns)")
            // And the table: 5 used of 7 seen.
            let table = SkyCommand.table(
                PhysicalRanges.check(
                    SkyView(
                        time: nil,
                        satellites: (23...29).flatMap { prn in
                            (0..<2).map { _ in
                                Satellite(
                                    prn: prn, constellation: .gps, satelliteID: prn, signalToNoise: 40,
                                    elevation: 30, azimuth: 100, used: prn <= 27)
                            }
                        }, dilution: DilutionOfPrecision())))
            #expect(table.contains("5 used of 7 seen"), "\(table)")
        }
    }
}

extension RealGPSD.LaneA {
    @Suite(
        "a device gpsd does not read: gpsd's own words",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason), .timeLimit(.minutes(2)))
    struct WrongDeviceTests {
        /// #36: `HOST:PORT:DEVICE` naming a device gpsd does not read was reported as "the
        /// receiver has no usable fix"; gpspipe prints gpsd's ERROR, "No such device as …".
        @Test("watch and watch --once end at once with gpsd's ERROR, exit 1")
        func noSuchDevice() async throws {
            let server = try await GPSFakeServer.started(
                log: Paths.fixtures.appendingPathComponent("drive-1hz-gp.nmea"), cycle: 0.05)
            defer { server.stop() }
            let target = "127.0.0.1:\(server.endpoint.port):/dev/pts/99"
            let config = try GPSLocBinary.makeConfigHome()
            #expect(
                try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config).status == 0)
            for extra in [["--once"], []] {
                let run = try await GPSLocBinary.run(["watch", target, "--json"] + extra, configHome: config)
                #expect(run.status == 1, "\(extra): \(run.stdout)")
                #expect(run.stdout.contains("No such device as /dev/pts/99"), "\(extra): \(run.stdout)")
                #expect(!run.stdout.contains("no usable fix"))
            }
        }
    }
}

/// A program that joins a shared gpsd connection while gpsd is down hears so at once (found on
/// gpslocd, whose late clients waited up to a minute for the next notice; the library's shared
/// connections had the same gap).
// (Five minutes, as elsewhere: the hang limits below bound a real hang; a one-minute limit failed
// once on a busy CI machine whose waiting tasks did not run for 90 s.)
@Suite("a late subscriber to a failing gpsd connection is told at once", .timeLimit(.minutes(5)))
struct LateSubscriberTests {
    @Test("the second source on an unreachable gpsd gets the problem, not only reconnect notices")
    func secondSourceHearsTheProblem() async throws {
        let endpoint = GPSDEndpoint(host: "127.0.0.1", port: try FreePortForTests.unused())
        func start() -> (GPSDLocationSource, Locked<[LocationSourceEvent]>, EventCounter) {
            let source = GPSDLocationSource(endpoint: endpoint, reconnect: ReconnectPolicy(), sky: false)
            let seen = Locked<[LocationSourceEvent]>([])
            let count = EventCounter()
            source.start { event in
                seen.withLock { $0.append(event) }
                count.increment()
            }
            return (source, seen, count)
        }
        @Sendable func problem(_ events: [LocationSourceEvent]) -> Bool {
            events.contains { if case .problem(let error, _) = $0 { error.reason == .gpsdUnreachable } else { false } }
        }
        let (first, firstSeen, firstCount) = start()
        defer { first.stop() }
        #expect(await firstCount.wait(hangLimit: 10) { _ in problem(firstSeen.withLock { $0 }) })
        let (second, secondSeen, secondCount) = start()
        defer { second.stop() }
        #expect(await secondCount.wait(hangLimit: 10) { _ in problem(secondSeen.withLock { $0 }) })
    }
}
