import Foundation

/// Apple's delegate protocol. Every method is optional (default implementations do nothing).
public protocol CLLocationManagerDelegate: AnyObject {
    /// Locations in chronological order, the newest last; never empty.
    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation])
    /// `CLError` values (as `any Error`, like Apple's signature).
    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error)
    /// Called once after the manager is created, and on every change of status or accuracy.
    func locationManagerDidChangeAuthorization(_ manager: CLLocationManager)
    /// Deprecated by Apple in iOS 14; called alongside `locationManagerDidChangeAuthorization`.
    func locationManager(_ manager: CLLocationManager, didChangeAuthorization status: CLAuthorizationStatus)
    /// A GPSLocation addition: gpsd activated or deactivated a receiver (plugged in, unplugged,
    /// `gpsdctl add/remove`). When the receiver being followed goes away, the delegate also
    /// gets `CLError.locationUnknown` saying so.
    func locationManager(_ manager: CLLocationManager, didChangeReceiver receiver: DeviceEvent)
    /// A monitored region's state became known (the first time, after a gap, in answer to
    /// `requestState(for:)`) or changed — alongside every enter and exit.
    func locationManager(_ manager: CLLocationManager, didDetermineState state: CLRegionState, for region: CLRegion)
    /// The device entered a monitored region (needs Always with full accuracy).
    func locationManager(_ manager: CLLocationManager, didEnterRegion region: CLRegion)
    /// The device left a monitored region.
    func locationManager(_ manager: CLLocationManager, didExitRegion region: CLRegion)
    /// Monitoring of `region` started (it is kept across restarts).
    func locationManager(_ manager: CLLocationManager, didStartMonitoringFor region: CLRegion)
    /// `regionMonitoringDenied` (not authorized Always with full accuracy: the region stays
    /// registered and is monitored once it is) or `regionMonitoringFailure` (it cannot be).
    func locationManager(
        _ manager: CLLocationManager, monitoringDidFailFor region: CLRegion?, withError error: any Error)
    /// An arrival at or a departure from a place (`startMonitoringVisits()`).
    func locationManager(_ manager: CLLocationManager, didVisit visit: CLVisit)
    /// A new heading from a receiver that reports one (HDT, THS or HDG sentences; gpsd's ATT),
    /// after `startUpdatingHeading()`; `headingFilter` degrees apart.
    func locationManager(_ manager: CLLocationManager, didUpdateHeading newHeading: CLHeading)
    /// Never asked: a GNSS heading needs no compass calibration.
    func locationManagerShouldDisplayHeadingCalibration(_ manager: CLLocationManager) -> Bool
    /// Never called with beacons: ranging is not available (`didFailRangingFor` says so).
    func locationManager(
        _ manager: CLLocationManager, didRange beacons: [CLBeacon], satisfying constraint: CLBeaconIdentityConstraint)
    /// Ranging cannot work: `CLError.rangingUnavailable`.
    func locationManager(
        _ manager: CLLocationManager, didFailRangingFor constraint: CLBeaconIdentityConstraint, error: any Error)
    /// Live updates paused automatically: the device stopped for a while
    /// (`pausesLocationUpdatesAutomatically`, `activityType`).
    func locationManagerDidPauseLocationUpdates(_ manager: CLLocationManager)
    /// Live updates resumed after an automatic pause (the device moved).
    func locationManagerDidResumeLocationUpdates(_ manager: CLLocationManager)
    /// Apple's deferred updates: only ever `CLError.deferredFailed` (not available).
    func locationManager(_ manager: CLLocationManager, didFinishDeferredUpdatesWithError error: (any Error)?)
}

/// Every method does nothing unless the delegate implements it (Apple's methods are optional).
extension CLLocationManagerDelegate {
    /// Does nothing.
    public func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {}
    /// Does nothing.
    public func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {}
    /// Does nothing.
    public func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {}
    /// Does nothing.
    public func locationManager(_ manager: CLLocationManager, didChangeAuthorization status: CLAuthorizationStatus) {}
    /// Does nothing.
    public func locationManager(_ manager: CLLocationManager, didChangeReceiver receiver: DeviceEvent) {}
    /// Does nothing.
    public func locationManager(
        _ manager: CLLocationManager, didDetermineState state: CLRegionState, for region: CLRegion
    ) {}
    /// Does nothing.
    public func locationManager(_ manager: CLLocationManager, didEnterRegion region: CLRegion) {}
    /// Does nothing.
    public func locationManager(_ manager: CLLocationManager, didExitRegion region: CLRegion) {}
    /// Does nothing.
    public func locationManager(_ manager: CLLocationManager, didStartMonitoringFor region: CLRegion) {}
    /// Does nothing.
    public func locationManager(
        _ manager: CLLocationManager, monitoringDidFailFor region: CLRegion?, withError error: any Error
    ) {}
    /// Does nothing.
    public func locationManager(_ manager: CLLocationManager, didVisit visit: CLVisit) {}
    /// Does nothing.
    public func locationManager(_ manager: CLLocationManager, didUpdateHeading newHeading: CLHeading) {}
    /// False.
    public func locationManagerShouldDisplayHeadingCalibration(_ manager: CLLocationManager) -> Bool { false }
    /// Does nothing.
    public func locationManager(
        _ manager: CLLocationManager, didRange beacons: [CLBeacon], satisfying constraint: CLBeaconIdentityConstraint
    ) {}
    /// Does nothing.
    public func locationManager(
        _ manager: CLLocationManager, didFailRangingFor constraint: CLBeaconIdentityConstraint, error: any Error
    ) {}
    /// Does nothing.
    public func locationManagerDidPauseLocationUpdates(_ manager: CLLocationManager) {}
    /// Does nothing.
    public func locationManagerDidResumeLocationUpdates(_ manager: CLLocationManager) {}
    /// Does nothing.
    public func locationManager(
        _ manager: CLLocationManager, didFinishDeferredUpdatesWithError error: (any Error)?
    ) {}
}
