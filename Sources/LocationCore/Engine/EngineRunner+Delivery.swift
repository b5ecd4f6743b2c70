import Dispatch
import FoundationEssentials
import GNSSCore
import Glibc

// The runner's delivery: outputs queued in order and handed to the adapter in batches, on its
// queue, never under the engine's lock (see `EngineRunner`'s "Delivery"). Part of
// `EngineRunner`, in a file of its own.
extension EngineRunner {
    /// Queues an output of the adapter's own, in order with the engine's.
    public func enqueue(_ output: Output) {
        state.withLock { Self.append(output, to: &$0) }
        scheduleDrain()
    }

    /// Waits until an output being handed over now has been (a callback in progress on another
    /// thread returns first). Outputs still waiting are handed over later only if `stop()` did
    /// not drop them: `drain` checks each under the delivery lock, so after `stop()` and this
    /// call, nothing that `stop()` ended reaches the adapter. It never waits for the delivery
    /// target to run: a main thread blocked elsewhere cannot hold a stopping thread up.
    public func flush() {
        delivering.lock()
        delivering.unlock()
    }

    static func append(_ output: Output, to state: inout State) {
        guard case .locations(let new) = output else {
            state.pending.append(output)
            return
        }
        state.pendingLocations += new.count
        if case .locations(var batch)? = state.pending.last {
            // Take the batch out of the list first, so appending to it does not copy it (a
            // delegate far behind a fast source would make that quadratic).
            state.pending[state.pending.count - 1] = .sourceEnded
            batch.append(contentsOf: new)
            state.pending[state.pending.count - 1] = .locations(batch)
        } else {
            state.pending.append(output)
        }
        // Live: the oldest beyond the batch limit are dropped, and counted. A recording never
        // gets here: its source waits first.
        if state.engine.isLive, state.pendingLocations > state.maximumBatch,
            let first = state.pending.firstIndex(where: { if case .locations = $0 { true } else { false } }),
            case .locations(var batch) = state.pending[first]
        {
            batch.removeFirst()
            state.pending[first] = .locations(batch)
            if batch.isEmpty { state.pending.remove(at: first) }
            state.pendingLocations -= 1
            state.dropped += 1
        }
    }

    func scheduleDrain() {
        let (scheduled, delivery, watch) = state.withLock { state -> (Bool, Delivery, Int?) in
            guard !state.drainScheduled, !state.pending.isEmpty else { return (false, .inline, nil) }
            state.drainScheduled = true
            var watch: Int?
            if state.delivery.mayStall && !state.stallCheckArmed && !state.stallReported {
                state.stallCheckArmed = true
                watch = state.drainsStarted
            }
            return (true, state.delivery, watch)
        }
        guard scheduled else { return }
        if let watch { armStallCheck(drainsStarted: watch) }
        switch delivery {
        case .main: DispatchQueue.main.async { [weak self] in self?.drain() }
        case .queue(let queue): queue.async { [weak self] in self?.drain() }
        case .performer(let target): target.perform { [weak self] in self?.drain() }
        case .inline: drain()
        }
    }

    /// The stall watchdog: when no drain has started `stallWarning` seconds after one was
    /// scheduled on a main queue or run loop, that thread is not running its loop.
    func armStallCheck(drainsStarted armedAt: Int) {
        clock.schedule(ObjectIdentifier(self), .deliveryStall, after: Self.stallWarning) { [weak self] in
            guard let self else { return }
            let (report, handler, delivery) = state.withLock { state -> (Bool, DiagnosticsHandler?, Delivery) in
                state.stallCheckArmed = false
                let stalled = state.drainScheduled && state.drainsStarted == armedAt
                if stalled { state.stallReported = true }
                return (stalled, state.diagnosticsHandler, state.delivery)
            }
            if report, let handler { handler(delivery.stallDiagnostic(waited: Self.stallWarning)) }
        }
    }

    /// Hands over what is pending. `stop()` empties `pending` and bumps `generation` under the
    /// lock, so what is taken here belongs to the current generation; a stop that happens while
    /// a batch is handed over ends it.
    func drain() {
        delivering.lock()
        defer { delivering.unlock() }
        let batch = state.withLock { state -> Batch? in
            state.drainsStarted += 1
            return Self.takeOrFinish(&state)
        }
        if let batch { handOver(batch) }
    }

    /// Hands `batch` to the adapter, then whatever was queued meanwhile, until nothing is
    /// pending. Called holding `delivering`, with `drainScheduled` set.
    func handOver(_ first: Batch) {
        var batch = first
        while true {
            FlowControl.changed()
            guard let consumer = batch.consumer else { return drop(batch) }
            // By index: each output is lent to the consumer, not copied out of the batch first.
            let outputs = batch.outputs
            for index in outputs.indices {
                // Checked under `delivering`, which `stop()`'s flush takes: what a stop ended
                // is not handed over after it returns.
                if generations.load(ordering: .acquiring) != batch.generation { break }
                if case .locations = outputs[index],
                    locationGenerations.load(ordering: .acquiring) != batch.locationGeneration
                {
                    continue
                }
                consumer(outputs[index])
            }
            guard let next = state.withLock({ Self.takeOrFinish(&$0) }) else { return }
            batch = next
        }
    }

    /// No consumer yet: what was taken is dropped (as before one is set), and the rest too.
    func drop(_ batch: Batch) {
        var next: Batch? = batch
        while next != nil { next = state.withLock { Self.takeOrFinish(&$0) } }
    }

    /// What is pending, taken; or nil, and the hand-over marked finished, when nothing is.
    static func takeOrFinish(_ state: inout State) -> Batch? {
        guard !state.pending.isEmpty else {
            state.drainScheduled = false
            return nil
        }
        return take(&state)
    }

    /// Takes what is pending (a `droppedLocations` diagnostic first when live locations were
    /// dropped) with the generations it belongs to.
    static func take(_ state: inout State) -> Batch {
        var outputs = state.pending
        if state.dropped > 0 {
            outputs.insert(
                .diagnostic(
                    LocationDiagnostic(
                        code: "droppedLocations", .droppedLocations(count: state.dropped, batch: state.maximumBatch)
                    )
                ), at: 0)
            state.dropped = 0
        }
        state.pending.removeAll()
        state.pendingLocations = 0
        return Batch(
            outputs: outputs, generation: state.generation, locationGeneration: state.locationGeneration,
            consumer: state.consumer)
    }
}
