import Foundation
import GNSSCore

/// One element of `CLLocationUpdate.liveUpdates()` (Apple, iOS 17–18): a location, or
/// diagnostics saying why there is none right now.
///
/// ```swift
/// for try await update in CLLocationUpdate.liveUpdates() {
///     if let location = update.location {
///         print(location.coordinate)
///     } else if update.authorizationDenied {
///         print("not authorized: `gpsloc auth grant` allows it")
///     }
/// }
/// ```
public struct CLLocationUpdate: Sendable {
    /// The location, or nil when this update only reports a state (see the flags).
    public let location: CLLocation?
    /// The device has stopped (`StationaryDetector`: under 0.5 m/s, or unknown, and within
    /// twice the horizontal accuracy of where it settled for 10 s of the locations' own time).
    /// As Apple describes: this update carries the location that showed the stop, and then the
    /// sequence yields nothing while the device stays put; the next update is the first location
    /// after it leaves (beyond three times the accuracy, at least 5 m, or at 1 m/s or more, for
    /// a second of its own time), with `isStationary` false. A still receiver's noise does not
    /// end a stop. `.airborne` never pauses.
    public let isStationary: Bool
    /// iOS 18's name for `isStationary`.
    public var stationary: Bool { isStationary }
    /// The app is denied by the user: no locations will come.
    public let authorizationDenied: Bool
    /// Location services are off for the whole machine (the administrator's policy).
    public let authorizationDeniedGlobally: Bool
    /// The administrator's policy restricts this app.
    public let authorizationRestricted: Bool
    /// Authorized When In Use, and not in use (no terminal, not declared in use).
    public let insufficientlyInUse: Bool
    /// Authorization is not determined and nobody could be asked (or the request is open).
    public let authorizationRequestInProgress: Bool
    /// The source reports no usable location (gpsd down, no receiver, no fix, stale).
    public let locationUnavailable: Bool
    /// Locations are delivered with reduced accuracy.
    public let accuracyLimited: Bool
    /// Always false: no `CLServiceSession` is required on Linux (the authorization gate
    /// decides; a session only asks for authorization and reports diagnostics).
    public let serviceSessionRequired: Bool
    /// What went wrong, in words, when `location` is nil (a GPSLocation addition).
    public let message: String?
    /// The machine-readable reason, when `location` is nil (a GPSLocation addition).
    public let reason: CLError.Reason?

    init(
        location: CLLocation?, error: CLError? = nil, accuracyLimited: Bool = false, isStationary: Bool = false,
        servicesEnabled: Bool = true
    ) {
        self.location = location
        self.isStationary = isStationary
        let reason = error?.reason
        let flags = AuthorizationFlags(reason: reason, servicesEnabled: servicesEnabled)
        authorizationDeniedGlobally = flags.deniedGlobally
        authorizationDenied = flags.denied
        authorizationRestricted = flags.restricted
        insufficientlyInUse = flags.insufficientlyInUse
        authorizationRequestInProgress = flags.requestInProgress
        locationUnavailable = error != nil && !flags.any
        self.accuracyLimited = accuracyLimited
        serviceSessionRequired = false
        message = error?.message
        self.reason = reason
    }

    /// Apple's configurations. Here each one sets the manager's thresholds:
    /// - `default`: at most one location a second (`minimumUpdateInterval` 1 s), like Apple's
    ///   default rate; a 10 Hz receiver is thinned to 1 Hz.
    /// - `automotiveNavigation`, `otherNavigation`, `airborne`: every location the receiver
    ///   makes (no interval), `desiredAccuracy` best for navigation.
    /// - `fitness`: at most one location a second, and only after moving 2 m (`distanceFilter`),
    ///   so a runner standing still produces nothing new.
    /// The activity type is set to match.
    public enum LiveConfiguration: Int, Sendable {
        /// About one location a second.
        case `default` = 0
        /// Driving: every location, best accuracy.
        case automotiveNavigation
        /// Other vehicles: every location, best accuracy.
        case otherNavigation
        /// Walking, running, cycling: one a second, after 2 m of movement.
        case fitness
        /// Flying: every location, best accuracy, never paused.
        case airborne

        /// Applies the configuration to a manager.
        func configure(_ manager: CLLocationManager) {
            manager.runner.withEngine { $0.configuration.pausesWhileStationary = true }
            switch self {
            case .default:
                manager.minimumUpdateInterval = 1
                manager.activityType = .other
            case .automotiveNavigation, .otherNavigation, .airborne:
                manager.minimumUpdateInterval = 0
                manager.desiredAccuracy = kCLLocationAccuracyBestForNavigation
                manager.activityType =
                    self == .automotiveNavigation
                    ? .automotiveNavigation : self == .airborne ? .airborne : .otherNavigation
            case .fitness:
                manager.minimumUpdateInterval = 1
                manager.distanceFilter = 2
                manager.activityType = .fitness
            }
        }
    }

    /// Live updates from `CLLocationManager.defaultSource()` through the shared authorizer.
    public static func liveUpdates(_ configuration: LiveConfiguration = .default) -> Updates {
        Updates(
            makeManager: {
                // Its own queue: the sequence's consumer is an async task, not a run loop.
                let manager = CLLocationManager(
                    source: CLLocationManager.defaultSource(), authorizer: CLLocationManager.sharedAuthorizer,
                    delegateQueue: DispatchQueue(label: "gpslocation.liveUpdates"))
                configuration.configure(manager)
                return manager
            })
    }

    /// Live updates from a given source and authorizer (a GPSLocation addition).
    public static func liveUpdates(
        _ configuration: LiveConfiguration = .default, source: any LocationSource, authorizer: LocationAuthorizer
    ) -> Updates {
        Updates(
            makeManager: {
                let manager = CLLocationManager(
                    source: source, authorizer: authorizer,
                    delegateQueue: DispatchQueue(label: "gpslocation.liveUpdates"))
                configuration.configure(manager)
                return manager
            })
    }

    /// An `AsyncSequence` of updates. Buffering: from a recording (a source that is not live)
    /// nothing is dropped — the recording waits for the consumer; from a live source **latest
    /// wins** — if the consumer is slower than the receiver, only the newest waiting update is
    /// kept. Iteration starts the underlying manager; ending it (break, or cancelling the task)
    /// stops the source. When the source stops for good (a replay reaches its end, gpsd is gone
    /// and no reconnection is configured), the last update says why and the sequence ends.
    public struct Updates: AsyncSequence, Sendable {
        /// An update.
        public typealias Element = CLLocationUpdate
        let makeManager: @Sendable () -> CLLocationManager

        /// Starts the updates: one manager per iteration.
        public func makeAsyncIterator() -> Iterator {
            let manager = makeManager()
            let flow = manager.makeFlow(liveCapacity: 1)
            let (stream, continuation) = AsyncStream.makeStream(
                of: CLLocationUpdate.self, bufferingPolicy: flow.lossless ? .unbounded : .bufferingNewest(1))
            let bridge = Bridge(continuation: continuation, flow: flow)
            manager.delegate = bridge
            manager.onSourceEnded = { continuation.finish() }
            // Stop off the terminating thread: it may hold the stream's lock while a delegate
            // callback waits to yield, and stopUpdatingLocation() waits for that callback.
            let reference = ManagerReference(value: manager)
            continuation.onTermination = { _ in
                flow.end()
                DispatchQueue.global().async { reference.value.stopUpdatingLocation() }
            }
            manager.startUpdatingLocation()
            return Iterator(base: stream.makeAsyncIterator(), bridge: bridge, manager: manager, flow: flow)
        }

        /// Takes one update at a time.
        public struct Iterator: AsyncIteratorProtocol {
            var base: AsyncStream<CLLocationUpdate>.Iterator
            let bridge: Bridge
            let manager: CLLocationManager
            let flow: StreamFlow
            /// Throwing, as Apple's is (`for try await update in …`); it never throws here:
            /// problems arrive as updates with diagnostics, and the end as the sequence's end.
            public mutating func next() async throws -> CLLocationUpdate? {
                defer { flow.consumed() }
                return await base.next()
            }
        }
    }

    /// Forwards delegate callbacks into the stream; whether the device is stationary is the
    /// engine's (`GNSSDetails.isStationary`).
    final class Bridge: CLLocationManagerDelegate, Sendable {
        let continuation: AsyncStream<CLLocationUpdate>.Continuation
        let flow: StreamFlow
        let last = Locked<CLLocation?>(nil)
        init(continuation: AsyncStream<CLLocationUpdate>.Continuation, flow: StreamFlow) {
            self.continuation = continuation
            self.flow = flow
        }

        /// Updates paused because the device stayed put: one update saying so, with the last
        /// location, then nothing until it moves (Apple's `stationary` update).
        func locationManagerDidPauseLocationUpdates(_ manager: CLLocationManager) {
            continuation.yield(CLLocationUpdate(location: last.withLock { $0 }, isStationary: true))
            flow.produced()
        }

        func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
            if let newest = locations.last { last.withLock { $0 = newest } }
            for location in locations {
                continuation.yield(
                    CLLocationUpdate(
                        location: location, accuracyLimited: location.gnss?.reduced == true,
                        isStationary: location.gnss?.isStationary == true))
                flow.produced()
            }
        }

        func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
            continuation.yield(
                CLLocationUpdate(
                    location: nil, error: error as? CLError,
                    servicesEnabled: CLLocationManager.locationServicesEnabled()))
            flow.produced()
        }
    }
}
