import Foundation
import GPSLocationTesting
import TestSupport
import Testing

@testable import GPSLocation
@testable import LocationCore

/// The engine alone: every "must" and "must not" driven with a manual clock, no sleeping.
@Suite("LocationEngine: the one state machine", .timeLimit(.minutes(5)))
struct LocationEngineTests {
    static let start = Date(timeIntervalSince1970: 1_781_510_400)

    static func fix(at seconds: Double, accuracy: Double = 3, latitude: Double = 51.45) -> Fix {
        Fix(
            mode: .threeDimensional, time: start.addingTimeInterval(seconds), latitude: latitude, longitude: -2.58,
            altitudeHAE: 90, altitudeMSL: 40,
            errors: FixErrors(longitude: accuracy * 1.96, latitude: 0.001, vertical: 6, speed: 1, course: 5),
            speed: 10, course: 45)
    }

    static func engine(
        _ status: CLAuthorizationStatus = .authorizedAlways, isLive: Bool = true,
        configure: (inout LocationEngine.Configuration) -> Void = { _ in }
    ) -> LocationEngine {
        var configuration = LocationEngine.Configuration()
        configure(&configuration)
        return LocationEngine(
            configuration: configuration, authorization: AuthorizationState(appID: "engine-test", status: status),
            isLive: isLive)
    }

    static func delivered(_ actions: [LocationEngine.Action]) -> [LocationValue] {
        actions.compactMap(\.delivered)
    }
    static func errors(_ actions: [LocationEngine.Action]) -> [CLError] {
        actions.compactMap(\.failure)
    }
    static func armed(_ actions: [LocationEngine.Action]) -> [(LocationEngine.Timer, TimeInterval)] {
        actions.compactMap { if case .arm(let timer, let seconds) = $0 { (timer, seconds) } else { nil } }
    }
    static func stopsSource(_ actions: [LocationEngine.Action]) -> Bool {
        actions.contains { if case .stopSource = $0 { true } else { false } }
    }

    /// gpsd 3.22 sends a cycle's TPV before the receiver's GST of the same time: the engine (the
    /// one place a fix waits for its estimate) learns that from the first cycle — whose epoch is
    /// still open then (`EpochStage`) and takes the GST in place — and from then on holds each
    /// fix for its GST, never past the next report.
    @Test("a GST after its fix: learnt once, then each fix waits for its own estimate")
    func estimateAfterFix() {
        var engine = Self.engine(isLive: false)
        _ = engine.start(.continuous, now: Self.start)
        func gst(at seconds: Double, sigma: Double) -> LocationSourceEvent {
            .errorEstimate(
                ReceiverErrorEstimate(
                    time: Self.start.addingTimeInterval(seconds), latitude: sigma, longitude: sigma, altitude: sigma))
        }
        func accuracy(sigma: Double, at seconds: Double) -> Double? {
            AccuracyStage.horizontalAccuracy(
                ReceiverErrorEstimate(time: nil, latitude: sigma, longitude: sigma, altitude: sigma)
                    .applied(to: Self.fix(at: seconds).errors, threeDimensional: true))
        }
        // Cycle 0: its epoch stays open (nothing learned yet); its GST, arriving after the fix,
        // completes it and teaches the engine that this receiver's GST follows.
        #expect(Self.delivered(engine.handle(.fix(Self.fix(at: 0)), now: Self.start)).isEmpty)
        #expect(Self.delivered(engine.handle(gst(at: 0, sigma: 1), now: Self.start)).isEmpty)
        // Cycle 1 begins: cycle 0 goes, with its GST; cycle 1's fix is held for its own.
        let first = Self.delivered(engine.handle(.fix(Self.fix(at: 1)), now: Self.start))
        #expect(first.map(\.timestamp) == [Self.start])
        #expect(first.first?.horizontalAccuracy == accuracy(sigma: 1, at: 0))
        let paired = Self.delivered(engine.handle(gst(at: 1, sigma: 2), now: Self.start))
        #expect(paired.count == 1)
        #expect(paired.first?.horizontalAccuracy == accuracy(sigma: 2, at: 1))
        #expect(paired.first?.horizontalAccuracy != first.first?.horizontalAccuracy)
        // Cycle 2: no GST; a sky report is part of the cycle and lets nothing go; the next fix
        // lets it through as it is.
        #expect(Self.delivered(engine.handle(.fix(Self.fix(at: 2)), now: Self.start)).isEmpty)
        let sky = SkyView(time: Self.start.addingTimeInterval(2), satellites: [], dilution: DilutionOfPrecision())
        #expect(Self.delivered(engine.handle(.sky(sky), now: Self.start)).isEmpty)
        let released = Self.delivered(engine.handle(.fix(Self.fix(at: 3)), now: Self.start))
        #expect(released.map(\.timestamp) == [Self.start.addingTimeInterval(2)])
        // Cycle 3: a GST of another time does not complete it; the next fix does release it.
        #expect(Self.delivered(engine.handle(gst(at: 2.5, sigma: 9), now: Self.start)).isEmpty)
        let next = Self.delivered(engine.handle(.fix(Self.fix(at: 4)), now: Self.start))
        #expect(next.map(\.timestamp) == [Self.start.addingTimeInterval(3)])
        // Cycle 4: the receiver is unplugged right after its fix: the fix comes first, then the news.
        let unplugged = engine.handle(
            .device(DeviceEvent(path: "/dev/ttyACM0", driver: nil, activated: false)), now: Self.start)
        #expect(Self.delivered(unplugged).map(\.timestamp) == [Self.start.addingTimeInterval(4)])
        #expect(unplugged.first?.delivered != nil, "the held fix before the receiver event")
    }

    /// Found by the newcomer walk-through: gpsfake playing a June recording in December gave
    /// "no usable position fix yet — the receiver is still searching for satellites" while gpsd
    /// reported a 3D fix every second. The report names why the fixes that do arrive are refused.
    @Test("staleness while fixes arrive and are refused: the report names the refusal, not the sky")
    func stalenessNamesTheRefusal() {
        var engine = Self.engine()
        let now = Self.start.addingTimeInterval(170 * 86_400)
        var actions = engine.start(.continuous, now: now)
        for second in 0..<5 {
            let handled = engine.handle(.fix(Self.fix(at: Double(second))), now: now + Double(second))
            #expect(Self.delivered(handled).isEmpty)
            actions += handled
            if second == 3 { actions += engine.timerFired(.staleness, now: now + 3) }
        }
        let report = Self.errors(actions)
        #expect(report.count == 1)
        let message = report.first?.localizedDescription ?? ""
        #expect(message.contains("fixes arrive but are not used") && message.contains("170 days ago"), "\(message)")
        #expect(!message.contains("searching for satellites"), "\(message)")
    }

    @Test(
        "staleness: the timer stays half a timeout ahead of the fixes, so it does not fire while they flow; reports once"
    )
    func stalenessTimer() {
        var engine = Self.engine()
        let t0 = Self.start
        let started = engine.start(.continuous, now: t0)
        #expect(Self.armed(started).map(\.0) == [.staleness] && Self.armed(started).first?.1 == 3)
        // A 1 Hz receiver (a 3 s timeout): fixes move the deadline later; it is re-armed only when
        // it moved half a timeout or more — at the fix of t0 + 2, for t0 + 5. (The first epoch goes
        // when the second begins: one report an epoch is learnt from it.)
        for second in 0..<4 {
            let actions = engine.handle(.fix(Self.fix(at: Double(second))), now: t0 + Double(second))
            #expect(Self.delivered(actions).count == [0, 2, 1, 1][second])
            if second == 2 {
                #expect(Self.armed(actions).count == 1 && abs((Self.armed(actions).first?.1 ?? 0) - 3) < 1e-9)
            } else {
                #expect(Self.armed(actions).isEmpty, "fix \(second) re-armed the timer")
            }
        }
        // The fixes stop after t0 + 3: the timer fires at t0 + 5, early for that fix's deadline
        // (t0 + 6), and is re-armed for it.
        let early = engine.timerFired(.staleness, now: t0 + 5)
        #expect(Self.errors(early).isEmpty)
        #expect(Self.armed(early).count == 1 && abs((Self.armed(early).first?.1 ?? 0) - 1) < 1e-9)
        let due = engine.timerFired(.staleness, now: t0 + 6)
        #expect(Self.errors(due).map(\.reason) == [.stale])
        #expect(engine.isStale)
        #expect(Self.errors(engine.timerFired(.staleness, now: t0 + 10)).isEmpty, "reported once per stretch")
        // The next fix clears it silently.
        let back = engine.handle(.fix(Self.fix(at: 11)), now: t0 + 11)
        #expect(Self.delivered(back).count == 1 && Self.errors(back).isEmpty && !engine.isStale)
    }

    @Test("requestLocation: the best location at the timeout, then the source stops")
    func oneShotTimeout() {
        var engine = Self.engine { $0.desiredAccuracy = kCLLocationAccuracyNearestTenMeters }
        let t0 = Self.start
        let started = engine.start(.oneShot, now: t0)
        #expect(Self.armed(started).contains { $0.0 == .requestLocation && $0.1 == 10 })
        #expect(Self.delivered(engine.handle(.fix(Self.fix(at: 0, accuracy: 80)), now: t0)).isEmpty)
        #expect(Self.delivered(engine.handle(.fix(Self.fix(at: 1, accuracy: 40)), now: t0 + 1)).isEmpty)
        #expect(Self.delivered(engine.handle(.fix(Self.fix(at: 2, accuracy: 60)), now: t0 + 2)).isEmpty)
        let timeout = engine.timerFired(.requestLocation, now: t0 + 10)
        #expect(Self.delivered(timeout).map(\.horizontalAccuracy).map { ($0 * 1000).rounded() } == [40_000])
        #expect(Self.stopsSource(timeout) && engine.mode == .stopped)
        #expect(engine.handle(.fix(Self.fix(at: 11)), now: t0 + 11).isEmpty, "nothing after the request settled")
    }

    @Test("requestLocation: a location meeting desiredAccuracy settles at once; none at all is one timedOut error")
    func oneShotSettles() {
        var engine = Self.engine { $0.desiredAccuracy = kCLLocationAccuracyNearestTenMeters }
        _ = engine.start(.oneShot, now: Self.start)
        // A receiver whose cycle is learnt (one report an epoch): its epoch is complete at once.
        #expect(Self.delivered(engine.handle(.fix(Self.fix(at: -1, accuracy: 80)), now: Self.start)).isEmpty)
        let good = engine.handle(.fix(Self.fix(at: 0, accuracy: 4)), now: Self.start)
        #expect(Self.delivered(good).map(\.timestamp) == [Self.start] && Self.stopsSource(good))

        var empty = Self.engine()
        _ = empty.start(.oneShot, now: Self.start)
        let timeout = empty.timerFired(.requestLocation, now: Self.start + 10)
        #expect(Self.errors(timeout).map(\.reason) == [.timedOut])
    }

    @Test("after stop() no event produces an action, and a new start delivers at once")
    func stopped() {
        var engine = Self.engine { $0.distanceFilter = 1000 }
        _ = engine.start(.continuous, now: Self.start)
        // The first epoch goes when the next begins; after that each at once.
        #expect(Self.delivered(engine.handle(.fix(Self.fix(at: -1)), now: Self.start)).isEmpty)
        #expect(Self.delivered(engine.handle(.fix(Self.fix(at: 0)), now: Self.start)).count == 1)
        _ = engine.stop()
        for event: LocationSourceEvent in [
            .fix(Self.fix(at: 1)), .problem(CLError(.locationUnknown, message: "x"), terminal: true),
            .device(DeviceEvent(path: "/dev/ttyACM0", driver: nil, activated: false)),
        ] {
            #expect(engine.handle(event, now: Self.start + 1).isEmpty)
        }
        #expect(engine.timerFired(.staleness, now: Self.start + 100).isEmpty)
        _ = engine.start(.continuous, now: Self.start + 2)
        // The distance filter forgot the last delivered location: 0 m away is delivered again,
        // at once (the receiver's cycle, learnt before the stop, is kept).
        #expect(Self.delivered(engine.handle(.fix(Self.fix(at: 2)), now: Self.start + 2)).count == 1)
    }

    @Test("denied: start says why once and stays stopped; a revocation while running stops the source")
    func denied() {
        var engine = Self.engine(.denied)
        let started = engine.start(.continuous, now: Self.start)
        #expect(Self.errors(started).map(\.reason) == [.notAuthorized] && engine.mode == .stopped)
        #expect(Self.errors(engine.start(.continuous, now: Self.start)).isEmpty, "said once per state")

        var running = Self.engine()
        _ = running.start(.continuous, now: Self.start)
        let revoked = running.setAuthorization(
            AuthorizationState(appID: "engine-test", status: .denied), now: Self.start)
        #expect(Self.errors(revoked).map(\.code) == [.denied] && Self.stopsSource(revoked))
        #expect(running.handle(.fix(Self.fix(at: 1)), now: Self.start + 1).isEmpty)
    }

    @Test("not determined: explained once, nothing delivered, and locations flow once granted")
    func notDetermined() {
        var engine = Self.engine(.notDetermined, isLive: false)
        let started = engine.start(.continuous, now: Self.start)
        #expect(Self.errors(started).map(\.reason) == [.notDetermined])
        #expect(Self.errors(started).first?.message.contains("gpsloc auth grant engine-test") == true)
        for second in 0..<5 {
            #expect(engine.handle(.fix(Self.fix(at: Double(second))), now: Self.start).isEmpty)
        }
        _ = engine.setAuthorization(
            AuthorizationState(appID: "engine-test", status: .authorizedWhenInUse), now: Self.start)
        #expect(Self.delivered(engine.handle(.fix(Self.fix(at: 5)), now: Self.start)).count == 1)
    }

    @Test("a rejected fix is diagnosed once per change of reason, with its code")
    func diagnostics() {
        var engine = Self.engine(isLive: false)
        _ = engine.start(.continuous, now: Self.start)
        var noFix = Self.fix(at: 0)
        noFix.mode = .noFix
        var codes: [String] = []
        for event in [noFix, noFix, noFix, Self.fix(at: 1), noFix] {
            codes += engine.handle(.fix(event), now: Self.start).compactMap(\.diagnostic?.code)
        }
        #expect(codes == ["noFix"], "the same reason within a minute is said once")
    }
}

/// #23: what a one-shot request and the refusals say, as Apple code expects them.
@Suite("requestLocation and refusals say what applies", .timeLimit(.minutes(5)))
struct OneShotSemanticsTests {
    @Test("a steady receiver that never meets desiredAccuracy: the newest of the best, not the oldest")
    func newestOfEquallyAccurate() {
        var engine = LocationEngineTests.engine { $0.desiredAccuracy = kCLLocationAccuracyBest }
        let t0 = LocationEngineTests.start
        _ = engine.start(.oneShot, now: t0)
        for second in 0..<5 {
            _ = engine.handle(
                .fix(LocationEngineTests.fix(at: Double(second), accuracy: 12)), now: t0 + Double(second),
                uptime: Double(second))
        }
        let settled = LocationEngineTests.delivered(engine.timerFired(.requestLocation, now: t0 + 10))
        #expect(settled.map(\.timestamp) == [t0 + 4])
    }

    @Test("at the deadline, never a location older than a receiver cycle: a better one from seconds ago loses")
    func neverOlderThanACycle() {
        var engine = LocationEngineTests.engine { $0.desiredAccuracy = kCLLocationAccuracyBest }
        let t0 = LocationEngineTests.start
        _ = engine.start(.oneShot, now: t0)
        // 6 m at first (not the 5 m best asks for), then 12 m a second for eight seconds.
        let accuracies = [6.0] + Array(repeating: 12.0, count: 8)
        for (second, accuracy) in accuracies.enumerated() {
            _ = engine.handle(
                .fix(LocationEngineTests.fix(at: Double(second), accuracy: accuracy)), now: t0 + Double(second),
                uptime: Double(second))
        }
        let settled = LocationEngineTests.delivered(engine.timerFired(.requestLocation, now: t0 + 10))
        #expect(settled.map(\.timestamp) == [t0 + 8], "the newest, not the 8 s old 6 m one")
        // Within the last cycle the more accurate one wins (two reports of one second at 10 Hz).
        var fast = LocationEngineTests.engine { $0.desiredAccuracy = kCLLocationAccuracyBest }
        _ = fast.start(.oneShot, now: t0)
        for (tenth, accuracy) in [12.0, 12.0, 7.0, 12.0].enumerated() {
            _ = fast.handle(
                .fix(LocationEngineTests.fix(at: Double(tenth) / 10, accuracy: accuracy)), now: t0, uptime: 0)
        }
        let best = LocationEngineTests.delivered(fast.timerFired(.requestLocation, now: t0 + 10))
        #expect(best.map(\.timestamp) == [t0 + 0.2], "7 m, a tenth of a second before the newest")
    }

    @Test("fixes arrive but the app is not authorized: the one-shot ends with that reason, not \"no fix\"")
    func notDeterminedOneShot() {
        var engine = LocationEngineTests.engine(.notDetermined)
        let t0 = LocationEngineTests.start
        _ = engine.start(.oneShot, now: t0)
        _ = engine.handle(.fix(LocationEngineTests.fix(at: 0)), now: t0, uptime: 0)
        let ended = LocationEngineTests.errors(engine.timerFired(.requestLocation, now: t0 + 10))
        #expect(ended.map(\.reason) == [.notDetermined], "\(ended)")
    }

    @Test("a program that is not in use is told to grant Always, never When In Use (which would give nothing)")
    func daemonAdvice() {
        let daemon = AuthorizationState(appID: "fleetd", status: .notDetermined, isInUse: false)
        #expect(daemon.refusal?.message.contains("`gpsloc auth grant fleetd --always`") == true)
        #expect(daemon.refusal?.message.contains("--when-in-use") == false)
        let denied = AuthorizationState(appID: "fleetd", status: .denied, isInUse: false)
        #expect(denied.refusal?.message.contains("--always") == true)
        let terminal = AuthorizationState(appID: "tool", status: .notDetermined, isInUse: true)
        #expect(terminal.refusal?.message.contains("--when-in-use") == true)
        // The request without a prompt says the same.
        let authorizer = LocationAuthorizer(appID: "fleetd", usageDescription: "tracking", isInUse: false)
        guard case .noPrompt(let facts) = authorizer.request(always: false) else {
            Issue.record("expected noPrompt")
            return
        }
        let message = facts.words
        #expect(message.contains("--always") && !message.contains("--when-in-use"), "\(message)")
    }
}
