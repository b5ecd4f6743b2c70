import Foundation
import GPSLocation
import GPSLocationTesting
import TestSupport

/// A delegate that records every callback, thread-safely, with the queue it came on.
final class RecordingDelegate: CLLocationManagerDelegate, @unchecked Sendable {
    private let lock = NSLock()
    private var _batches: [[CLLocation]] = []
    private var _errors: [CLError] = []
    private var _authorizationCalls = 0
    private var _deprecatedCalls = 0
    private var _wrongQueue = 0
    private var _overlap = 0
    private var inside = false
    /// When set, every callback must run on the queue carrying this key.
    let expectedQueue: DispatchSpecificKey<Bool>?
    var callbackDelay: Double = 0

    init(expectedQueue: DispatchSpecificKey<Bool>? = nil) { self.expectedQueue = expectedQueue }

    var batches: [[CLLocation]] { lock.withLock { _batches } }
    var locations: [CLLocation] { batches.flatMap { $0 } }
    var errors: [CLError] { lock.withLock { _errors } }
    var authorizationCalls: Int { lock.withLock { _authorizationCalls } }
    var deprecatedCalls: Int { lock.withLock { _deprecatedCalls } }
    var wrongQueue: Int { lock.withLock { _wrongQueue } }
    var overlap: Int { lock.withLock { _overlap } }
    var callbackCount: Int { lock.withLock { _batches.count + _errors.count + _authorizationCalls } }

    private func enter() {
        lock.withLock {
            if inside { _overlap += 1 }
            inside = true
            if let expectedQueue, DispatchQueue.getSpecific(key: expectedQueue) != true { _wrongQueue += 1 }
        }
        if callbackDelay > 0 { Thread.sleep(forTimeInterval: callbackDelay) }
    }
    private func leave() { lock.withLock { inside = false } }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        enter()
        lock.withLock { _batches.append(locations) }
        leave()
    }
    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        enter()
        lock.withLock { _errors.append(error as! CLError) }
        leave()
    }
    func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
        enter()
        lock.withLock { _authorizationCalls += 1 }
        leave()
    }
    func locationManager(_ manager: CLLocationManager, didChangeAuthorization status: CLAuthorizationStatus) {
        lock.withLock { _deprecatedCalls += 1 }
    }
}

/// Polls `condition` every 5 ms until it holds or `timeout` passes.
func waitUntil(timeout: Double = 10, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.005)
    }
    return condition()
}

/// The same, without blocking a concurrency thread.
func waitUntilAsync(timeout: Double = 10, _ condition: () -> Bool) async -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

enum FixtureFixes {
    /// gpsd's own TPVs for a fixture (recorded from gpsfake), decoded by the real libgps.
    static func load(_ name: String) throws -> [Fix] {
        let text = try String(contentsOf: Paths.fixtures.appendingPathComponent(name + ".gpsd.json"), encoding: .utf8)
        return GPSDJSONDecoder().fixes(in: text)
    }
}

func grantedAuthorizer(
    _ status: CLAuthorizationStatus = .authorizedWhenInUse, accuracy: CLAccuracyAuthorization = .fullAccuracy
) -> LocationAuthorizer {
    LocationAuthorizer(appID: "test", initial: AuthorizationDecision(status: status, accuracy: accuracy), isInUse: true)
}
