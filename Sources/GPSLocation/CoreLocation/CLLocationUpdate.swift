import Foundation

/// One element of `CLLocationUpdate.liveUpdates()` (Apple, iOS 17+): a location, or a
/// diagnostic saying why there is none right now.
public struct CLLocationUpdate: Sendable {
    public let location: CLLocation?
    /// Always false: gpsd receivers report continuously, GPSLocation does not detect stillness.
    public let isStationary: Bool
    /// The app is denied (or restricted): no locations will come.
    public let authorizationDenied: Bool
    /// Authorization is not determined and nobody could be asked.
    public let authorizationRequestInProgress: Bool
    /// The source reports no usable location (gpsd down, no receiver, no fix).
    public let locationUnavailable: Bool
    /// Locations are delivered with reduced accuracy.
    public let accuracyLimited: Bool
    /// What went wrong, in words, when `location` is nil (a GPSLocation addition).
    public let message: String?

    init(location: CLLocation?, error: CLError? = nil, accuracyLimited: Bool = false) {
        self.location = location
        isStationary = false
        authorizationDenied = error?.code == .denied
        authorizationRequestInProgress = error?.code == .promptDeclined
        locationUnavailable = error?.code == .locationUnknown
        self.accuracyLimited = accuracyLimited
        message = error?.message
    }

    /// Apple's configurations; accepted for source compatibility (they do not change gpsd).
    public enum LiveConfiguration: Int, Sendable {
        case `default` = 0
        case automotiveNavigation, otherNavigation, fitness, airborne
    }

    /// Live updates from `CLLocationManager.defaultSource()` through the shared authorizer.
    public static func liveUpdates(_ configuration: LiveConfiguration = .default) -> Updates {
        Updates(makeManager: { CLLocationManager() })
    }

    /// Live updates from a given source and authorizer (a GPSLocation addition).
    public static func liveUpdates(source: any LocationSource, authorizer: LocationAuthorizer) -> Updates {
        Updates(makeManager: { CLLocationManager(source: source, authorizer: authorizer) })
    }

    /// An `AsyncSequence` of updates. Buffering: **latest wins** — if the consumer is slower
    /// than the receiver, only the newest waiting update is kept. Iteration starts the
    /// underlying manager; ending it (break, or cancelling the task) stops the source. When the
    /// source stops for good (a replay reaches its end, gpsd is gone and no reconnection is
    /// configured), the last update says why and the sequence ends.
    public struct Updates: AsyncSequence, Sendable {
        public typealias Element = CLLocationUpdate
        let makeManager: @Sendable () -> CLLocationManager

        public func makeAsyncIterator() -> Iterator {
            let manager = makeManager()
            let (stream, continuation) = AsyncStream.makeStream(
                of: CLLocationUpdate.self, bufferingPolicy: .bufferingNewest(1))
            let bridge = Bridge(continuation: continuation)
            manager.delegate = bridge
            manager.onSourceEnded = { continuation.finish() }
            // Stop off the terminating thread: it may hold the stream's lock while a delegate
            // callback waits to yield, and stopUpdatingLocation() waits for that callback.
            continuation.onTermination = { _ in DispatchQueue.global().async { manager.stopUpdatingLocation() } }
            manager.startUpdatingLocation()
            return Iterator(base: stream.makeAsyncIterator(), bridge: bridge, manager: manager)
        }

        public struct Iterator: AsyncIteratorProtocol {
            var base: AsyncStream<CLLocationUpdate>.Iterator
            let bridge: Bridge
            let manager: CLLocationManager
            public mutating func next() async -> CLLocationUpdate? { await base.next() }
        }
    }

    /// Forwards delegate callbacks into the stream.
    final class Bridge: CLLocationManagerDelegate, Sendable {
        let continuation: AsyncStream<CLLocationUpdate>.Continuation
        init(continuation: AsyncStream<CLLocationUpdate>.Continuation) { self.continuation = continuation }

        func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
            for location in locations {
                continuation.yield(
                    CLLocationUpdate(location: location, accuracyLimited: location.gnss?.reduced == true))
            }
        }

        func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
            continuation.yield(CLLocationUpdate(location: nil, error: error as? CLError))
        }
    }
}
