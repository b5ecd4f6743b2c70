import FoundationEssentials
import GNSSCore

extension LocationEngine {
    /// What the app asked for.
    public struct Configuration: Sendable, Equatable {
        /// `kCLLocationAccuracy*` or metres; `requestLocation()` waits for it.
        /// `kCLLocationAccuracyReduced`: approximate locations even with full accuracy
        /// authorization, as Apple documents it (the gate's `reducedRequested`).
        public var desiredAccuracy: CLLocationAccuracy = kCLLocationAccuracyBest
        /// See `DeliveryFilter`.
        public var distanceFilter: CLLocationDistance = kCLDistanceFilterNone
        /// At most one delivered location per this many seconds of the locations' own time
        /// (0: no limit). Both this and the distance filter must pass.
        public var minimumUpdateInterval: TimeInterval = 0
        /// Fixes older than this (seconds, by the source's clock) are not delivered.
        public var maximumLocationAge: TimeInterval = 10
        /// nil: three receiver cycles, at least 1 s (see `FixStalenessMonitor`).
        public var staleFixTimeout: TimeInterval?
        /// Which receiver's fixes to follow when gpsd has several.
        public var receiverSelection: ReceiverSelection = .bestFix
        /// See `TimeOrderStage.jumpTolerance`.
        public var timeJumpTolerance: TimeInterval = 5
        /// How long `requestLocation()` waits for `desiredAccuracy`.
        public var requestLocationTimeout: TimeInterval = 10
        /// Legacy region monitoring (`startMonitoring(for:)`) needs Always, as on Apple
        /// platforms; `CLMonitor` and gpsloc accept When In Use while in use.
        public var regionsRequireAlways = false
        /// `pausesLocationUpdatesAutomatically` (the manager's default is true; gpsloc's false).
        public var pausesAutomatically = false
        /// `CLLocationManager.activityType` (how long a pause waits, airborne never pauses).
        public var activityType: CLActivityType = .other
        /// Continuous updates pause once the device has stayed put this long (by the locations'
        /// own time; `StationaryDetector`), and resume when it moves; nil: never.
        var pauseAfter: TimeInterval? { pausesAutomatically ? Self.pauseDelay(for: activityType) : nil }
        /// `CLLocationUpdate.liveUpdates`: once the device is stationary (`StationaryDetector`)
        /// the location that shows it is delivered, marked stationary, and then none until the
        /// device moves (Apple: updates "can suspend … until the person starts moving"). Never
        /// for `.airborne`. Takes the place of `pauseAfter`.
        public var pausesWhileStationary = false
        /// Apple's defaults.
        public init() {}

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
