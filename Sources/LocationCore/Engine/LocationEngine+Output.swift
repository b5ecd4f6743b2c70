import FoundationEssentials
import GNSSCore

// What the engine returns from each step: outputs for the app and the driver's own work. Part of
// `LocationEngine`, in a file of their own.

extension LocationEngine {
    /// What reaches the app, in order, through the runner and an adapter (`CLLocationManager`,
    /// `CLMonitor`, gpsloc): one type from the engine to every face, so none can translate it
    /// differently.
    ///
    /// Every case but `locations` (the one made for each fix) is `indirect`: an output is then
    /// one reference wide, and is copied on its way to the adapter (the engine's actions, the
    /// runner's queue, the hand-over) as a reference, not as the largest payload (a sky view,
    /// an error) byte by byte.
    public enum Output: Sendable {
        /// Locations in order, the newest last; consecutive ones waiting together come as one
        /// batch (the engine gives one at a time; the runner joins those that wait together).
        case locations([LocationValue])
        /// A problem (`didFailWithError`, an NDJSON error line); `error.endsUpdates` says
        /// whether updates ended with it.
        indirect case failure(CLError)
        /// The source stopped for good (a recording's end, gpsd gone without reconnection).
        case sourceEnded
        /// gpsd activated or deactivated a receiver.
        indirect case receiver(DeviceEvent)
        /// The satellites in view (for displays; carries no position).
        indirect case sky(SkyView)
        /// What is known about a monitored region changed.
        indirect case region(RegionEvent)
        /// A visit began (no departure yet) or ended.
        indirect case visit(VisitRecord)
        /// Updates paused (true: the device stayed put for `pauseAfter`) or resumed (false: it
        /// moved, or the app started updates again).
        case paused(Bool)
        /// A heading for the app (heading updates are on and the app is authorized).
        indirect case heading(HeadingValue)
        /// A note that is not an error for the app (a dropped fix, a reconnection): the
        /// diagnostics handler, or an NDJSON diagnostic line.
        indirect case diagnostic(LocationDiagnostic)
        /// An event the adapter queued itself (`EngineRunner.enqueue`), delivered in order with
        /// the rest; never made by the engine.
        indirect case adapter(any Sendable)
    }

    /// What the driver must do, in order: outputs for the app, and the driver's own work.
    public enum Action: Sendable {
        /// Hand this to the app.
        case emit(Output)
        /// Call `timerFired(timer, now:)` after this many seconds (replacing an armed one).
        case arm(Timer, after: TimeInterval)
        /// Disarm the timer.
        case cancel(Timer)
        /// Updates are over: stop the source (a request settled, access denied, the source ended).
        case stopSource

        static func deliver(_ location: LocationValue) -> Action { .emit(.locations([location])) }
        static func fail(_ error: CLError) -> Action { .emit(.failure(error)) }
        static func diagnose(code: String, _ facts: LocationDiagnostic.Facts) -> Action {
            .emit(.diagnostic(LocationDiagnostic(code: code, facts)))
        }
        static func receiver(_ device: DeviceEvent) -> Action { .emit(.receiver(device)) }
        static func sky(_ sky: SkyView) -> Action { .emit(.sky(sky)) }
        static func region(_ event: RegionEvent) -> Action { .emit(.region(event)) }
        static func visit(_ record: VisitRecord) -> Action { .emit(.visit(record)) }
        static func paused(_ paused: Bool) -> Action { .emit(.paused(paused)) }
        static func heading(_ heading: HeadingValue) -> Action { .emit(.heading(heading)) }
        static var sourceEnded: Action { .emit(.sourceEnded) }

        /// The location this action hands the app, if it is one.
        public var delivered: LocationValue? {
            if case .emit(.locations(let batch)) = self { batch.last } else { nil }
        }
        /// The error this action hands the app, if it is one.
        var failure: CLError? {
            if case .emit(.failure(let error)) = self { error } else { nil }
        }
        /// The diagnostic this action hands the app, if it is one.
        var diagnostic: LocationDiagnostic? {
            if case .emit(.diagnostic(let diagnostic)) = self { diagnostic } else { nil }
        }
        /// What this action hands the app, if anything.
        var output: Output? {
            if case .emit(let output) = self { output } else { nil }
        }
    }
}
