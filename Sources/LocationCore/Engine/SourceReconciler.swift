import Dispatch
import FoundationEssentials
import GNSSCore
import Glibc

/// Starts and stops an `EngineRunner`'s source in the order the engine decided.
///
/// The engine decides under the runner's lock whether the source should run (and for which
/// generation); the start and stop calls themselves are made after the lock is released, since a
/// source's `stop()` may wait for its own thread. Only the thread that holds `busy` starts or
/// stops the source; one that finds it busy sets `dirty`, and the holder looks again before it
/// lets go. So the calls follow the engine's *last* decision — never a one-shot's late `stop()`
/// after the next request's `start()` (the source would then be stopped while the engine waits
/// for it) — and no thread waits for another to do so.
final class SourceReconciler: Sendable {
    private struct Control {
        var busy = false
        var dirty = false
        var running = false
        var generation = 0
    }
    private let control = Locked(Control())

    /// Whether the source runs, as the last reconciliation left it.
    var isRunning: Bool { control.withLock { $0.running } }

    /// Brings the source in line with `wanted()` (whether it should run, and for which
    /// generation): stops it, starts it, or both (a source started for an older generation hands
    /// its events to a handler that drops them, so it is restarted).
    func reconcile(
        wanted: () -> (run: Bool, generation: Int), stop: () -> Void, start: (_ generation: Int) -> Void
    ) {
        let claimed = control.withLock { control -> Bool in
            if control.busy {
                control.dirty = true
                return false
            }
            control.busy = true
            return true
        }
        guard claimed else { return }
        while true {
            control.withLock { $0.dirty = false }
            let (run, generation) = wanted()
            let (running, runningGeneration) = control.withLock { ($0.running, $0.generation) }
            if running && (!run || runningGeneration != generation) {
                stop()
                control.withLock { $0.running = false }
            }
            if run && !(running && runningGeneration == generation) {
                control.withLock {
                    $0.running = true
                    $0.generation = generation
                }
                start(generation)
            }
            let again = control.withLock { control -> Bool in
                if control.dirty { return true }
                control.busy = false
                return false
            }
            if !again { return }
        }
    }
}
