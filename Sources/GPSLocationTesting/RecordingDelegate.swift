import Dispatch
import Foundation
import GNSSCore
import GPSLocation

/// A `CLLocationManagerDelegate` that records every callback, for tests of code that embeds
/// GPSLocation: the locations (in batches), the errors, authorization, receiver and region
/// callbacks, each with its arrival time (an event log a test can reason about instead of
/// sleeping), and whether any callback overlapped another or came on the wrong queue.
public final class RecordingDelegate: CLLocationManagerDelegate, Sendable {
    private struct Record {
        var batches: [[CLLocation]] = []
        /// Each location with the time its batch arrived.
        var locationArrivals: [(Date, CLLocation)] = []
        var errorArrivals: [(Date, CLError)] = []
        var errorContexts: [ErrorContext] = []
        var receiverArrivals: [(Date, DeviceEvent)] = []
        var regionLog: [String] = []
        var authorizationCalls = 0
        var deprecatedCalls = 0
        var wrongQueue = 0
        var overlap = 0
        var inside = false
        var callbackDelay: Double = 0
    }
    private let record = Locked(Record())
    private let changes = ChangeWaiters()
    private let arrived = NSCondition()
    /// When set, every callback must run on the queue carrying this key (counted in `wrongQueue`).
    public let expectedQueue: DispatchSpecificKey<Bool>?

    /// A recorder; with `expectedQueue`, calls on any other queue are counted in `wrongQueue`.
    public init(expectedQueue: DispatchSpecificKey<Bool>? = nil) { self.expectedQueue = expectedQueue }

    /// Each callback sleeps this long (seconds): a slow app.
    public var callbackDelay: Double {
        get { record.withLock { $0.callbackDelay } }
        set { record.withLock { $0.callbackDelay = newValue } }
    }
    /// Each `didUpdateLocations` call's locations, in order.
    public var batches: [[CLLocation]] { record.withLock { $0.batches } }
    /// Every location, in order.
    public var locations: [CLLocation] { batches.flatMap { $0 } }
    /// Every `CLError`, in order.
    public var errors: [CLError] { record.withLock { $0.errorArrivals.map(\.1) } }
    /// Each error with where it came in the stream and what the manager said at that moment.
    public struct ErrorContext: Sendable {
        /// The error.
        public let error: CLError
        /// How many locations had been delivered before it.
        public let locationsBefore: Int
        /// `manager.location != nil`, `manager.isLocationStale` and `manager.locationAge`, read in
        /// the callback.
        public let managerHadLocation: Bool
        /// `manager.isLocationStale` then.
        public let locationWasStale: Bool
        /// `manager.locationAge` then.
        public let locationAge: TimeInterval?
    }
    /// Every error with its context.
    public var errorContexts: [ErrorContext] { record.withLock { $0.errorContexts } }
    /// Every receiver event, in order.
    public var receivers: [DeviceEvent] { record.withLock { $0.receiverArrivals.map(\.1) } }
    /// Every location with the time it arrived, oldest first.
    public var locationArrivals: [(arrival: Date, location: CLLocation)] {
        record.withLock { $0.locationArrivals.map { (arrival: $0.0, location: $0.1) } }
    }
    /// Every error with the time it arrived.
    public var errorArrivals: [(arrival: Date, error: CLError)] {
        record.withLock { $0.errorArrivals.map { (arrival: $0.0, error: $0.1) } }
    }
    /// Every receiver event with the time it arrived.
    public var receiverArrivals: [(arrival: Date, event: DeviceEvent)] {
        record.withLock { $0.receiverArrivals.map { (arrival: $0.0, event: $0.1) } }
    }
    /// Region callbacks in order: `start ID`, `state ID inside|outside|unknown`, `enter ID`,
    /// `exit ID`, `fail ID|- CODE REASON`.
    public var regionLog: [String] { record.withLock { $0.regionLog } }
    /// How many `locationManagerDidChangeAuthorization` calls came.
    public var authorizationCalls: Int { record.withLock { $0.authorizationCalls } }
    /// How many deprecated `didChangeAuthorization status:` calls came.
    public var deprecatedCalls: Int { record.withLock { $0.deprecatedCalls } }
    /// Callbacks that did not come on `expectedQueue`.
    public var wrongQueue: Int { record.withLock { $0.wrongQueue } }
    /// Callbacks that started while another was still running (must be 0: delegates are serial).
    public var overlap: Int { record.withLock { $0.overlap } }
    /// How many callbacks of any kind came.
    public var callbackCount: Int {
        record.withLock {
            $0.batches.count + $0.errorArrivals.count + $0.authorizationCalls + $0.receiverArrivals.count
                + $0.regionLog.count
        }
    }

    /// Waits (polling, up to `timeout` seconds) until at least `count` locations have arrived.
    @discardableResult
    public func waitForLocations(_ count: Int, timeout: Double = 10) -> Bool {
        poll(timeout: timeout) { self.locations.count >= count }
    }

    /// Waits until an error with `reason` has arrived.
    @discardableResult
    public func waitForError(_ reason: CLError.Reason, timeout: Double = 10) -> Bool {
        poll(timeout: timeout) { self.errors.contains { $0.reason == reason } }
    }

    /// Waits, suspended rather than blocking a thread, until at least `count` locations have
    /// arrived. In async code use this one: a blocked thread is one fewer for every other task
    /// (a 2-core machine has two).
    @discardableResult
    public func waitForLocations(_ count: Int, timeout: Double = 10) async -> Bool {
        await wait(timeout: timeout) { $0.locations.count >= count }
    }

    /// Waits, suspended, until an error with `reason` has arrived.
    @discardableResult
    public func waitForError(_ reason: CLError.Reason, timeout: Double = 10) async -> Bool {
        await wait(timeout: timeout) { $0.errors.contains { $0.reason == reason } }
    }

    /// Waits, suspended, until `condition` holds of what has been recorded: it is checked again
    /// after every callback, so the wait ends with the callback that makes it true — no polling,
    /// no sleeping. False if it still does not hold after `timeout` seconds (a bound on a hang,
    /// not a pace: a condition that comes true never waits for it).
    @discardableResult
    public func wait(timeout: Double = 60, until condition: @escaping @Sendable (RecordingDelegate) -> Bool) async
        -> Bool
    {
        await changes.wait(hangLimit: timeout) { [self] in condition(self) }
    }

    /// Blocks until `condition` holds, woken by each callback (never on a timer); false if it
    /// still does not after `timeout` seconds.
    private func poll(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        arrived.lock()
        defer { arrived.unlock() }
        while !condition() {
            if !arrived.wait(until: deadline) { return condition() }
        }
        return true
    }

    /// After each change of the record: wakes the waits, blocking and suspended.
    private func notify() {
        arrived.lock()
        arrived.broadcast()
        arrived.unlock()
        changes.changed()
    }

    private func enter() {
        let delay = record.withLock { record in
            if record.inside { record.overlap += 1 }
            record.inside = true
            if let expectedQueue, DispatchQueue.getSpecific(key: expectedQueue) != true { record.wrongQueue += 1 }
            return record.callbackDelay
        }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
    }
    private func leave() {
        record.withLock { $0.inside = false }
        notify()
    }

    /// Records the call, with the time it arrived.
    public func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        enter()
        let now = Date()
        record.withLock {
            $0.batches.append(locations)
            $0.locationArrivals += locations.map { (now, $0) }
        }
        leave()
    }
    /// Records the call, with the time it arrived.
    public func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        enter()
        let now = Date()
        if let error = error as? CLError {
            let hadLocation = manager.location != nil
            let stale = manager.isLocationStale
            let age = manager.locationAge
            record.withLock {
                $0.errorArrivals.append((now, error))
                $0.errorContexts.append(
                    ErrorContext(
                        error: error, locationsBefore: $0.locationArrivals.count, managerHadLocation: hadLocation,
                        locationWasStale: stale, locationAge: age))
            }
        }
        leave()
    }
    /// Records the call, with the time it arrived.
    public func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
        enter()
        record.withLock { $0.authorizationCalls += 1 }
        leave()
    }
    /// Records the call, with the time it arrived.
    public func locationManager(_ manager: CLLocationManager, didChangeAuthorization status: CLAuthorizationStatus) {
        record.withLock { $0.deprecatedCalls += 1 }
        notify()
    }
    /// Records the call, with the time it arrived.
    public func locationManager(_ manager: CLLocationManager, didChangeReceiver receiver: DeviceEvent) {
        enter()
        let now = Date()
        record.withLock { $0.receiverArrivals.append((now, receiver)) }
        leave()
    }
    /// Records the call, with the time it arrived.
    public func locationManager(_ manager: CLLocationManager, didEnterRegion region: CLRegion) {
        log("enter \(region.identifier)")
    }
    /// Records the call, with the time it arrived.
    public func locationManager(_ manager: CLLocationManager, didExitRegion region: CLRegion) {
        log("exit \(region.identifier)")
    }
    /// Records the call, with the time it arrived.
    public func locationManager(
        _ manager: CLLocationManager, didDetermineState state: CLRegionState, for region: CLRegion
    ) {
        log("state \(region.identifier) \(state)")
    }
    /// Records the call, with the time it arrived.
    public func locationManager(_ manager: CLLocationManager, didStartMonitoringFor region: CLRegion) {
        log("start \(region.identifier)")
    }
    /// Records the call, with the time it arrived.
    public func locationManager(
        _ manager: CLLocationManager, monitoringDidFailFor region: CLRegion?, withError error: any Error
    ) {
        let reason = (error as? CLError)?.reason?.name ?? "?"
        let code = (error as? CLError)?.code.name ?? "?"
        log("fail \(region?.identifier ?? "-") \(code) \(reason)")
    }

    private func log(_ line: String) {
        enter()
        record.withLock { $0.regionLog.append(line) }
        leave()
    }
}
