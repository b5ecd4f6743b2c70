import Dispatch
import FoundationEssentials
import GNSSCore
import Glibc

/// Runs a write at most once per `interval`: region events can come many a second with
/// thousands of conditions, and rewriting (and syncing) the whole file for each would wear an
/// SD card for nothing. The first request writes at once; requests within the interval after it
/// are merged into one write at its end, which always runs the latest `work`. `flush()` writes
/// what is pending now (on stop, deinit).
final class CoalescedWriter: Sendable {
    private struct State {
        var pending: (@Sendable () -> Void)?
        var lastWrite: DispatchTime?
        var scheduled = false
    }
    private let state = Locked(State())
    private let interval: Double
    let queue = DispatchQueue(label: "gpslocation.coalesced-writer")

    init(interval: Double = 1) { self.interval = interval }

    func write(_ work: @escaping @Sendable () -> Void) {
        let now = DispatchTime.now()
        let action = state.withLock { state -> (@Sendable () -> Void)?? in
            if let last = state.lastWrite, Double(now.uptimeNanoseconds - last.uptimeNanoseconds) / 1e9 < interval {
                state.pending = work
                if state.scheduled { return .none }
                state.scheduled = true
                return .some(nil)
            }
            state.lastWrite = now
            return .some(work)
        }
        switch action {
        case .some(.some(let work)): work()
        case .some(.none):
            queue.asyncAfter(deadline: .now() + interval) { [weak self] in self?.flush() }
        case .none: break
        }
    }

    /// Drops the pending write and says whether there was one (an owner's deinit, where a
    /// closure holding it weakly could no longer run: the owner writes itself).
    func takePending() -> Bool {
        state.withLock { state in
            defer {
                state.pending = nil
                state.scheduled = false
            }
            return state.pending != nil
        }
    }

    func flush() {
        let work = state.withLock { state -> (@Sendable () -> Void)? in
            defer {
                state.pending = nil
                state.scheduled = false
            }
            if state.pending != nil { state.lastWrite = DispatchTime.now() }
            return state.pending
        }
        work?()
    }
}
