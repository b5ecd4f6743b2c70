import FoundationEssentials
import GPSDClient

// What the rules core says, as values: no words. The core fails with a `CLError` whose `facts`
// say what happened and with which values, and notes with a `LocationDiagnostic` whose `facts`
// do the same; the words (`message`, `description`) are the faces' — GPSLocation's vocabulary
// module, `LocationWords`, renders them for the CoreLocation API, gpsloc and gpslocd (#50).

extension CLError {
    /// What happened, with its values: the cause of a `CLError` for a face to put in words.
    /// `reason` is the branch an app takes; `facts` is everything its message says.
    public indirect enum Facts: Hashable, Sendable {
        /// A face's own words (an error made by the CoreLocation API, gpsloc, or code outside
        /// GPSLocation), or words relayed from outside (an older gpslocd). The core makes none.
        case text(String)

        // The sources.
        /// The gpsd client's error (its words are the gpsd client's).
        case gpsd(GPSDError)
        /// gpsd refused the request with an `ERROR` report: its own words.
        case gpsdRefused(endpoint: String, said: String)
        /// A recording could not be opened (`cause`: the system's `strerror`).
        case recordingUnreadable(path: String, cause: String)
        /// Reading a recording failed part way (`cause`: the system's `strerror`).
        case recordingReadFailed(path: String, cause: String)
        /// A recording's replay reached its end (`path` "-": standard input).
        case recordingEnded(path: String)
        /// gpslocd cannot be reached or was lost: the link's account of it.
        case brokerUnavailable(BrokerUnavailable)
        /// gpslocd sent a PROBLEM with neither values nor words.
        case brokerSaidNothing
        /// `app` is denied meanwhile because gpslocd, which holds its decision, cannot be reached.
        case noBroker(app: String, BrokerUnavailable)

        // The engine.
        /// No usable fix for `silence` seconds: since the last location (`lastLocation`), or
        /// ever; `rejection`: why the fixes that did arrive were not used.
        case stale(silence: Double, lastLocation: Date?, rejection: FixRejection?)
        /// gpsd deactivated the receiver followed: unplugged (`live`), or the end of a recording
        /// gpsd played; `lastLocation`: the last location delivered, kept.
        case receiverDeactivated(path: String, live: Bool, lastLocation: Date?)
        /// Pinned to `pinned`, while gpsd reports fixes only from `reporting`.
        case receiverMissing(pinned: String, reporting: String)
        /// A `requestLocation()` found no location within `seconds`: because of `cause`, or
        /// (nil) because the receiver had no usable fix.
        case timedOut(seconds: Int, cause: Facts?)
        /// A `requestLocation()` ended without a location because its source ended with `cause`.
        case undetermined(cause: Facts)
        /// A `requestLocation()` settled with no location and no other cause.
        case noLocation
        /// Heading updates, and the receiver reports no heading.
        case noHeading

        // The gate.
        /// When In Use, and the app is not in use.
        case notInUse(app: String)
        /// Authorization not determined; `inUse`: whether When In Use would deliver.
        case notDetermined(app: String, inUse: Bool)
        /// The app is denied; `inUse` as above.
        case denied(app: String, inUse: Bool)
        /// The administrator's policy (at `policy`) restricts the app.
        case restricted(app: String, policy: String)
        /// Reduced accuracy, and the app's secret offset cannot be kept (`problem`: why).
        case reducedAccuracyUnavailable(app: String, problem: FileProblem)
    }
}

extension LocationDiagnostic {
    /// What a diagnostic notes, with its values, for a face to put in words.
    public indirect enum Facts: Hashable, Sendable {
        /// A face's own words, or words relayed from outside (an older gpslocd).
        case text(String)

        /// A fix was not used; `recordingTime`: when, in a recording being replayed.
        case rejected(FixRejection, recordingTime: Date?)
        /// The receiver reported values outside what a receiver can measure: removed.
        case outOfRange(PhysicalRanges.Removed)
        /// The receiver's clock stepped by `step` seconds and kept to it.
        case timeResynchronized(step: Double)
        /// The system clock is `offset` seconds ahead of the receiver (negative: behind) at
        /// `now`; `simulated`: gpsd plays a recording (nothing is wrong).
        case systemClockOffset(offset: Double, fixTime: Date, now: Date, simulated: Bool)
        /// Delegate callbacks have waited `seconds`: the main thread's run loop, or (`thread`) the
        /// face's account of the thread that does not run.
        case delegateThreadBlocked(seconds: Double, thread: String?)
        /// `count` live locations dropped: the app was slower than the receiver (`batch` wait).
        case droppedLocations(count: Int, batch: Int)
        /// Connected to gpslocd at `path` again, as `app`.
        case brokerConnected(path: String, app: String)
        /// Connected to gpsd at `endpoint` again.
        case reconnected(endpoint: String)
        /// Reconnecting to gpsd at `endpoint`: attempt `attempt`, in `delay` seconds.
        case reconnecting(endpoint: String, attempt: Int, delay: Double)
        /// Lines of a recording skipped, by kind.
        case skippedInput(badChecksum: Int, cutOff: Int, tooLong: Int, noise: Int, malformed: Int)
        /// Sentences accepted without a checksum; `satelliteListsSkipped` GSVs without one skipped.
        case noChecksums(accepted: Int, satelliteListsSkipped: Int)
        /// Nobody can be asked for `app`'s permission here (no terminal, no prompt); `always`:
        /// only Always would deliver (asked for, or the app is not in use).
        case nobodyToAsk(app: String, always: Bool)
        /// gpslocd refused an authorization request (`said`: its words, when it gave any).
        case requestRefused(said: String?)
        /// An authorization request could not reach gpslocd.
        case requestFailed(BrokerUnavailable)
        /// `app` requested authorization without a usage description, so nobody is asked.
        case noUsageDescription(app: String)
        /// The authorization files cannot be followed live (`problem`): failing closed.
        case authorizationFollow(app: String, problem: FileProblem)
        /// A kept or trusted file cannot be used as it is.
        case file(FileProblem)
        /// Updates stopped while the last location was still being written to `path`, `waited`
        /// seconds after it was due: the disk is slow or does not answer, and stopping went on
        /// without it (the write finishes if the disk answers while the program runs).
        case lastLocationNotSaved(path: String, waited: Double)
        /// The last location could not be written to its file (`problem`: a full disk, a folder
        /// that cannot be written): said once, and again only after a write worked in between.
        case lastLocationWriteFailed(FileProblem)
    }
}
