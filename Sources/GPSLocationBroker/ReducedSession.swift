import Dispatch
import FoundationEssentials
import GNSSCore
import GPSDClient
import Glibc
import LocationCore
import LocationWords

/// A program with reduced accuracy behind gpslocd, in one pass and with no engine of its own:
/// each of gpsd's fixes that the engine's validity rule admits (`ValidityStage`: a 2D or 3D fix
/// with a valid coordinate and a time) goes to the fuzzer (`LocationFuzzer.reducePoint`, the rule
/// the library's gate applies, with the box's one secret and kept cell in gpslocd's state folder),
/// and the program gets one line — the grid point the fuzzer last let out, at the fix's time,
/// with no altitude, speed, course, receiver or estimate — or nothing before the first point.
/// Everything else (time order, staleness, the distance filter) is the program's own engine's,
/// which reads these lines: one engine pass per location. Every program of every uid shares the
/// secret and the kept cell, so five app ids, or one app under three uids, get one position. Headings go without the
/// receiver's magnetic variation (it would say where the receiver is).
///
/// It holds a fuzzer and a point (a few hundred bytes): a program that toggles WATCH makes and
/// drops one each time, and nothing else.
final class ReducedSession: Sendable {
    private struct State {
        var fuzzer: LocationFuzzer
        var current: ReducedPoint?
        /// The fuzzer's state could not be kept and the program has been told (until a point
        /// goes out again).
        var told = false
    }
    private let state: Locked<State>
    private let client: BrokerClient
    private let validity = ValidityStage()
    private let kept: @Sendable (String) -> Void
    private let delivered: @Sendable () -> Void

    /// `kept(line)` runs as a line is queued, under the client's lock (it may not take the
    /// service's); `delivered()` after.
    init(
        client: BrokerClient, store: ReducedAccuracyStore, kept: @escaping @Sendable (String) -> Void,
        delivered: @escaping @Sendable () -> Void
    ) {
        self.client = client
        self.kept = kept
        self.delivered = delivered
        state = Locked(State(fuzzer: LocationFuzzer(store: store, appID: "reduced", live: true)))
    }

    /// One of gpsd's reports: a fix becomes the current grid point's line, a heading goes
    /// without what would place the receiver; nothing else reaches a reduced program here.
    func send(_ event: LocationSourceEvent, epoch: Int) {
        switch event {
        case .fix(let fix):
            guard let time = fix.time, validity.check(fix, now: time) == nil, let latitude = fix.latitude,
                let longitude = fix.longitude
            else { return }
            let (point, problem) = state.withLock { state -> (ReducedPoint?, FileProblem?) in
                switch state.fuzzer.reducePoint(
                    latitude: latitude, longitude: longitude, horizontalAccuracy: .infinity, now: Date())
                {
                case .point(let point):
                    state.current = point
                    state.told = false
                case .hold: break
                case .unavailable(let problem):
                    // Fails closed: the point given before stays the last one sent, and no new
                    // one goes out until the state can be kept.
                    state.current = nil
                    if !state.told {
                        state.told = true
                        return (nil, problem)
                    }
                }
                return (state.current, nil)
            }
            if let problem {
                // The secret or the state cannot be kept: the program is told, and gets nothing.
                let error = LocationFuzzer.unavailableError(appID: client.app ?? "the program", problem)
                client.send(BrokerProtocol.problemLine(error, terminal: false, words: .said))
            }
            guard let point else { return }
            let line = BrokerProtocol.reducedLine(point, time: time)
            // Kept as the app's last location only if it went out (not after a revocation).
            if client.sendLocation(line, droppable: true, epoch: epoch, accepted: { kept(line) }) { delivered() }
        case .heading(var heading):
            heading.magneticVariation = nil
            heading.magneticHeading = nil
            heading.device = nil
            client.send(BrokerProtocol.line(for: .heading(heading)), droppable: true, epoch: epoch)
        default:
            break
        }
    }
}
