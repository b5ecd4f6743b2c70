import Foundation
import GNSSCore
import GPSLocation

/// A `ReplayClock` that only moves when the replay sleeps: a one-hour recording paced in real
/// time replays instantly, and `slept` says how long it would have taken.
public final class ManualReplayClock: ReplayClock, Sendable {
    private let state: Locked<(time: Double, slept: Double)>

    /// A clock at `start` seconds.
    public init(start: Double = 1000) { state = Locked((start, 0)) }

    /// Seconds the replay has waited so far.
    public var slept: Double { state.withLock { $0.slept } }
    /// The clock's time: `start` plus everything slept.
    public func now() -> Double { state.withLock { $0.time } }
    /// Moves the clock on at once (no real wait).
    public func sleep(seconds: Double) {
        state.withLock {
            $0.time += seconds
            $0.slept += seconds
        }
    }
}
