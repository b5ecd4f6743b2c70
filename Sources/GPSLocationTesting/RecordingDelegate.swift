import Dispatch
import Foundation
import GNSSCore
import GPSLocation

/// A `CLLocationManagerDelegate` that records every callback, for tests of code that embeds
/// GPSLocation: the locations (in batches), the errors, authorization and receiver callbacks,
/// and whether any callback overlapped another or came on the wrong queue.
public final class RecordingDelegate: CLLocationManagerDelegate, Sendable {
    private struct Record {
        var batches: [[CLLocation]] = []
        var errors: [CLError] = []
        var authorizationCalls = 0
        var deprecatedCalls = 0
        var receivers: [DeviceEvent] = []
        var wrongQueue = 0
        var overlap = 0
        var inside = false
        var callbackDelay: Double = 0
    }
    private let record = Locked(Record())
    /// When set, every callback must run on the queue carrying this key (counted in `wrongQueue`).
    public let expectedQueue: DispatchSpecificKey<Bool>?

    public init(expectedQueue: DispatchSpecificKey<Bool>? = nil) { self.expectedQueue = expectedQueue }

    /// Each callback sleeps this long (seconds): a slow app.
    public var callbackDelay: Double {
        get { record.withLock { $0.callbackDelay } }
        set { record.withLock { $0.callbackDelay = newValue } }
    }
    public var batches: [[CLLocation]] { record.withLock { $0.batches } }
    public var locations: [CLLocation] { batches.flatMap { $0 } }
    public var errors: [CLError] { record.withLock { $0.errors } }
    public var receivers: [DeviceEvent] { record.withLock { $0.receivers } }
    public var authorizationCalls: Int { record.withLock { $0.authorizationCalls } }
    public var deprecatedCalls: Int { record.withLock { $0.deprecatedCalls } }
    /// Callbacks that did not come on `expectedQueue`.
    public var wrongQueue: Int { record.withLock { $0.wrongQueue } }
    /// Callbacks that started while another was still running (must be 0: delegates are serial).
    public var overlap: Int { record.withLock { $0.overlap } }
    public var callbackCount: Int {
        record.withLock { $0.batches.count + $0.errors.count + $0.authorizationCalls + $0.receivers.count }
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

    private func poll(timeout: Double, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return condition()
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
    private func leave() { record.withLock { $0.inside = false } }

    public func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        enter()
        record.withLock { $0.batches.append(locations) }
        leave()
    }
    public func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        enter()
        if let error = error as? CLError { record.withLock { $0.errors.append(error) } }
        leave()
    }
    public func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
        enter()
        record.withLock { $0.authorizationCalls += 1 }
        leave()
    }
    public func locationManager(_ manager: CLLocationManager, didChangeAuthorization status: CLAuthorizationStatus) {
        record.withLock { $0.deprecatedCalls += 1 }
    }
    public func locationManager(_ manager: CLLocationManager, didChangeReceiver receiver: DeviceEvent) {
        enter()
        record.withLock { $0.receivers.append(receiver) }
        leave()
    }
}
