import Foundation
import GPSLocation
import GPSLocationTesting
import TestSupport

/// Runs `body` on a new thread and waits for it without blocking a concurrency thread.
func offConcurrencyThreads<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// Waits until every callback already queued for `manager`'s delegate has run (the delegate
/// queue's work up to now), without blocking a concurrency thread. With the source stopped or
/// ended, nothing can follow: what the delegate holds then is final — no sleep needed to prove it.
func delegateQueueFlushed(_ manager: CLLocationManager) async {
    let queue = manager.delegateQueue
    _ = try? await offConcurrencyThreads { queue.sync {} }
}

/// Waits, without blocking a concurrency thread, until what the timers fired so far made has
/// reached `manager`'s delegate (with a `ManualEngineClock`: everything up to the clock's now).
func settled(_ manager: CLLocationManager) async {
    let reference = ManagerReference(value: manager)
    _ = try? await offConcurrencyThreads { reference.value.settle() }
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

/// Readings of `RecordingDelegate`'s event log that the receiver and resilience tests share.
extension RecordingDelegate {
    var locationCount: Int { locations.count }
    var errorCount: Int { errors.count }
    var times: [Date] { locations.map(\.timestamp) }
    var devices: [String] { locations.map { $0.gnss?.device ?? "?" } }
    var receiverEvents: [DeviceEvent] { receivers }
    var firstDeactivation: Date? { receiverArrivals.first { !$0.event.activated }?.arrival }
    var lastErrorArrival: Date? { errorArrivals.last?.arrival }
    /// When the location at `index` (0-based, in delivery order) arrived.
    func arrival(of index: Int) -> Date? {
        let arrivals = locationArrivals
        return index < arrivals.count ? arrivals[index].arrival : nil
    }
}
