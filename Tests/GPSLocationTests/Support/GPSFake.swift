import Foundation
import GPSLocation

/// Limits how many gpsfake daemons run at once (the machine has 2 cores).
actor GPSFakeSlots {
    static let shared = GPSFakeSlots(limit: 3)
    private var free: Int
    private var waiters: [CheckedContinuation<Void, Never>] = []
    init(limit: Int) { free = limit }
    func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiters.append($0) }
    }
    func release() {
        if waiters.isEmpty { free += 1 } else { waiters.removeFirst().resume() }
    }
}

/// Replays `log` through a real gpsd (gpsfake) and collects every event our `GPSDSource` sees
/// until gpsd goes away at the end of the log, plus what gpsfake's own watcher received.
/// Retries once when gpsd reported no TPV at all (a known rare gpsfake start-up race under
/// load), and prints that it did.
func replayThroughGPSD(_ log: URL, cycle: Double? = nil) async throws -> (events: [GPSDEvent], reference: String) {
    await GPSFakeSlots.shared.acquire()
    do {
        var attempt = 0
        while true {
            attempt += 1
            let result = try await replayOnce(log, cycle: cycle)
            let sawFix = result.events.contains { if case .report(.fix) = $0 { true } else { false } }
            if sawFix || attempt == 2 || !result.reference.contains("\"TPV\"") {
                await GPSFakeSlots.shared.release()
                return result
            }
            print("gpsfake replay of \(log.lastPathComponent) reached our client empty; retrying once")
        }
    } catch {
        await GPSFakeSlots.shared.release()
        throw error
    }
}

private func replayOnce(_ log: URL, cycle: Double?) async throws -> (events: [GPSDEvent], reference: String) {
    let fake = try await GPSFakeServer.started(log: log, cycle: cycle)
    defer { fake.stop() }
    let source = GPSDSource(endpoint: fake.endpoint, noDataTimeout: nil)
    // A replay that never ends (gpsfake stuck under load) must not hang the suite: stop both.
    let watchdog = Task {
        try await Task.sleep(for: .seconds(60))
        print("gpsfake replay of \(log.lastPathComponent) did not end within 60 s; stopping it")
        fake.stop()
        source.stop()
    }
    var events: [GPSDEvent] = []
    for await event in source.events() {
        events.append(event)
    }
    watchdog.cancel()
    await fake.waitForExit(timeout: .seconds(10))
    return (events, fake.watcherOutput)
}
