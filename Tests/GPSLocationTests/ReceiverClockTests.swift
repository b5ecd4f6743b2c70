import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #31: live freshness by the receiver's clock and the monotonic clock, never the system clock.
/// A box whose clock is wrong (an offline board with no real-time clock) and gpsd replaying an
/// old recording still get locations, and are told once that the clocks disagree.
@Suite("the receiver's clock, not the system clock", .timeLimit(.minutes(5)))
struct ReceiverClockTests {
    typealias Engine = LocationEngineTests

    /// The ages `clock` gives fixes dated `start + time`, arriving at `arrival` (a mutating call
    /// is made outside `#expect`, which may evaluate its operands more than once).
    static func ages(_ clock: inout ReceiverClock, _ fixes: [(time: Double, arrival: Double)]) -> [Double] {
        fixes.map { clock.age(of: Engine.start + $0.time, arrival: $0.arrival, maximumAge: 10) }
    }

    @Test("the stage: fresh while the receiver's clock advances with the monotonic clock")
    func stage() {
        var clock = ReceiverClock()
        let fresh = Self.ages(&clock, [(0, 100), (1, 101), (2, 102.3)])
        #expect(fresh[0] == 0 && fresh[1] == 0, "the first fix is the reference")
        #expect(abs(fresh[2] - 0.3) < 1e-6, "a report 0.3 s late")
        // The clock now: the last fresh fix's time plus the monotonic time since it arrived.
        #expect(abs(clock.now(arrival: 105)!.timeIntervalSince(Engine.start + 4.7)) < 1e-6)
        // A receiver repeating its last fix: the fix's time stands still while time passes, and
        // it is never taken for a new timeline (it does not advance with the monotonic clock).
        let repeated = Self.ages(&clock, [(2, 113), (2, 114), (2, 115), (2, 116)])
        #expect(repeated.map { ($0 * 10).rounded() / 10 } == [10.7, 11.7, 12.7, 13.7], "\(repeated)")
    }

    @Test("the stage: reports held back and handed on at once stay stale; a stepped clock is followed")
    func heldBackAndStepped() {
        var clock = ReceiverClock()
        _ = Self.ages(&clock, [(0, 0)])
        // A suspended gpsd resumes 30 s later and hands on what it held, all at once.
        let late = Self.ages(&clock, (1...5).map { (Double($0), 30) })
        #expect(late.allSatisfy { $0 > 10 }, "\(late)")
        // The receiver's clock set from the satellites an hour back: three fixes in a row on the
        // new timeline, advancing with the monotonic clock, and it is followed.
        let stepped = Self.ages(&clock, (40...43).map { (-3600 + Double($0), Double($0)) })
        #expect(stepped[0] > 10 && stepped[1] > 10, "\(stepped)")
        #expect(stepped[2] == 0 && stepped[3] == 0, "\(stepped)")
    }

    /// The engine, live, with the system clock `offset` seconds from the receiver's.
    static func run(systemClockOffset offset: TimeInterval, fixes: Int = 5) -> [LocationEngine.Action] {
        var engine = Engine.engine()
        var actions = engine.start(.continuous, now: Engine.start + offset)
        for second in 0..<fixes {
            let time = Double(second)
            actions += engine.handle(
                .fix(Engine.fix(at: time, latitude: 51.45 + time * 1e-4)), now: Engine.start + offset + time + 0.2,
                uptime: 1000 + time + 0.2)
        }
        return actions
    }

    static func clockNotes(_ actions: [LocationEngine.Action]) -> [String] {
        actions.compactMap {
            $0.diagnostic.flatMap { $0.code == "systemClockOffset" ? $0.message : nil }
        }
    }

    @Test(
        "a system clock 15 s fast, 2 h fast, or in 2020: every location delivered, one diagnostic naming the offset",
        arguments: [15.0, 7_200, Date(timeIntervalSince1970: 1_577_836_800).timeIntervalSince(Engine.start)])
    func wrongSystemClock(offset: TimeInterval) {
        let actions = Self.run(systemClockOffset: offset)
        #expect(Engine.delivered(actions).count == 5)
        #expect(Engine.errors(actions).isEmpty)
        let notes = Self.clockNotes(actions)
        #expect(notes.count == 1, "\(notes)")
        let expected = offset > 0 ? "ahead of" : "behind"
        #expect(notes.first?.contains("the system clock is") == true && notes.first?.contains(expected) == true)
        #expect(notes.first?.contains("chrony") == true, "it names the fix")
    }

    @Test("a system clock that agrees with the receiver: no diagnostic")
    func rightSystemClock() {
        let actions = Self.run(systemClockOffset: 0)
        #expect(Engine.delivered(actions).count == 5)
        #expect(Self.clockNotes(actions).isEmpty)
    }

    @Test("a receiver that keeps repeating an old fix is stale: not delivered, and the staleness report says why")
    func repeatedFixIsStale() {
        var engine = Engine.engine()
        let now = Engine.start
        var actions = engine.start(.continuous, now: now)
        actions += engine.handle(.fix(Engine.fix(at: 0)), now: now, uptime: 1000)
        #expect(Engine.delivered(actions).isEmpty, "its epoch is open (`EpochStage`)")
        // The same fix, again and again, as a confused receiver sends it: by its own time it is
        // older every second. Its epoch goes once its time has been repeated for more than a
        // second (a stuck receiver), and never again.
        var later: [LocationEngine.Action] = []
        for second in 1...15 {
            later += engine.handle(
                .fix(Engine.fix(at: 0)), now: now + Double(second), uptime: 1000 + Double(second))
        }
        later += engine.timerFired(.staleness, now: now + 15)
        #expect(Engine.delivered(later).map(\.timestamp) == [now])
        #expect(Engine.errors(later).count == 1)
        #expect(Engine.errors(later).first?.reason == .stale)
    }
}

/// Debian's libfaketime, preloaded into gpsloc itself (the `faketime` command forks, and a
/// signal to it would not reach gpsloc).
private let libfaketime = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"

extension RealGPSD.LaneB {
    /// `gpsloc watch` on a box whose clock is wrong, as an offline board without a real-time
    /// clock has it: libfaketime (Debian's faketime) moves gpsloc's system clock 2 h ahead and
    /// back to 2020, against a real gpsd reading a receiver on a pseudo-terminal.
    @Suite(
        "gpsloc watch with a wrong system clock",
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason),
        .enabled(if: FileManager.default.fileExists(atPath: libfaketime), "faketime is not installed"),
        .timeLimit(.minutes(3)))
    struct WrongSystemClockTests {
        @Test(
            "2 h ahead and in 2020: locations flow, and the clock is named once",
            arguments: ["+2h", "2020-01-01 00:00:00"])
        func watchWithWrongClock(clock: String) async throws {
            let config = try GPSLocBinary.makeConfigHome()
            #expect(
                try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config).status == 0)
            let receiver = try GPSDOnPseudoTerminal(fixture: "clean-1hz-multi.nmea", interval: 0.05, loop: true)
            defer { receiver.stop() }
            // "@…" starts the clock at that moment and lets it run; the monotonic clock stays real.
            let (process, reader) = try GPSLocBinary.launch(
                ["watch", "--json", "--port", String(receiver.server.endpoint.port)], configHome: config,
                extraEnvironment: [
                    "LD_PRELOAD": libfaketime, "FAKETIME": clock.hasPrefix("+") ? clock : "@" + clock,
                    "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                ])
            defer { process.terminate() }
            #expect(
                await reader.waitFor(timeout: 30) { lines in
                    lines.filter { $0.text.contains(#""type":"location""#) }.count >= 5
                }, "\(reader.snapshot.map(\.text).prefix(12))")
            process.terminate()
            await process.exited()
            let lines = GPSLocBinary.jsonLines(await reader.finish().map(\.text).joined(separator: "\n"))
            #expect(!lines.contains { $0["code"] as? String == "stale" || $0["code"] as? String == "future" })
            let notes = lines.filter { $0["code"] as? String == "systemClockOffset" }
            #expect(notes.count == 1, "\(notes)")
            let message = notes.first?["message"] as? String ?? ""
            #expect(message.contains("the system clock is") && message.contains("chrony"), "\(message)")
            #expect(message.contains(clock.hasPrefix("+") ? "ahead of" : "behind"), "\(message)")
        }
    }
}

/// The engines' timers count in the monotonic clock, so a wrong system clock moves none of them.
/// libfaketime moves gpsloc's system clock, monotonic left alone, as the suite above does: a
/// timer descriptor armed with an absolute deadline was moved by the offset all the same (the
/// shim adjusts `timerfd_settime`) — +2 h on a machine up less than 2 h crashed gpsloc (EINVAL),
/// −3 d and 2020 put the deadline days or years late, so the request below never timed out.
/// Here `requestLocation()`'s timeout is the timer that must fire, on time: gpsd is unreachable.
@Suite(
    "the engines' timers with a wrong system clock",
    .enabled(if: FileManager.default.isExecutableFile(atPath: GPSLocBinary.path), "build gpsloc first"),
    .enabled(if: FileManager.default.fileExists(atPath: libfaketime), "faketime is not installed"),
    .timeLimit(.minutes(3)))
struct WrongClockTimerTests {
    @Test(
        "watch --once's 1 s timeout fires after 1 s, whatever the system clock says",
        arguments: ["+2h", "-3d", "@2020-01-01 00:00:00"])
    func timeoutFires(clock: String) async throws {
        let config = try GPSLocBinary.makeConfigHome()
        _ = try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config)
        var environment = GPSLocBinary.environment(configHome: config)
        environment["LD_PRELOAD"] = libfaketime
        environment["FAKETIME"] = clock
        environment["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        // Through sh, as `launch` does: a Swift program started with the shim preloaded by a
        // parent without it gets no arguments. timeout (its timer relative, which the shim leaves
        // alone) ends a gpsloc whose timer never fires, with status 124, before the suite's limit.
        let result = try await runProgram(
            "/bin/sh",
            [
                "-c", #"exec timeout 30 "$0" "$@""#, GPSLocBinary.path, "watch", "--once", "--json", "--port",
                String(try FreePort.find()), "--timeout", "1",
            ], environment: environment)
        #expect(result.status == 1, "status \(result.status): \(result.stderr.prefix(400))")
        let errors = GPSLocBinary.jsonLines(result.stdout).filter { $0["type"] as? String == "error" }
            .compactMap { $0["message"] as? String }
        #expect(errors.last?.hasPrefix("no location within 1 s") == true, "\(errors)")
        // Not before its second, and long before the 30 s that would mean it never fired.
        #expect(result.seconds >= 1 && result.seconds < 25, "\(result.seconds) s")
    }
}
