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
    func locationManager(_ manager: CLLocationManager, didEnterRegion region: CLRegion)
    func locationManager(_ manager: CLLocationManager, didExitRegion region: CLRegion)
    func locationManager(_ manager: CLLocationManager, didStartMonitoringFor region: CLRegion)
    /// `regionMonitoringDenied` (not authorized Always with full accuracy: the region stays
    /// registered and is monitored once it is) or `regionMonitoringFailure` (it cannot be).
    func locationManager(
        _ manager: CLLocationManager, monitoringDidFailFor region: CLRegion?, withError error: any Error)
    func locationManager(_ manager: CLLocationManager, didVisit visit: CLVisit)
    /// Never called: no compass (`CLLocationManager.headingAvailable()` is false).
    func locationManager(_ manager: CLLocationManager, didUpdateHeading newHeading: CLHeading)
    func locationManagerShouldDisplayHeadingCalibration(_ manager: CLLocationManager) -> Bool
    /// Never called with beacons: ranging is not available (`didFailRangingFor` says so).
    func locationManager(
        _ manager: CLLocationManager, didRange beacons: [CLBeacon], satisfying constraint: CLBeaconIdentityConstraint)
    func locationManager(
        _ manager: CLLocationManager, didFailRangingFor constraint: CLBeaconIdentityConstraint, error: any Error)
    /// Apple's automatic pause and resume of live updates (`pausesLocationUpdatesAutomatically`).
    func locationManagerDidPauseLocationUpdates(_ manager: CLLocationManager)
    func locationManagerDidResumeLocationUpdates(_ manager: CLLocationManager)
    /// Apple's deferred updates: only ever `CLError.deferredFailed` (not available).
    func locationManager(_ manager: CLLocationManager, didFinishDeferredUpdatesWithError error: (any Error)?)
}

extension CLLocationManagerDelegate {
    public func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {}
    public func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {}
    public func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {}
    public func locationManager(_ manager: CLLocationManager, didChangeAuthorization status: CLAuthorizationStatus) {}
    public func locationManager(_ manager: CLLocationManager, didChangeReceiver receiver: DeviceEvent) {}
    public func locationManager(
        _ manager: CLLocationManager, didDetermineState state: CLRegionState, for region: CLRegion
    ) {}
    public func locationManager(_ manager: CLLocationManager, didEnterRegion region: CLRegion) {}
    public func locationManager(_ manager: CLLocationManager, didExitRegion region: CLRegion) {}
    public func locationManager(_ manager: CLLocationManager, didStartMonitoringFor region: CLRegion) {}
    public func locationManager(
        _ manager: CLLocationManager, monitoringDidFailFor region: CLRegion?, withError error: any Error
    ) {}
    public func locationManager(_ manager: CLLocationManager, didVisit visit: CLVisit) {}
    public func locationManager(_ manager: CLLocationManager, didUpdateHeading newHeading: CLHeading) {}
    public func locationManagerShouldDisplayHeadingCalibration(_ manager: CLLocationManager) -> Bool { false }
    public func locationManager(
        _ manager: CLLocationManager, didRange beacons: [CLBeacon], satisfying constraint: CLBeaconIdentityConstraint
    ) {}
    public func locationManager(
        _ manager: CLLocationManager, didFailRangingFor constraint: CLBeaconIdentityConstraint, error: any Error
    ) {}
    public func locationManagerDidPauseLocationUpdates(_ manager: CLLocationManager) {}
    public func locationManagerDidResumeLocationUpdates(_ manager: CLLocationManager) {}
    public func locationManager(
        _ manager: CLLocationManager, didFinishDeferredUpdatesWithError error: (any Error)?
    ) {}
}
