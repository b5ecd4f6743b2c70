import Dispatch
import Foundation

/// Holds the factory behind `CLLocationManager.defaultSource()`.
private final class DefaultSourceFactory: @unchecked Sendable {
    // @unchecked Sendable: `factory` is guarded by `lock`.
    private let lock = NSLock()
    private var factory: @Sendable () -> any LocationSource = { GPSDLocationSource() }
    func set(_ newFactory: @escaping @Sendable () -> any LocationSource) { lock.withLock { factory = newFactory } }
    func make() -> any LocationSource { lock.withLock { factory }() }
}

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
}

extension CLLocationManagerDelegate {
    public func locationManager(_ manager: CLLocationManager, didUpdateLocations locations: [CLLocation]) {}
    public func locationManager(_ manager: CLLocationManager, didFailWithError error: any Error) {}
    public func locationManagerDidChangeAuthorization(_ manager: CLLocationManager) {}
    public func locationManager(_ manager: CLLocationManager, didChangeAuthorization status: CLAuthorizationStatus) {}
    public func locationManager(_ manager: CLLocationManager, didChangeReceiver receiver: DeviceEvent) {}
}

/// CoreLocation's location manager, on Linux, over gpsd.
///
/// **Where callbacks arrive.** Apple calls delegates on the run loop of the thread that made the
/// manager. A Linux CLI or daemon usually runs no run loop, so here every delegate method is
/// called serially on `delegateQueue`: by default a private serial queue of the manager's own,
/// which needs nothing running; set it to `.main` in a program that runs `dispatchMain()` or a
/// main run loop. Locations arrive oldest first; if the delegate is slower than the receiver,
/// waiting locations are batched into one call (at most `maximumBatch`, the oldest dropped
/// beyond that). No callback of any kind arrives after `stopUpdatingLocation()` returns.
///
/// **Silent failures are errors here.** Starting updates while the status is `notDetermined`
/// and no authorization was ever requested reports `CLError.promptDeclined` (code 18) to the
/// delegate and logs one line to stderr; starting without a delegate logs one line too.
open class CLLocationManager: NSObject, @unchecked Sendable {
    // @unchecked Sendable: all mutable state is guarded by `lock`; delegate calls happen on
    // `delegateQueue` outside the lock.

    /// Weak, as Apple's. The first delegate set receives the initial authorization state
    /// (`locationManagerDidChangeAuthorization`) on `delegateQueue`, as Apple reports it after
    /// the manager is created.
    public weak var delegate: (any CLLocationManagerDelegate)? {
        get { lock.withLock { storedDelegate } }
        set {
            let first = lock.withLock { () -> Bool in
                storedDelegate = newValue
                defer { if newValue != nil { initialAuthorizationReported = true } }
                return newValue != nil && !initialAuthorizationReported
            }
            if first { enqueue(.authorization) }
        }
    }
    /// Default `kCLLocationAccuracyBest`. Used by `requestLocation()` and the tier check.
    public var desiredAccuracy: CLLocationAccuracy {
        get { lock.withLock { storedDesiredAccuracy } }
        set { lock.withLock { storedDesiredAccuracy = newValue } }
    }
    /// Metres; `kCLDistanceFilterNone` (the default) delivers every location. See `DistanceFilterStage`.
    public var distanceFilter: CLLocationDistance {
        get { lock.withLock { filter.distanceFilter } }
        set { lock.withLock { filter.distanceFilter = newValue } }
    }
    /// Accepted for source compatibility; gpsd receivers do not change behaviour with it.
    public var activityType: CLActivityType = .other
    /// Accepted for source compatibility; a Linux process is never suspended.
    public var allowsBackgroundLocationUpdates = false
    /// Accepted for source compatibility; updates are never paused automatically on Linux.
    public var pausesLocationUpdatesAutomatically = false
    /// The most recent location delivered, or nil.
    public var location: CLLocation? { lock.withLock { lastLocation } }

    public var authorizationStatus: CLAuthorizationStatus { authorizer.status }
    public var accuracyAuthorization: CLAccuracyAuthorization { authorizer.accuracy }

    // MARK: GPSLocation additions

    /// The queue delegate methods are called on (see the type's documentation).
    public var delegateQueue: DispatchQueue {
        get { lock.withLock { storedQueue } }
        set {
            newValue.setSpecific(key: queueKey, value: ObjectIdentifier(self))
            lock.withLock { storedQueue = newValue }
        }
    }
    /// How long `requestLocation()` waits for `desiredAccuracy` before settling for the best
    /// location seen, or failing with `locationUnknown` (default 10 s).
    public var requestLocationTimeout: TimeInterval = 10
    /// Fixes older than this (seconds, by the source's clock) are stale and not delivered.
    public var maximumLocationAge: TimeInterval {
        get { lock.withLock { validity.maximumAge } }
        set { lock.withLock { validity.maximumAge = newValue } }
    }
    /// At most this many locations wait for a slow delegate; older ones are dropped.
    public var maximumBatch = 100
    /// Seconds without a usable fix, while updating, before the delegate gets
    /// `CLError.locationUnknown` (once per stretch). nil (the default): three receiver cycles,
    /// at least 1 s — see `FixStalenessMonitor`. `location` is kept meanwhile and
    /// `isLocationStale` is true; the next fix is delivered as usual, with no extra callback.
    public var staleFixTimeout: TimeInterval? {
        get { lock.withLock { staleness.timeout } }
        set { lock.withLock { staleness.timeout = newValue } }
    }
    /// Which receiver to follow when gpsd reports several (default `.bestFix`; see
    /// `ReceiverSelectionStage` for the exact rule).
    public var receiverSelection: ReceiverSelection {
        get { lock.withLock { receivers.selection } }
        set { lock.withLock { receivers.selection = newValue } }
    }
    /// The device path whose fixes are being delivered, once one has been chosen.
    public var followedReceiver: String? { lock.withLock { receivers.selected } }
    /// True while updates run and no usable fix has come for `staleFixTimeout`: `location`
    /// is the last one known, not the current position.
    public var isLocationStale: Bool { lock.withLock { staleness.isStale } }
    /// The age of `location` in seconds by the source's clock (the wall clock live, the
    /// recording's in a replay), or nil without a location.
    public var locationAge: TimeInterval? {
        let (location, seen) = lock.withLock { (lastLocation, lastSeenFix) }
        guard let location else { return nil }
        let now = seen.map { source.now(latestFix: $0) } ?? Date()
        return now.timeIntervalSince(location.timestamp)
    }
    public let source: any LocationSource
    public let authorizer: LocationAuthorizer

    /// The process-wide authorizer managers use unless given one.
    public static let sharedAuthorizer = LocationAuthorizer()

    /// Locations enabled for this machine: false when the administrator's policy
    /// (`LocationPolicy`, /etc/gpslocation/policy.json) turns them off or cannot be read.
    open class func locationServicesEnabled() -> Bool { LocationPolicy.load().locationServicesEnabled }

    @available(*, deprecated, message: "Use the authorizationStatus instance property")
    open class func authorizationStatus() -> CLAuthorizationStatus { sharedAuthorizer.status }

    // MARK: State (guarded by `lock`)

    private let lock = NSLock()
    private let queueKey = DispatchSpecificKey<ObjectIdentifier>()
    private weak var storedDelegate: (any CLLocationManagerDelegate)?
    private var storedDesiredAccuracy = kCLLocationAccuracyBest
    private var storedQueue: DispatchQueue
    private var lastLocation: CLLocation?
    private var validity = ValidityStage()
    private let accuracyStage = AccuracyStage()
    private var filter = DistanceFilterStage()
    private var timeOrder = TimeOrderStage()
    private var staleness = FixStalenessMonitor()
    private var receivers = ReceiverSelectionStage()
    private var lastSeenFix: Fix?
    /// Fires once when the staleness deadline passes; idle (no wakeups) otherwise.
    private var stalenessTimer: (any DispatchSourceTimer)?
    private var continuous = false
    private var oneShot: OneShot?
    private var sourceRunning = false
    private var generation = 0
    private var requested = false
    private var warnedNoDelegate = false
    private var initialAuthorizationReported = false
    private var loggedMessages: Set<String> = []
    private var lastDiagnostic: [String: Date] = [:]
    private var authorizerObservation: UUID?
    private var pending: [Event] = []
    private var drainScheduled = false

    private struct OneShot {
        var best: CLLocation?
        var timer: any DispatchSourceTimer
    }

    private enum Event {
        case locations([CLLocation])
        case failure(CLError)
        case authorization
        case sourceEnded
        case receiver(DeviceEvent)
    }

    /// Called on `delegateQueue` after the delegate has heard that the source stopped for good
    /// (a terminal error: a replay ended, gpsd gone without reconnection). `liveUpdates` uses
    /// it to end its sequence instead of waiting forever.
    var onSourceEnded: (@Sendable () -> Void)? {
        get { lock.withLock { storedOnSourceEnded } }
        set { lock.withLock { storedOnSourceEnded = newValue } }
    }
    private var storedOnSourceEnded: (@Sendable () -> Void)?

    public init(
        source: any LocationSource = CLLocationManager.defaultSource(),
        authorizer: LocationAuthorizer = CLLocationManager.sharedAuthorizer,
        delegateQueue: DispatchQueue? = nil
    ) {
        self.source = source
        self.authorizer = authorizer
        storedQueue = delegateQueue ?? DispatchQueue(label: "gpslocation.delegate")
        super.init()
        storedQueue.setSpecific(key: queueKey, value: ObjectIdentifier(self))
        authorizerObservation = authorizer.addObserver { [weak self] in self?.authorizationChanged() }
    }

    /// Apple's initializer: the source is `CLLocationManager.defaultSource()` (gpsd on
    /// 127.0.0.1:2947 unless `setDefaultSource` says otherwise), the authorizer is shared.
    public override convenience init() { self.init(source: CLLocationManager.defaultSource()) }

    private static let defaultSourceFactory = DefaultSourceFactory()

    /// What `CLLocationManager()` and `CLLocationUpdate.liveUpdates()` read from: by default a
    /// new `GPSDLocationSource()` each time. Programs (and tests) can point them elsewhere —
    /// another gpsd endpoint, a replay — without changing CoreLocation-style code.
    public static func setDefaultSource(_ factory: @escaping @Sendable () -> any LocationSource) {
        defaultSourceFactory.set(factory)
    }

    public static func defaultSource() -> any LocationSource { defaultSourceFactory.make() }

    deinit {
        if let authorizerObservation { authorizer.removeObserver(authorizerObservation) }
        let timer = oneShot?.timer
        timer?.cancel()
        stalenessTimer?.cancel()
        if sourceRunning { source.stop() }
    }

    // MARK: Authorization requests

    public func requestWhenInUseAuthorization() { request(always: false) }
    public func requestAlwaysAuthorization() { request(always: true) }

    private func request(always: Bool) {
        lock.withLock { requested = true }
        switch authorizer.request(always: always) {
        case .changed:
            authorizationChanged()
        case .unchanged:
            break
        case .noPrompt(let message), .missingUsageDescription(let message):
            logOnce(message)
            enqueue(.failure(CLError(.promptDeclined, message: message)))
        }
    }

    /// Call after changing `authorizer`'s decision from outside (a settings change): the delegate
    /// hears of it, and delivery follows the new state before the next fix.
    public func authorizationChanged() {
        enqueue(.authorization)
        let status = authorizer.status
        if status == .denied || status == .restricted {
            let active = lock.withLock { continuous || oneShot != nil }
            if active {
                enqueue(
                    .failure(
                        CLError(
                            .denied,
                            message:
                                "location access for \(authorizer.appID) was \(status == .denied ? "denied" : "restricted")"
                        )))
                halt(keepCallbacks: true)
            }
        }
    }

    // MARK: Updates

    public func startUpdatingLocation() {
        guard preflight() else { return }
        let (timer, start) = lock.withLock { () -> ((any DispatchSourceTimer)?, Bool) in
            let timer = oneShot?.timer
            oneShot = nil
            continuous = true
            let start = !sourceRunning
            sourceRunning = true
            return (timer, start)
        }
        timer?.cancel()
        if start { startSource() }
    }

    public func stopUpdatingLocation() { halt(keepCallbacks: false) }

    /// One location meeting `desiredAccuracy`; after `requestLocationTimeout`, the best one seen;
    /// with none, `CLError.locationUnknown`. Does nothing while updates are running.
    public func requestLocation() {
        guard preflight() else { return }
        let timeout = requestLocationTimeout
        let start = lock.withLock { () -> Bool in
            guard !continuous, oneShot == nil else { return false }
            let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
            timer.schedule(deadline: .now() + timeout)
            let expected = generation
            timer.setEventHandler { [weak self] in self?.oneShotTimedOut(generation: expected) }
            oneShot = OneShot(best: nil, timer: timer)
            timer.resume()
            let start = !sourceRunning
            sourceRunning = true
            return start
        }
        if start { startSource() }
    }

    /// Checks the states in which starting would silently do nothing, and reports them.
    private func preflight() -> Bool {
        let (hasDelegate, wasRequested) = lock.withLock { (storedDelegate != nil, requested) }
        if !hasDelegate {
            let first = lock.withLock { () -> Bool in
                defer { warnedNoDelegate = true }
                return !warnedNoDelegate
            }
            if first {
                logOnce(
                    "CLLocationManager: updates were started without a delegate, so locations go nowhere — set `manager.delegate` first"
                )
            }
        }
        guard Self.locationServicesEnabled() else {
            enqueue(
                .failure(
                    CLError(.denied, message: "location services are disabled on this machine by the administrator")))
            return false
        }
        switch authorizer.status {
        case .denied, .restricted:
            enqueue(
                .failure(
                    CLError(
                        .denied,
                        message:
                            "location access for \(authorizer.appID) is \(authorizer.status) — `gpsloc auth grant \(authorizer.appID) --when-in-use` allows it"
                    )))
            return false
        case .notDetermined where !wasRequested:
            let message =
                "location updates were started for \(authorizer.appID) while authorization is not determined and was never requested — "
                + "call requestWhenInUseAuthorization() (or requestAlwaysAuthorization()) first; nothing is delivered until it is granted"
            logOnce(message)
            enqueue(.failure(CLError(.promptDeclined, message: message)))
            return true
        default:
            return true
        }
    }

    private func startSource() {
        let live = source.isLive
        let expected = lock.withLock { () -> Int in
            if live && continuous {
                // Live: the wait for the first usable fix starts now, even if nothing arrives.
                staleness.heard(clock: Date())
                armStalenessTimer(after: staleness.effectiveTimeout)
            }
            return generation
        }
        source.start { [weak self] event in self?.handle(event, generation: expected) }
    }

    private func halt(keepCallbacks: Bool) {
        let (timer, wasRunning) = lock.withLock { () -> ((any DispatchSourceTimer)?, Bool) in
            let timer = oneShot?.timer
            oneShot = nil
            continuous = false
            let wasRunning = sourceRunning
            sourceRunning = false
            filter.reset()
            timeOrder.reset()
            staleness.reset()
            receivers.reset()
            lastSeenFix = nil
            stalenessTimer?.schedule(deadline: .distantFuture)
            if !keepCallbacks {
                generation += 1
                pending.removeAll()
            }
            return (timer, wasRunning)
        }
        timer?.cancel()
        if wasRunning { source.stop() }
        if !keepCallbacks {
            // Wait for a callback already running on the delegate queue, unless we are it.
            if DispatchQueue.getSpecific(key: queueKey) != ObjectIdentifier(self) {
                delegateQueue.sync {}
            }
        }
    }

    // MARK: Source events (on the source's queue)

    private func handle(_ event: LocationSourceEvent, generation expected: Int) {
        switch event {
        case .fix(let fix):
            let now = source.now(latestFix: fix)
            var finishOneShot = false
            lock.lock()
            guard expected == generation, continuous || oneShot != nil else {
                lock.unlock()
                return
            }
            lastSeenFix = fix
            // A replay's clock is known only from fixes that carry a time.
            let clockKnown = source.isLive || fix.time != nil
            if clockKnown { staleness.heard(clock: now) }
            let rejection = validity.check(fix, now: now)
            let candidate = rejection == nil ? accuracyStage.location(from: fix) : nil
            receivers.lossTimeout = staleness.effectiveTimeout
            guard
                receivers.admits(
                    device: fix.device, mode: fix.mode, horizontalAccuracy: candidate?.horizontalAccuracy, clock: now)
            else {
                let missing = receivers.takeMissingPin()
                if missing != nil { staleness.reportedElsewhere() }
                lock.unlock()
                if let missing {
                    let message =
                        "receiverSelection follows only \(missing.pinned), but gpsd reports fixes from \(missing.reporting) "
                        + "and none from it — pin the right path, or use .bestFix (`gpsloc doctor` lists gpsd's receivers)"
                    enqueue(.failure(CLError(.locationUnknown, message: message)))
                }
                return
            }
            guard let candidate else {
                let stale = continuous && clockKnown ? staleness.check(clock: now) : nil
                let last = lastLocation?.timestamp
                lock.unlock()
                if let stale { reportStale(silence: stale, lastLocationTime: last) }
                return
            }
            let rejected = timeOrder.check(candidate, arrival: source.isLive ? TimeOrderStage.monotonicNow() : nil)
            let stepped = timeOrder.resynchronized
            if let rejected {
                lock.unlock()
                switch rejected {
                case .backwards, .jumped: diagnose(rejected.code, rejected.description)
                default: break
                }
                return
            }
            if continuous {
                staleness.fix(time: candidate.timestamp, clock: now)
                armStalenessTimer(after: staleness.effectiveTimeout)
            }
            let desired = storedDesiredAccuracy
            lock.unlock()
            if let stepped {
                diagnose(
                    "timeResynchronized",
                    String(format: "the receiver's clock stepped by %.1f s and kept to it; following it", stepped))
            }
            let decision = authorizer.decide(candidate, now: now)
            lock.lock()
            switch decision {
            case .withhold(let error):
                lock.unlock()
                if let error {
                    enqueue(.failure(error))
                    if error.code == .denied { halt(keepCallbacks: true) }
                }
                return
            case .deliver(let location):
                if var shot = oneShot {
                    if AccuracyStage.meets(location, desiredAccuracy: desired) {
                        lastLocation = location
                        finishOneShot = true
                        pendingAppend(.locations([location]))
                    } else if shot.best == nil || location.horizontalAccuracy < shot.best!.horizontalAccuracy {
                        shot.best = location
                        oneShot = shot
                    }
                } else if filter.admits(location) {
                    filter.delivered(location)
                    lastLocation = location
                    pendingAppend(.locations([location]))
                }
            }
            lock.unlock()
            scheduleDrain()
            if finishOneShot { halt(keepCallbacks: true) }
        case .problem(let error, let terminal):
            guard lock.withLock({ expected == generation }) else { return }
            if error.code == .locationUnknown { lock.withLock { staleness.reportedElsewhere() } }
            guard terminal else {
                enqueue(.failure(error))
                return
            }
            // The source has stopped for good. A pending requestLocation() settles now: the best
            // location seen, or one error saying why there is none.
            let shot = lock.withLock { oneShot }
            halt(keepCallbacks: true)
            if let shot {
                settle(
                    best: shot.best,
                    orFail: CLError(
                        .locationUnknown, message: "no location could be determined: \(error.message)",
                        underlyingError: error.underlyingError))
            } else {
                enqueue(.failure(error))
            }
            enqueue(.sourceEnded)
        case .device(let event):
            let (active, lostFollowed, last) = lock.withLock { () -> (Bool, Bool, Date?) in
                guard expected == generation, continuous || oneShot != nil else { return (false, false, nil) }
                let lost = receivers.deviceChanged(event)
                let none = !event.activated && receivers.selected == nil
                if lost || none { staleness.reportedElsewhere() }
                return (true, lost || none, lastLocation?.timestamp)
            }
            guard active else { return }
            enqueue(.receiver(event))
            if lostFollowed {
                var message =
                    "gpsd deactivated the receiver \(event.path) (unplugged, or removed with `gpsdctl remove`)"
                if let last { message += "; the last location (\(iso8601Milliseconds(last))) is kept" }
                message +=
                    " — locations resume when it or another receiver is back; check the cable and `gpsloc doctor`"
                enqueue(.failure(CLError(.locationUnknown, message: message)))
            }
        case .sky:
            break
        }
    }

    /// Must be called with `lock` held.
    private func armStalenessTimer(after seconds: TimeInterval) {
        let timer: any DispatchSourceTimer
        if let existing = stalenessTimer {
            timer = existing
        } else {
            timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global())
            timer.setEventHandler { [weak self] in self?.stalenessTimerFired() }
            stalenessTimer = timer
            timer.resume()
        }
        timer.schedule(deadline: .now() + seconds, repeating: .never, leeway: .milliseconds(50))
    }

    private func stalenessTimerFired() {
        guard
            let (fix, last) = lock.withLock({ () -> (Fix?, Date?)? in
                guard continuous else { return nil }
                return (lastSeenFix, lastLocation?.timestamp)
            })
        else { return }
        // The source's clock: a replay that is not moving is not stale.
        guard let now = source.isLive ? Date() : fix.map({ source.now(latestFix: $0) }) else { return }
        let stale = lock.withLock { continuous ? staleness.check(clock: now) : nil }
        if let stale { reportStale(silence: stale, lastLocationTime: last) }
    }

    private func reportStale(silence: TimeInterval, lastLocationTime: Date?) {
        let message = FixStalenessMonitor.message(silence: silence, lastLocationTime: lastLocationTime)
        enqueue(.failure(CLError(.locationUnknown, message: message)))
    }

    private func oneShotTimedOut(generation expected: Int) {
        let best = lock.withLock { () -> CLLocation?? in
            guard expected == generation, let shot = oneShot else { return .none }
            return .some(shot.best)
        }
        guard case .some(let location) = best else { return }
        let seconds = Int(requestLocationTimeout)
        settle(
            best: location,
            orFail: CLError(
                .locationUnknown,
                message: "no location within \(seconds) s — the receiver has no usable fix (see `gpsloc doctor`)"))
        halt(keepCallbacks: true)
    }

    /// Ends a `requestLocation()`: its one answer is the best location seen, or `failure`.
    private func settle(best: CLLocation?, orFail failure: CLError) {
        if let best {
            lock.withLock { lastLocation = best }
            enqueue(.locations([best]))
        } else {
            enqueue(.failure(failure))
        }
    }

    // MARK: Delivery

    /// Must be called with `lock` held.
    private func pendingAppend(_ event: Event) {
        if case .locations(let new) = event, case .locations(let old)? = pending.last {
            var merged = old + new
            if merged.count > maximumBatch { merged.removeFirst(merged.count - maximumBatch) }
            pending[pending.count - 1] = .locations(merged)
        } else {
            pending.append(event)
        }
    }

    private func enqueue(_ event: Event) {
        lock.withLock { pendingAppend(event) }
        scheduleDrain()
    }

    private func scheduleDrain() {
        let queue = lock.withLock { () -> DispatchQueue? in
            guard !drainScheduled, !pending.isEmpty else { return nil }
            drainScheduled = true
            return storedQueue
        }
        queue?.async { [weak self] in self?.drain() }
    }

    /// Delivers what is pending. `halt` empties `pending` and bumps `generation` under the lock,
    /// so whatever is taken here belongs to the current generation; a stop that happens while
    /// the batch is being delivered ends it.
    private func drain() {
        while true {
            let (events, delegate, taken) = lock.withLock { () -> ([Event], (any CLLocationManagerDelegate)?, Int) in
                guard !pending.isEmpty else {
                    drainScheduled = false
                    return ([], nil, generation)
                }
                defer { pending.removeAll() }
                return (pending, storedDelegate, generation)
            }
            if events.isEmpty { return }
            for event in events {
                if lock.withLock({ taken != generation }) { break }
                switch event {
                case .locations(let locations): delegate?.locationManager(self, didUpdateLocations: locations)
                case .failure(let error): delegate?.locationManager(self, didFailWithError: error)
                case .authorization:
                    delegate?.locationManagerDidChangeAuthorization(self)
                    delegate?.locationManager(self, didChangeAuthorization: authorizer.status)
                case .sourceEnded:
                    onSourceEnded?()
                case .receiver(let event):
                    delegate?.locationManager(self, didChangeReceiver: event)
                }
            }
        }
    }

    /// How much further ahead of the last location a live fix may be dated than the time that
    /// has passed since it (default 5 s; see `TimeOrderStage`). `.infinity` turns the check off —
    /// for a gpsd fed faster than real time (gpsfake with a short cycle), where recorded gaps
    /// pass quicker than they did.
    public var timeJumpTolerance: TimeInterval {
        get { lock.withLock { timeOrder.jumpTolerance } }
        set { lock.withLock { timeOrder.jumpTolerance = newValue } }
    }

    /// Dropped fixes are not errors for the app, but must not vanish without a word: one line
    /// to stderr per kind per minute.
    private func diagnose(_ code: String, _ message: String) {
        let now = Date()
        let due = lock.withLock { () -> Bool in
            if let last = lastDiagnostic[code], now.timeIntervalSince(last) < 60 { return false }
            lastDiagnostic[code] = now
            return true
        }
        if due { FileHandle.standardError.write(Data("GPSLocation: \(message) [\(code)]\n".utf8)) }
    }

    /// Writes `message` to stderr the first time this manager meets it.
    private func logOnce(_ message: String) {
        let first = lock.withLock { loggedMessages.insert(message).inserted }
        if first { FileHandle.standardError.write(Data("GPSLocation: \(message)\n".utf8)) }
    }
}
