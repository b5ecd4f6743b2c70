import Dispatch
import Foundation
import GNSSCore

extension CLLocationManager {
    /// Location updates as an `AsyncSequence`, for code that prefers a loop to a delegate
    /// (a daemon's main task): `for try await location in manager.locations() { … }` starts
    /// updates with this manager's settings (distance filter, minimum interval, …) and stops
    /// them when the loop ends or its task is cancelled. While it runs the stream is the
    /// manager's delegate. Errors that do not end updates (gpsd lost and reconnecting, no fix
    /// for a while) go to `diagnosticsHandler`; those that do (`CLError.endsUpdates`: denied or
    /// restricted, the source ended for good) end the loop by throwing the `CLError`.
    /// Authorization that was never requested is requested (Always) first, as
    /// `requestAlwaysAuthorization()` does.
    ///
    /// Buffering: from a recording nothing is dropped (the recording waits while `maximumBatch`
    /// locations are unread); from a live source at most `maximumBatch` wait, the newest kept.
    public func locations() -> Locations {
        let flow = makeFlow()
        let (stream, continuation) = AsyncThrowingStream.makeStream(
            of: CLLocation.self, throwing: (any Error).self,
            bufferingPolicy: flow.lossless ? .unbounded : .bufferingNewest(flow.capacity))
        let manager = WeakReference(self)
        let adapter = StreamDelegate(
            continuation: continuation, flow: flow,
            diagnostics: { manager.value?.diagnosticsHandler ?? Diagnostics.standardError })
        delegate = adapter
        onSourceEnded = {
            continuation.finish(throwing: CLError(.locationUnknown, message: "the source ended", reason: .sourceEnded))
        }
        continuation.onTermination = { _ in
            flow.end()
            withExtendedLifetime(adapter) {}
            // Off the terminating thread: stopping waits for a delegate call that may be waiting here.
            DispatchQueue.global().async { manager.value?.stopUpdatingLocation() }
        }
        if authorizationStatus == .notDetermined { requestAlwaysAuthorization() }
        startUpdatingLocation()
        return Locations(stream: stream, flow: flow, manager: ManagerReference(value: self))
    }

    /// `locations()`'s sequence (an `AsyncThrowingStream` of `CLLocation` that tells a recording
    /// when its reader has taken a location). It keeps its manager alive while it is iterated.
    public struct Locations: AsyncSequence, Sendable {
        /// A location.
        public typealias Element = CLLocation
        let stream: AsyncThrowingStream<CLLocation, any Error>
        let flow: StreamFlow
        let manager: ManagerReference

        /// An iterator over the manager's locations.
        public func makeAsyncIterator() -> Iterator {
            Iterator(base: stream.makeAsyncIterator(), flow: flow, manager: manager)
        }

        /// Takes one location at a time; a recording waits until it is taken.
        public struct Iterator: AsyncIteratorProtocol {
            var base: AsyncThrowingStream<CLLocation, any Error>.Iterator
            let flow: StreamFlow
            let manager: ManagerReference
            /// The next location; nil after a replay's end; throws an error that ends updates.
            public mutating func next() async throws -> CLLocation? {
                defer { flow.consumed() }
                return try await base.next()
            }
        }
    }

    /// The flow for a stream adapter of this manager: lossless for a recording, and given up
    /// when updates are stopped (a stop from the reader's own loop must not wait for itself).
    func makeFlow(liveCapacity: Int? = nil) -> StreamFlow {
        let runner = runner
        let generation = runner.generation
        let lossless = !runner.source.isLive
        return StreamFlow(
            capacity: lossless ? runner.maximumBatch : liveCapacity ?? runner.maximumBatch, lossless: lossless,
            abandoned: { runner.generation != generation })
    }
}

/// A manager, weakly, for a `@Sendable` closure. @unchecked Sendable: the manager is not
/// Sendable (as Apple's is not, so apps' subclasses need not say they are), but every state it
/// has is behind its locks and the runner's; only the thread-safe surface is called through this.
final class WeakReference: @unchecked Sendable {
    weak var value: CLLocationManager?
    init(_ value: CLLocationManager) { self.value = value }
}

/// A manager, strongly, for a `@Sendable` closure or a Sendable value (as `WeakReference`).
package struct ManagerReference: @unchecked Sendable {
    package let value: CLLocationManager
    package init(value: CLLocationManager) { self.value = value }
}

/// From the manager's delegate queue into an async stream. For a recording (`lossless`) the
/// delegate call waits while `capacity` elements are unread, so nothing is dropped; for a live
/// source the stream itself keeps at most `capacity`, the newest.
final class StreamFlow: Sendable {
    let capacity: Int
    let lossless: Bool
    private let abandoned: @Sendable () -> Bool
    private let counts = Locked((unread: 0, ended: false))

    init(capacity: Int, lossless: Bool, abandoned: @escaping @Sendable () -> Bool) {
        self.capacity = max(1, capacity)
        self.lossless = lossless
        self.abandoned = abandoned
    }

    /// After a yield: waits (a recording only) until the reader has room again.
    func produced() {
        guard lossless else { return }
        counts.withLock { $0.unread += 1 }
        FlowControl.wait { counts.withLock { $0.ended || $0.unread < capacity } || abandoned() }
    }

    /// The reader took an element.
    func consumed() {
        guard lossless else { return }
        counts.withLock { $0.unread = max(0, $0.unread - 1) }
        FlowControl.changed()
    }

    /// The reader is gone: nothing waits for it any more.
    func end() {
        counts.withLock { $0.ended = true }
        FlowControl.changed()
    }
}

/// `CLLocationManager.locations()`'s delegate: locations into the stream, errors that end
/// updates end it, the others are diagnostics.
private final class StreamDelegate: CLLocationManagerDelegate, Sendable {
    let continuation: AsyncThrowingStream<CLLocation, any Error>.Continuation
    let flow: StreamFlow
    let diagnostics: @Sendable () -> DiagnosticsHandler

    init(
        continuation: AsyncThrowingStream<CLLocation, any Error>.Continuation, flow: StreamFlow,
        diagnostics: @escaping @Sendable () -> DiagnosticsHandler
    ) {
        self.continuation = continuation
        self.flow = flow
        self.diagnostics = diagnostics
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        for location in locations {
            continuation.yield(location)
            flow.produced()
        }
    }

    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        guard let error = error as? CLError else { return }
        if error.endsUpdates {
            continuation.finish(throwing: error)
        } else {
            diagnostics()(
                LocationDiagnostic(code: error.reason?.name ?? error.code.name, message: error.message))
        }
    }
}
