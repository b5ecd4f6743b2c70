// The soak benchmark's processes (scripts/soak.py runs them and measures from outside):
//
//   gpsloc-bench serve FILE --rate HZ   a simulated receiver on a pseudo-terminal playing FILE
//                                       one cycle every 1/HZ s, read by a real gpsd; prints
//                                       "port N" and "device PATH"; SIGUSR1 silences the
//                                       receiver (gpsd stays up); SIGTERM ends it.
//   gpsloc-bench consume --port N --sleep S
//                                       a CLLocationManager on that gpsd whose delegate sleeps S
//                                       seconds in every callback; SIGTERM prints what it got.
import Foundation
import GPSLocation
import GPSLocationTesting

func flag(_ name: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

/// Waits for SIGTERM/SIGINT (and runs `onUSR1` on SIGUSR1) on the main thread.
func waitForSignals(onUSR1: @escaping @Sendable () -> Void = {}) {
    for number in [SIGTERM, SIGINT, SIGUSR1] { signal(number, SIG_IGN) }
    var sources: [any DispatchSourceSignal] = []
    let done = DispatchSemaphore(value: 0)
    for number in [SIGTERM, SIGINT, SIGUSR1] {
        let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
        source.setEventHandler { if number == SIGUSR1 { onUSR1() } else { done.signal() } }
        source.resume()
        sources.append(source)
    }
    done.wait()
    for source in sources { source.cancel() }
}

func serve(_ arguments: [String]) throws {
    guard let path = arguments.first else { throw BenchError("serve needs a recording") }
    let rate = Double(flag("--rate", in: arguments) ?? "10") ?? 10
    let receiver = try PseudoTerminalReceiver(
        recording: try String(contentsOfFile: path, encoding: .utf8), interval: 1 / rate)
    let server = try GPSDServer(devices: [receiver.path])
    try server.waitUntilListening()
    receiver.start(loop: false)
    // Unbuffered: the script reads these lines while the process runs.
    FileHandle.standardOutput.write(Data("port \(server.endpoint.port)\ndevice \(receiver.path)\n".utf8))
    waitForSignals(onUSR1: { receiver.stop() })
    receiver.stop()
    server.stop()
    let counts = receiver.counts
    print("cycles written \(counts.written), dropped \(counts.dropped)")
}

/// Sleeps in every callback, counting what arrives.
final class SleepyDelegate: CLLocationManagerDelegate, @unchecked Sendable {
    // @unchecked Sendable: callbacks are serial on the manager's delegate queue; the counters are
    // read after stopUpdatingLocation() has returned.
    let sleep: Double
    var locations = 0
    var batches = 0
    var largestBatch = 0
    var errors: [String] = []
    init(sleep: Double) { self.sleep = sleep }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations batch: [CLLocation]) {
        locations += batch.count
        batches += 1
        largestBatch = max(largestBatch, batch.count)
        Thread.sleep(forTimeInterval: sleep)
    }
    func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {
        errors.append("\(error)")
    }
}

func consume(_ arguments: [String]) throws {
    guard let port = Int(flag("--port", in: arguments) ?? "") else { throw BenchError("consume needs --port") }
    let sleep = Double(flag("--sleep", in: arguments) ?? "0.5") ?? 0.5
    let manager = CLLocationManager(
        source: GPSDLocationSource(endpoint: GPSDEndpoint(host: "127.0.0.1", port: port)),
        authorizer: LocationAuthorizer(
            appID: "gpsloc-bench", initial: AuthorizationDecision(status: .authorizedAlways)),
        delegateQueue: DispatchQueue(label: "consume")  // the main thread waits for signals
    )
    manager.maximumLocationAge = 1e9  // simulated recordings carry their own (past) dates
    let delegate = SleepyDelegate(sleep: sleep)
    manager.delegate = delegate
    manager.startUpdatingLocation()
    waitForSignals()
    manager.stopUpdatingLocation()
    print(
        "locations \(delegate.locations) batches \(delegate.batches) largest batch \(delegate.largestBatch) errors \(delegate.errors.count)"
    )
    for error in delegate.errors.prefix(5) { print("error: \(error)") }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
