import FoundationEssentials
import GNSSCore

extension LocationEngine {
    /// What the app asked for.
    package struct Configuration: Sendable, Equatable {
        /// `kCLLocationAccuracy*` or metres; `requestLocation()` waits for it.
        /// `kCLLocationAccuracyReduced`: approximate locations even with full accuracy
        /// authorization, as Apple documents it (the gate's `reducedRequested`).
        package var desiredAccuracy: CLLocationAccuracy = kCLLocationAccuracyBest
        /// See `DistanceFilterStage`.
        package var distanceFilter: CLLocationDistance = kCLDistanceFilterNone
        /// At most one delivered location per this many seconds of the locations' own time
        /// (0: no limit). Both this and the distance filter must pass.
        package var minimumUpdateInterval: TimeInterval = 0
        /// Fixes older than this (seconds, by the source's clock) are not delivered.
        package var maximumLocationAge: TimeInterval = 10
        /// nil: three receiver cycles, at least 1 s (see `FixStalenessMonitor`).
        package var staleFixTimeout: TimeInterval?
        package var receiverSelection: ReceiverSelection = .bestFix
        /// See `TimeOrderStage.jumpTolerance`.
        package var timeJumpTolerance: TimeInterval = 5
        /// How long `requestLocation()` waits for `desiredAccuracy`.
        package var requestLocationTimeout: TimeInterval = 10
        /// Legacy region monitoring (`startMonitoring(for:)`) needs Always, as on Apple
        /// platforms; `CLMonitor` and gpsloc accept When In Use while in use.
        package var regionsRequireAlways = false
        /// `pausesLocationUpdatesAutomatically` (the manager's default is true; gpsloc's false).
        package var pausesAutomatically = false
        package var activityType: CLActivityType = .other
        /// Continuous updates pause once the device has stayed put this long (by the locations'
        /// own time; `StationaryDetector`), and resume when it moves; nil: never.
        var pauseAfter: TimeInterval? { pausesAutomatically ? Self.pauseDelay(for: activityType) : nil }
        /// `CLLocationUpdate.liveUpdates`: once the device is stationary (`StationaryDetector`)
        /// the location that shows it is delivered, marked stationary, and then none until the
        /// device moves (Apple: updates "can suspend … until the person starts moving"). Never
        /// for `.airborne`. Takes the place of `pauseAfter`.
        package var pausesWhileStationary = false
        package init() {}

        /// How long a device stays put before its updates pause, by Apple's activity types:
        /// a vehicle or a walker that stopped for 5 minutes has arrived somewhere; anything
        /// else, 10 minutes; an aircraft's updates never pause.
        static func pauseDelay(for activity: CLActivityType) -> TimeInterval? {
            switch activity {
            case .airborne: nil
            case .automotiveNavigation, .otherNavigation, .fitness: 300
            default: 600
            }
        }
    }
}
