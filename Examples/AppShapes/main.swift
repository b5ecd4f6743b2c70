// App-shaped CoreLocation code, as Swift 6 apps write it for Apple platforms (only the import
// differs), run by the test suite against a real gpsd: each mode is one way apps are written.
// It prints one line per callback and exits 0 after three locations; a callback on the wrong
// thread traps in the Swift runtime's actor-isolation check, as it would on Apple platforms.
//
//   app-shapes main-runloop    a @MainActor model, the main run loop (RunLoop.main.run())
//   app-shapes dispatch-main   the same model, dispatchMain()
//   app-shapes async-wrapper   an async wrapper that sets the delegate before its own set-up
//                              ends, awaited from an async top level (the main actor)
//   app-shapes thread-runloop  a manager made inside a worker thread's running run loop
//   app-shapes blocked         the main thread never runs its loop (blocked on a semaphore)
//   app-shapes subclass        a CLLocationManager subclass with override init(), CLVisit double
import Foundation
import GPSLocation

func say(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

/// True on the main queue — the main actor's executor. (Under `dispatchMain()` Linux serves the
/// main queue from another thread once the main thread has exited, so `Thread.isMainThread`
/// would say false there while the main actor is right.)
let mainQueueKey = DispatchSpecificKey<Bool>()
DispatchQueue.main.setSpecific(key: mainQueueKey, value: true)
func onMainQueue() -> Bool { DispatchQueue.getSpecific(key: mainQueueKey) == true }

/// The usual Swift 6 app model: main-actor isolated, a delegate by a `@preconcurrency`
/// conformance (Xcode's fix-it for CoreLocation's nonisolated protocol).
@MainActor final class Model: NSObject, @preconcurrency CLLocationManagerDelegate {
    let manager = CLLocationManager()
    private(set) var received = 0

    override init() {
        super.init()
        manager.delegate = self
        manager.requestWhenInUseAuthorization()
        manager.startUpdatingLocation()
    }

    func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
        say("authorization \(manager.authorizationStatus.rawValue) main=\(onMainQueue())")
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        for _ in locations {
            received += 1
            say("location main=\(onMainQueue())")
            if received == 3 { exit(0) }
        }
    }

    func locationManager(_ manager: CLLocationManager, didFailWithError error: Error) {
        say("error main=\(onMainQueue()) \(error.localizedDescription)")
    }
}

/// The shape of a popular async wrapper: the delegate is set while the wrapper is still being
/// built, and the callbacks use what the rest of `init` sets up (forced: it is there by then on
/// Apple platforms, whose callbacks come later, on the creating thread).
@MainActor final class AsyncLocationProvider: NSObject, @preconcurrency CLLocationManagerDelegate {
    private let manager: CLLocationManager
    private var continuations: [CheckedContinuation<CLLocation, Error>]!
    private var authorizationLog: [CLAuthorizationStatus]!

    override init() {
        manager = CLLocationManager()
        super.init()
        manager.delegate = self  // before the rest of the set-up, as the wrapper does
        authorizationLog = []
        continuations = []
    }

    func location() async throws -> CLLocation {
        try await withCheckedThrowingContinuation { continuation in
            continuations.append(continuation)
            manager.requestWhenInUseAuthorization()
            manager.requestLocation()
        }
    }

    func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
        authorizationLog.append(manager.authorizationStatus)
        say("authorization \(manager.authorizationStatus.rawValue) main=\(onMainQueue())")
    }

    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        guard let location = locations.last else { return }
        for continuation in continuations { continuation.resume(returning: location) }
        continuations.removeAll()
    }

    func locationManager(_ manager: CLLocationManager, didFailWithError error: Error) {
        say("error main=\(onMainQueue()) \(error.localizedDescription)")
    }
}

/// A delegate for a manager on a worker thread's run loop: it checks the thread it is called on.
final class ThreadDelegate: NSObject, CLLocationManagerDelegate, @unchecked Sendable {
    // @unchecked Sendable: touched only on the worker thread (the point of the test).
    var thread: Thread?
    var received = 0
    func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {
        for _ in locations {
            received += 1
            say("location worker=\(Thread.current == thread)")
            if received == 3 { exit(0) }
        }
    }
    func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {
        say("authorization \(manager.authorizationStatus.rawValue) worker=\(Thread.current == thread)")
    }
    func locationManager(_ manager: CLLocationManager, didFailWithError error: Error) {
        say("error worker=\(Thread.current == thread) \(error.localizedDescription)")
    }
}

/// Apps subclass the manager (and its value types, as test doubles) as they do on Apple platforms.
final class AppLocationManager: CLLocationManager {
    let label: String
    override init() {
        label = "app"
        super.init()
        desiredAccuracy = kCLLocationAccuracyHundredMeters
    }
}

final class VisitDouble: CLVisit {
    override var coordinate: CLLocationCoordinate2D { CLLocationCoordinate2D(latitude: 51.5, longitude: -0.12) }
    override var horizontalAccuracy: CLLocationAccuracy { 50 }
}

let mode = CommandLine.arguments.dropFirst().first ?? "main-runloop"
switch mode {
case "main-runloop":
    let model = Model()
    withExtendedLifetime(model) { RunLoop.main.run() }
case "dispatch-main":
    let model = Model()
    withExtendedLifetime(model) { dispatchMain() }
case "async-wrapper":
    let provider = AsyncLocationProvider()
    for _ in 0..<3 {
        let location = try await provider.location()
        say(String(format: "location main=%@ %.6f", "\(onMainQueue())", location.coordinate.latitude))
    }
    exit(0)
case "thread-runloop":
    let delegate = ThreadDelegate()
    let worker = Thread {
        delegate.thread = Thread.current
        // Made inside the run loop (a timer's callout), as an app's worker thread would.
        let timer = Timer(timeInterval: 0, repeats: false) { _ in
            let manager = CLLocationManager()
            manager.delegate = delegate
            manager.requestAlwaysAuthorization()
            manager.startUpdatingLocation()
            Thread.current.threadDictionary["manager"] = manager
        }
        RunLoop.current.add(timer, forMode: .default)
        RunLoop.current.run()
    }
    worker.start()
    dispatchMain()
case "blocked":
    let model = Model()
    // The mistake: the main thread waits here and never runs its loop.
    withExtendedLifetime(model) { DispatchSemaphore(value: 0).wait() }
case "subclass":
    let manager = AppLocationManager()
    let visit = VisitDouble()
    say(
        "subclass \(manager.label) \(manager.desiredAccuracy) visit \(visit.coordinate.latitude) \(visit.horizontalAccuracy)"
    )
    exit(0)
default:
    say("unknown mode \(mode)")
    exit(2)
}
