import Foundation
import GPSLocation
import GPSLocationTesting
import TestSupport

/// Replays `log` through a real gpsd (gpsfake) and collects every event our `GPSDConnection` sees
/// until gpsd goes away at the end of the log, plus what gpsfake's own watcher received.
///
/// gpsfake starts feeding about 1.4 s after it listens; a client that connects later misses the
/// start. Under a loaded test run that happens now and then, so a run in which we saw a
/// different number of TPVs than gpsfake's own watcher is tried again (at most three times,
/// saying so). The last attempt is returned as it is, for the test to judge.
func replayThroughGPSD(_ log: URL, cycle: Double? = nil, expectedTPVs: Int? = nil) async throws -> (
    events: [GPSDEvent], reference: String
) {
    var attempt = 0
    while true {
        attempt += 1
        let result = try await replayOnce(log, cycle: cycle)
        let ours = result.events.count { if case .fix = $0 { true } else { false } }
        let theirs = expectedTPVs ?? ReferenceTPV.parse(result.reference).count
        if ours == theirs || attempt == 3 { return result }
        print(
            "gpsfake replay of \(log.lastPathComponent): our client saw \(ours) TPVs, gpsd reported \(theirs) (a late start or a slow gpsfake under load); retrying"
        )
    }
}

private func replayOnce(_ log: URL, cycle: Double?) async throws -> (events: [GPSDEvent], reference: String) {
    let fake = try await GPSFakeServer.started(log: log, cycle: cycle)
    defer { fake.stop() }
    let source = GPSDConnection(endpoint: fake.endpoint, noDataTimeout: nil)
    // A replay that never ends (gpsfake stuck under load) must not hang the suite: stop both.
    // (A bound on a hang: a replay that ends never waits for it.)
    let watchdog = DispatchWorkItem {
        print("gpsfake replay of \(log.lastPathComponent) did not end within 60 s; stopping it")
        fake.stop()
        source.stop()
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + 60, execute: watchdog)
    var events: [GPSDEvent] = []
    for await event in source.events() {
        events.append(event)
    }
    watchdog.cancel()
    // gpsfake writes its watcher's output when it exits: wait for that before reading it.
    await fake.waitForExit(timeout: .seconds(30))
    return (events, fake.watcherOutput)
}

/// Waits until gpsd at `endpoint` reports a fix with a position to a client (then leaves): the
/// event a test needs before asking something that has a fix. False if the stream ended first
/// (gpsd gone, or 30 s without a fix).
func gpsdReportsFix(_ endpoint: GPSDEndpoint) async -> Bool {
    let source = GPSDConnection(endpoint: endpoint, noDataTimeout: .seconds(30))
    defer { source.stop() }
    for await event in source.events() {
        if case .fix(let fix) = event, fix.latitude != nil { return true }
        if case .noData = event { return false }
    }
    return false
}
