import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GNSSCore
@testable import GPSLocation
@testable import LocationCore

/// The selection rules on their own and under a manager fed from a list: no gpsd, so these also
/// run under Thread Sanitizer.
@Suite("receiver selection: the stage, and a manager fed fixes", .timeLimit(.minutes(5)))
struct ReceiverSelectionStageTests {
    let t0 = Date(timeIntervalSince1970: 1_781_510_400)

    /// A fix holds its device's number (`DeviceNames`), not the path: the path reads back as it
    /// was, equal paths make equal fixes, and the table is bounded.
    @Test("device paths: kept once, read back as given, equal fixes for equal paths; past the table's size, one name")
    func deviceNames() {
        let long = "/dev/serial/by-id/usb-u-blox_AG_-_www.u-blox.com_u-blox_GNSS_receiver-if00-\(UUID().uuidString)"
        var fix = Fix(mode: .threeDimensional, device: long)
        #expect(fix.device == long)
        #expect(fix == Fix(mode: .threeDimensional, device: String(long)), "the same path: the same fix")
        #expect(fix != Fix(mode: .threeDimensional, device: long + "x"))
        fix.device = nil
        #expect(fix.device == nil && fix == Fix(mode: .threeDimensional))
        #expect(GNSSDetails(fixMode: .twoDimensional, accuracyClass: .best, device: long).device == long)
        let table = DeviceNameTable(capacity: 3)
        let numbers = (0..<5).map { table.number("/dev/ttyUSB\($0)") }
        #expect(numbers == [1, 2, 3, 4, 4], "three kept; the rest share one number")
        #expect(table.number("/dev/ttyUSB1") == 2, "a kept path keeps its number")
        #expect(table.name(2) == "/dev/ttyUSB1" && table.name(0) == nil)
        #expect(table.name(4) == DeviceNameTable.overflowName)
    }

    @Test("the first usable receiver is followed; a similar one never takes over")
    func followFirst() {
        let stage = SelectionBox(ReceiverSelectionStage())
        #expect(
            stage.admits(device: "/dev/a", mode: .noFix, horizontalAccuracy: nil, clock: t0),
            "no fix yet: goes on to be diagnosed")
        #expect(stage.selected == nil)
        #expect(stage.admits(device: "/dev/b", mode: .threeDimensional, horizontalAccuracy: 4, clock: t0))
        #expect(stage.selected == "/dev/b")
        for second in 1...30 {
            let clock = t0 + Double(second)
            #expect(!stage.admits(device: "/dev/a", mode: .threeDimensional, horizontalAccuracy: 3, clock: clock))
            #expect(stage.admits(device: "/dev/b", mode: .threeDimensional, horizontalAccuracy: 4, clock: clock))
        }
        #expect(
            stage.admits(device: nil, mode: .twoDimensional, horizontalAccuracy: 9, clock: t0),
            "fixes naming no device always pass")
    }

    @Test("a gpsd naming ever new devices: at most 32 are remembered, and the followed one stays followed")
    func boundedDevices() {
        let stage = SelectionBox(ReceiverSelectionStage())
        #expect(stage.admits(device: "/dev/a", mode: .threeDimensional, horizontalAccuracy: 4, clock: t0))
        for number in 0..<100 {
            let clock = t0 + Double(number) / 10
            #expect(
                !stage.admits(device: "/dev/x\(number)", mode: .threeDimensional, horizontalAccuracy: 4, clock: clock))
            #expect(stage.admits(device: "/dev/a", mode: .threeDimensional, horizontalAccuracy: 4, clock: clock))
        }
        #expect(stage.deviceCount == ReceiverSelectionStage.maximumDevices)
        #expect(stage.selected == "/dev/a")
    }

    @Test("a receiver gpsd deactivates is said once, and never reported stale while it is gone")
    func deactivatedIsNotStale() async throws {
        // The engine's time is the test's: an hour without the receiver passes when the clock moves.
        let clock = ManualEngineClock()
        let source = ManualLocationSource(isLive: true)
        let manager = CLLocationManager(
            source: source, authorizer: grantedAuthorizer(.authorizedAlways), delegateQueue: nil, clock: clock)
        manager.maximumLocationAge = .infinity
        manager.timeJumpTolerance = .infinity
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.startUpdatingLocation()
        for second in 0..<5 {
            let fix = Fix(
                mode: .threeDimensional, time: clock.now.addingTimeInterval(Double(second - 4)), latitude: 51.45,
                longitude: -2.58, altitudeMSL: 40, errors: FixErrors(horizontal: 4, vertical: 6),
                device: "/dev/ttyACM0")
            #expect(source.send(.fix(fix)))
        }
        #expect(await delegate.waitForLocations(5))
        #expect(source.send(.device(DeviceEvent(path: "/dev/ttyACM0", driver: nil, activated: false))))
        #expect(await delegate.wait { $0.receivers.contains { !$0.activated } })
        for _ in 0..<36 {
            clock.advance(by: 100)
            await settled(manager)
        }
        #expect(
            !delegate.errors.contains { $0.reason == .stale }, "\(delegate.errors.map(\.message))")
        #expect(
            delegate.errors.count { $0.message.contains("deactivated the receiver /dev/ttyACM0") } == 1,
            "\(delegate.errors.map(\.message))")
        manager.stopUpdatingLocation()
    }

    @Test("3D beats 2D at once; twice as accurate takes over after five fixes in a row")
    func takeOver() {
        let stage = SelectionBox(ReceiverSelectionStage())
        #expect(stage.admits(device: "/dev/a", mode: .twoDimensional, horizontalAccuracy: 5, clock: t0))
        #expect(
            stage.admits(device: "/dev/b", mode: .threeDimensional, horizontalAccuracy: 8, clock: t0 + 1),
            "higher mode"
        )
        #expect(stage.selected == "/dev/b")
        var clock = t0 + 2
        // One fix that is not twice as good starts the count again.
        #expect(!stage.admits(device: "/dev/a", mode: .threeDimensional, horizontalAccuracy: 3.9, clock: clock))
        #expect(!stage.admits(device: "/dev/a", mode: .threeDimensional, horizontalAccuracy: 4.1, clock: clock))
        for index in 1...5 {
            clock += 1
            #expect(
                stage.admits(device: "/dev/b", mode: .threeDimensional, horizontalAccuracy: 8, clock: clock)
                    == (index < 5 || stage.selected == "/dev/b"))
            let admitted = stage.admits(
                device: "/dev/a", mode: .threeDimensional, horizontalAccuracy: 3.9, clock: clock)
            #expect(admitted == (index == 5), "fix \(index)")
        }
        #expect(stage.selected == "/dev/a")
    }

    @Test("a receiver without a usable fix for lossTimeout is given up")
    func lost() {
        let stage = SelectionBox(ReceiverSelectionStage(lossTimeout: 3))
        #expect(stage.admits(device: "/dev/a", mode: .threeDimensional, horizontalAccuracy: 2, clock: t0))
        #expect(
            stage.admits(device: "/dev/a", mode: .noFix, horizontalAccuracy: nil, clock: t0 + 1),
            "the followed receiver's no-fix goes on (to the staleness check)")
        #expect(
            !stage.admits(device: "/dev/b", mode: .twoDimensional, horizontalAccuracy: 20, clock: t0 + 2),
            "a dropout is not a loss yet")
        #expect(stage.admits(device: "/dev/b", mode: .twoDimensional, horizontalAccuracy: 20, clock: t0 + 3))
        #expect(stage.selected == "/dev/b")
    }

    @Test("deactivation hands over to the next receiver with a fix; a pinned path never changes")
    func deactivation() {
        let stage = SelectionBox(ReceiverSelectionStage())
        #expect(stage.admits(device: "/dev/a", mode: .threeDimensional, horizontalAccuracy: 2, clock: t0))
        #expect(
            !stage.deviceChanged(DeviceEvent(path: "/dev/b", driver: nil, activated: false)), "not the followed one"
        )
        #expect(stage.deviceChanged(DeviceEvent(path: "/dev/a", driver: nil, activated: false)))
        #expect(stage.selected == nil)
        #expect(stage.admits(device: "/dev/b", mode: .twoDimensional, horizontalAccuracy: 30, clock: t0 + 0.1))

        let pinned = SelectionBox(ReceiverSelectionStage(selection: .path("/dev/a")))
        #expect(pinned.takeMissingPin() == nil)
        #expect(!pinned.admits(device: "/dev/b", mode: .threeDimensional, horizontalAccuracy: 1, clock: t0 - 1))
        let missing = pinned.takeMissingPin()
        #expect(
            missing?.pinned == "/dev/a" && missing?.reporting == "/dev/b", "told once that the pinned one is absent"
        )
        #expect(pinned.takeMissingPin() == nil)
        #expect(!pinned.admits(device: "/dev/b", mode: .threeDimensional, horizontalAccuracy: 1, clock: t0 - 0.5))
        #expect(pinned.takeMissingPin() == nil, "only once")
        #expect(!pinned.admits(device: "/dev/b", mode: .threeDimensional, horizontalAccuracy: 1, clock: t0))
        #expect(pinned.admits(device: "/dev/a", mode: .twoDimensional, horizontalAccuracy: 50, clock: t0))
        #expect(pinned.deviceChanged(DeviceEvent(path: "/dev/a", driver: nil, activated: false)))
        #expect(!pinned.admits(device: "/dev/b", mode: .threeDimensional, horizontalAccuracy: 1, clock: t0 + 10))
    }

    @Test("a manager pinned to a receiver gpsd does not have says so once, not 'still searching'")
    func pinnedToAbsentReceiver() async throws {
        let fixes = try FixtureFixes.load("clean-1hz-multi").map { fix -> Fix in
            var fix = fix
            fix.device = "/dev/ttyACM0"
            return fix
        }
        let source = FixListSource(fixes, reportsEnd: false)
        let manager = CLLocationManager(source: source, authorizer: grantedAuthorizer())
        manager.receiverSelection = .path("/dev/ttyUSB9")
        let delegate = RecordingDelegate()
        manager.delegate = delegate
        manager.startUpdatingLocation()
        // Every fix taken in, then every callback they made run: what the delegate has is all.
        #expect(await source.wait(timeout: 10) { $0.sent == $0.count })
        await delegateQueueFlushed(manager)
        manager.stopUpdatingLocation()
        #expect(delegate.locationCount == 0)
        #expect(delegate.errors.count == 1, "\(delegate.errors.map(\.message))")
        #expect(
            delegate.errors.first?.message.contains(
                "follows only /dev/ttyUSB9, but gpsd reports fixes from /dev/ttyACM0") == true)
    }
}

extension RealGPSD.LaneC {
    @Suite("receivers: selection among several behind a real gpsd, removal and return")
    struct ReceiverSelectionTests {

        static let gpsdctlAvailable =
            Conditions.gpsdAvailable && FileManager.default.isExecutableFile(atPath: GPSDServer.gpsdctlExecutable)

        /// A simulated receiver on a pseudo-terminal playing a recording at ten times its rate, once
        /// (a loop would step its time back). "clean" is ten minutes of 1 Hz multi-GNSS from
        /// `nmea-sim` (a minute of playing), so a slow test run never reaches its end.
        static func receiver(_ fixture: String) async throws -> PseudoTerminalReceiver {
            let text: String
            if fixture == "clean" {
                let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "receiver-clean-\(UUID().uuidString).nmea")
                defer { try? FileManager.default.removeItem(at: url) }
                let simulator = Paths.packageRoot.appendingPathComponent(".build/debug/nmea-sim").path
                let simulated = try await runProgram(
                    simulator,
                    [
                        "--rate", "1", "--duration", "600", "--talkers", "multi", "--scenario", "clean", "--seed", "3",
                        "--output", url.path,
                    ])
                guard simulated.status == 0 else { throw PseudoTerminalError.emptyRecording }
                text = try String(contentsOf: url, encoding: .utf8)
            } else {
                text = try String(contentsOf: Paths.fixtures.appendingPathComponent(fixture), encoding: .utf8)
            }
            let receiver = try PseudoTerminalReceiver(recording: text, interval: 0.1)
            receiver.start(loop: false)
            return receiver
        }

        @Test(
            "gpsdctl remove and add during a replay: reported both ways, updates resume",
            .enabled(if: gpsdctlAvailable, Conditions.gpsdMissingReason))
        func removeAndAdd() async throws {
            let setup = try await GPSDWithReceivers(["clean"])
            defer { setup.stop() }
            let (server, receiver) = (setup.server, setup.receivers[0])
            let (manager, delegate) = Self.manager(server.endpoint)
            defer { manager.stopUpdatingLocation() }
            #expect(await delegate.wait(timeout: 10) { $0.locationCount >= 5 })
            #expect(manager.followedReceiver == receiver.path)

            let removed = Date()
            #expect(try server.gpsdctl("remove", device: receiver.path) == 0)
            #expect(
                await delegate.wait(timeout: 2) { $0.receiverEvents.contains { !$0.activated } },
                "deactivation reported")
            #expect(
                await delegate.wait(timeout: 2) {
                    $0.errors.contains { $0.reason == .receiverDeactivated && $0.message.contains(receiver.path) }
                })
            let lossDelay = (delegate.firstDeactivation ?? Date()).timeIntervalSince(removed)
            let beforeRemoval = delegate.locationArrivals.filter {
                $0.arrival <= (delegate.firstDeactivation ?? removed)
            }
            .count

            let added = Date()
            #expect(try server.gpsdctl("add", device: receiver.path) == 0)
            #expect(
                await delegate.wait(timeout: 3) { $0.receiverEvents.last?.activated == true },
                "reactivation reported: \(delegate.receiverEvents)")
            #expect(
                await delegate.wait(timeout: 3) { $0.locationCount >= beforeRemoval + 5 }, "locations resume")
            // The event log, not a pause, proves the gap: no location arrived between the
            // deactivation and the reactivation, and no staleness report was added to the removal's.
            let reactivated = try #require(delegate.receiverArrivals.last { $0.event.activated }?.arrival)
            let whileOut = delegate.locationArrivals.filter {
                $0.arrival > (delegate.firstDeactivation ?? removed) && $0.arrival < reactivated
            }
            #expect(whileOut.isEmpty, "nothing while the receiver is out: \(whileOut.count)")
            #expect(
                !delegate.errors.contains { $0.reason == .stale },
                "the removal was reported once, not again as staleness")
            let whileRemoved = beforeRemoval
            let resumeDelay = (delegate.arrival(of: whileRemoved) ?? Date()).timeIntervalSince(added)
            print(
                String(
                    format:
                        "receivers: deactivation reported %.3f s after gpsdctl remove; locations resumed %.3f s after gpsdctl add",
                    lossDelay, resumeDelay))
            #expect(lossDelay < 2 && resumeDelay < 2)
            let times = delegate.times
            #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "no duplicates or reversals")
            #expect(delegate.receiverEvents.map(\.path).allSatisfy { $0 == receiver.path })
        }

        @Test(
            "two receivers: one is followed, never interleaved; removing it hands over to the other",
            .enabled(if: gpsdctlAvailable, Conditions.gpsdMissingReason))
        func twoReceivers() async throws {
            // The clean recording has a 3D fix from its first cycles; the drive starts with 8 s of no fix.
            let setup = try await GPSDWithReceivers(["clean", "drive-1hz-gp.nmea"])
            defer { setup.stop() }
            let (server, clean, drive) = (setup.server, setup.receivers[0], setup.receivers[1])
            let (manager, delegate) = Self.manager(server.endpoint)
            defer { manager.stopUpdatingLocation() }
            #expect(await delegate.wait(timeout: 10) { $0.locationCount >= 20 })
            // Usually the clean one (a fix from its first cycles, the drive's after 8 s); on a
            // loaded machine the pseudo-terminals may start far enough apart that the drive's
            // first fix comes first. Either way: one receiver, never both.
            let first = try #require(manager.followedReceiver)
            let other = first == clean.path ? drive.path : clean.path
            #expect([clean.path, drive.path].contains(first))
            #expect(Set(delegate.devices) == [first], "one receiver at a time")
            let before = delegate.locationCount
            #expect(try server.gpsdctl("remove", device: first) == 0)
            #expect(
                await delegate.wait(timeout: 5) { $0.locationCount >= before + 10 },
                "the other receiver takes over")
            #expect(manager.followedReceiver == other)
            // The device sequence switches exactly once.
            let devices = delegate.devices
            let switches = zip(devices, devices.dropFirst()).count { $0 != $1 }
            #expect(switches == 1 && devices.last == other, "\(devices)")
            let times = delegate.times
            #expect(
                zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "no duplicates or reversals across the switch")
        }

        @Test(
            "gpsloc watch: an unplugged receiver is a device line and one error; plugged back, locations again",
            .enabled(
                if: gpsdctlAvailable && FileManager.default.isExecutableFile(atPath: GPSLocBinary.path),
                Conditions.gpsdMissingReason))
        func watchSeesRemoval() async throws {
            let setup = try await GPSDWithReceivers(["clean"])
            defer { setup.stop() }
            let (server, receiver) = (setup.server, setup.receivers[0])
            let config = try GPSLocBinary.makeConfigHome()
            #expect(
                try await GPSLocBinary.run(["auth", "grant", "gpsloc", "--always"], configHome: config).status == 0)
            let (process, reader) = try GPSLocBinary.launch(
                ["watch", "--json", "--port", String(server.endpoint.port), "--max-age", "1e9"], configHome: config)
            let locations: @Sendable ([(time: Date, text: String)]) -> Int = { lines in
                lines.count { $0.text.contains("\"type\":\"location\"") }
            }
            #expect(await reader.waitFor(timeout: 10) { locations($0) >= 5 })
            #expect(try server.gpsdctl("remove", device: receiver.path) == 0)
            #expect(await reader.waitFor(timeout: 30) { $0.contains { $0.text.contains("\"activated\":false") } })
            // (That no staleness report follows a deactivation, however long the receiver stays
            // away, is shown on the engine's clock in `deactivatedIsNotStale`.)
            #expect(try server.gpsdctl("add", device: receiver.path) == 0)
            let before = locations(reader.snapshot)
            #expect(
                await reader.waitFor(timeout: 5) { locations($0) >= before + 5 }, "locations again after gpsdctl add")
            process.terminate()
            await process.exited()
            let lines = GPSLocBinary.jsonLines(await reader.finish().map(\.text).joined(separator: "\n"))
            let errors = lines.filter { $0["type"] as? String == "error" }.compactMap { $0["message"] as? String }
            #expect(
                errors.count == 1 && errors.first?.contains("gpsd deactivated the receiver \(receiver.path)") == true,
                "\(errors)")
            let devices = lines.filter { $0["type"] as? String == "device" }.compactMap { $0["activated"] as? Bool }
            #expect(devices.first == true && devices.contains(false) && devices.last == true, "\(devices)")
        }

        @Test(
            "gpsd with no receiver at all: said at once, with how to add one, and no misleading 'still searching'",
            .enabled(if: gpsdctlAvailable, Conditions.gpsdMissingReason))
        func gpsdWithoutReceiver() async throws {
            let setup = try await GPSDWithReceivers([])
            defer { setup.stop() }
            let server = setup.server
            // The engine's time is the test's: its "no fix yet" deadline passes when the clock is moved.
            let clock = ManualEngineClock()
            let (manager, delegate) = Self.manager(server.endpoint, clock: clock)
            defer { manager.stopUpdatingLocation() }
            #expect(await delegate.wait(timeout: 30) { !$0.errors.isEmpty })
            let first = try #require(delegate.errors.first)
            #expect(
                first.code == .locationUnknown && (first.underlyingError as? GPSDError)?.code == .noDevice, "\(first)")
            #expect(first.message.contains("gpsdctl add"))
            clock.advance(by: 3.5)  // past the 3 s "no fix yet" deadline
            await settled(manager)
            #expect(
                !delegate.errors.contains { $0.message.contains("still searching") },
                "\(delegate.errors.map(\.message))")
        }

        static func manager(_ endpoint: GPSDEndpoint, clock: (any EngineClock)? = nil) -> (
            CLLocationManager, RecordingDelegate
        ) {
            let source = GPSDLocationSource(endpoint: endpoint, noDataTimeout: .seconds(30))
            let authorizer = grantedAuthorizer(.authorizedAlways)
            let manager =
                clock.map { CLLocationManager(source: source, authorizer: authorizer, delegateQueue: nil, clock: $0) }
                ?? CLLocationManager(source: source, authorizer: authorizer)
            manager.maximumLocationAge = 1e9  // the recordings are from 2026-06
            manager.maximumBatch = .max
            let delegate = RecordingDelegate()
            manager.delegate = delegate
            manager.startUpdatingLocation()
            return (manager, delegate)
        }
    }
}

enum ChildProcessForTests {
    /// Runs a program to its end, blocking the calling thread: only for a short clean-up in a
    /// `defer` (which cannot await), such as `pkill`; elsewhere `runProgram` awaits its exit.
    static func runBlocking(_ executable: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Simulated receivers on pseudo-terminals (`ReceiverSelectionTests.receiver`) and a real gpsd
/// reading them, listening; `stop()` ends both.
/// One receiver playing a recording on a pseudo-terminal and a gpsd reading it, started as
/// systemd starts gpsd: to GPSLocation a receiver, not a replay (unlike gpsfake's gpsd).
final class GPSDOnPseudoTerminal {
    let receiver: PseudoTerminalReceiver
    let server: GPSDServer

    init(recording text: String, interval: Double, loop: Bool) throws {
        receiver = try PseudoTerminalReceiver(recording: text, interval: interval)
        receiver.start(loop: loop)
        do {
            server = try GPSDServer(devices: [receiver.path])
            try server.waitUntilListening()
        } catch {
            receiver.stop()
            throw error
        }
    }

    /// A fixture of `fixtures/`, by file name.
    convenience init(fixture: String, interval: Double, loop: Bool) throws {
        let text = try String(contentsOf: Paths.fixtures.appendingPathComponent(fixture), encoding: .utf8)
        try self.init(recording: text, interval: interval, loop: loop)
    }

    func stop() {
        server.stop()
        receiver.stop()
    }
}

final class GPSDWithReceivers {
    let receivers: [PseudoTerminalReceiver]
    let server: GPSDServer

    init(_ recordings: [String]) async throws {
        var made: [PseudoTerminalReceiver] = []
        for recording in recordings { made.append(try await RealGPSD.LaneC.ReceiverSelectionTests.receiver(recording)) }
        receivers = made
        server = try GPSDServer(devices: receivers.map(\.path))
        try server.waitUntilListening()
    }

    func stop() {
        server.stop()
        for receiver in receivers { receiver.stop() }
    }
}

/// The stage behind a reference, so `#expect` can call its mutating methods.
final class SelectionBox {
    var stage: ReceiverSelectionStage
    init(_ stage: ReceiverSelectionStage) { self.stage = stage }
    var selected: String? { stage.selected }
    var deviceCount: Int { stage.deviceCount }
    func admits(device: String?, mode: FixMode, horizontalAccuracy: Double?, clock: Date) -> Bool {
        stage.admits(device: device, mode: mode, horizontalAccuracy: horizontalAccuracy, clock: clock)
    }
    func deviceChanged(_ event: DeviceEvent) -> Bool { stage.deviceChanged(event) }
    func takeMissingPin() -> (pinned: String, reporting: String)? { stage.takeMissingPin() }
}
