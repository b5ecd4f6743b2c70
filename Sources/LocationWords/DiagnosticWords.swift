import FoundationEssentials
import GNSSCore
import LocationCore

// The words of the rules core's diagnostics and of the reasons a fix is not used.

extension LocationDiagnostic: CustomStringConvertible {
    /// What happened, in words.
    public var message: String { facts.words }

    /// `message [code]`.
    public var description: String { "\(message) [\(code)]" }
}

extension LocationDiagnostic.Facts {
    /// The facts in words.
    public var words: String {
        switch self {
        case .text(let words):
            return words
        case .rejected(let rejection, let recordingTime):
            // A replay runs minutes of recording in a moment: each stretch says when it was, so a
            // second one (a later outage) does not read as the first said twice.
            return rejection.words + (recordingTime.map { " (at \(iso8601Milliseconds($0)) in the recording)" } ?? "")
        case .outOfRange(let removed):
            var parts: [String] = []
            if let speed = removed.speed { parts.append("speed \(significantDecimal(speed)) m/s") }
            if let course = removed.course { parts.append("course \(significantDecimal(course))°") }
            if let altitude = removed.altitude { parts.append("altitude \(significantDecimal(altitude)) m") }
            if removed.negativeEstimate { parts.append("an error estimate below zero (or not a number)") }
            return "the receiver reported \(parts.joined(separator: " and ")), outside what a receiver can measure: "
                + "shown as unknown"
        case .timeResynchronized(let step):
            return "the receiver's clock stepped by \(fixedDecimal(step, decimals: 1)) s and kept to it; following it"
        case .systemClockOffset(let offset, let fixTime, let now, let simulated):
            let amount = Self.duration(abs(offset))
            if simulated {
                let day = String(iso8601Milliseconds(fixTime).prefix(10))
                return "gpsd is playing a recording of \(day), \(amount) " + (offset > 0 ? "behind" : "ahead of")
                    + " the system clock; locations carry its time"
            }
            return "the system clock is \(amount) " + (offset > 0 ? "ahead of" : "behind")
                + " the receiver's GNSS time (system \(iso8601Milliseconds(now)), receiver "
                + "\(iso8601Milliseconds(fixTime))): locations still flow, dated by the receiver — set the clock from "
                + "GNSS with chrony and gpsd as its time source (`refclock SHM 0` in /etc/chrony/chrony.conf), or "
                + "enable NTP (`timedatectl set-ntp true`) when online"
        case .delegateThreadBlocked(let seconds, let thread):
            return "delegate callbacks have waited \(fixedDecimal(seconds, decimals: 0)) s: "
                + (thread ?? "the main thread has not run its run loop or the main queue")
                + " (blocked in readLine(), a semaphore or a sleep?) — end the program's set-up with "
                + "dispatchMain() or RunLoop.main.run(), or give the manager a queue of its own "
                + "(CLLocationManager(delegateQueue: DispatchQueue(label: \"location\")) or manager.delegateQueue = …)"
        case .droppedLocations(let count, let batch):
            return "\(count) live location(s) dropped: the app took longer to handle locations than the receiver "
                + "takes to make them (at most \(batch) wait)"
        case .brokerConnected(let path, let app):
            return "connected to gpslocd at \(path) again as \(app)"
        case .reconnected(let endpoint):
            return "connected to gpsd at \(endpoint) again"
        case .reconnecting(let endpoint, let attempt, let delay):
            return "reconnecting to gpsd at \(endpoint) (attempt \(attempt), in \(fixedDecimal(delay, decimals: 1)) s"
                + (attempt == 3 ? "; from now on said once a minute" : "") + ")"
        case .skippedInput(let badChecksum, let cutOff, let tooLong, let noise, let malformed):
            let skipped = badChecksum + cutOff + tooLong + noise + malformed
            return "skipped \(skipped) unusable line(s) of the recording: \(badChecksum) bad checksum, "
                + "\(cutOff) cut off (no checksum and incomplete), \(tooLong) too long, \(noise) noise, "
                + "\(malformed) malformed"
        case .noChecksums(let accepted, let satelliteListsSkipped):
            var words =
                "\(accepted) sentence(s) carried no *hh checksum and were accepted because each was a complete, "
                + "well-formed line (as gpsd accepts them)"
            if satelliteListsSkipped > 0 {
                words +=
                    "; \(satelliteListsSkipped) satellite list(s) (GSV) without one were skipped, as gpsd skips them "
                    + "(a cut-off GSV cannot be recognised), so no satellites are shown"
            }
            return words
                + "; line noise in such sentences cannot be detected — enable checksums on the receiver if it can"
        case .nobodyToAsk(let app, let always):
            return "no one can be asked for location permission for \(app) here (no terminal, no prompt): nothing is "
                + "delivered until it is granted — run `gpsloc auth grant \(app) \(always ? "--always" : "--when-in-use")` "
                + "(or have the administrator grant it in the policy); locations start at once, without a restart"
        case .requestRefused(let said):
            return said ?? "gpslocd refused the request"
        case .requestFailed(let failure):
            return failure.description
        case .noUsageDescription(let app):
            return "\(app) requested location authorization without a usage description, so nobody is asked — "
                + "Apple's CoreLocation does nothing without NSLocationWhenInUseUsageDescription; on Linux set "
                + "`GPSLOCATION_USAGE_DESCRIPTION=\"why the app needs the location\"` in its environment, or give the "
                + "authorizer one (`LocationAuthorizer(appID:usageDescription:)`)"
        case .file(let problem):
            return problem.description
        case .lastLocationNotSaved(let path, let waited):
            return "the last location was not saved: writing \(path) has taken \(fixedDecimal(waited, decimals: 0)) s "
                + "(the disk is slow or does not answer) — updates stopped without waiting for it, so the next start may "
                + "show an older last location; check the disk or file system that holds it"
        case .lastLocationWriteFailed(let problem):
            return "the last location could not be saved: \(problem) — locations go on, but a new manager's location "
                + "and `gpsloc last` show an older one until it can be written"
        case .authorizationFollow(let app, let problem):
            return "\(app): the authorization files cannot be followed live (\(problem)) — failing closed: no location "
                + "is delivered until the program is restarted"
        }
    }

    /// "2 h 0 min", "15.0 s", "170 days".
    static func duration(_ seconds: Double) -> String {
        if seconds >= 2 * 86_400 { return "\(fixedDecimal(seconds / 86_400, decimals: 0)) days" }
        if seconds >= 3_600 {
            let hours = fixedDecimal((seconds / 3_600).rounded(.down), decimals: 0)
            let minutes = fixedDecimal(
                (seconds.truncatingRemainder(dividingBy: 3_600) / 60).rounded(.down), decimals: 0)
            return "\(hours) h \(minutes) min"
        }
        if seconds >= 60 {
            let minutes = fixedDecimal((seconds / 60).rounded(.down), decimals: 0)
            return
                "\(minutes) min \(fixedDecimal(seconds.truncatingRemainder(dividingBy: 60).rounded(.down), decimals: 0)) s"
        }
        return "\(fixedDecimal(seconds, decimals: 1)) s"
    }
}

extension FixRejection: CustomStringConvertible {
    /// The reason in words.
    public var description: String { words }

    /// The reason in words.
    public var words: String {
        switch self {
        case .noFix:
            "no position fix: the receiver does not see enough satellites yet (give it a clear view of the sky)"
        case .missingCoordinate: "the fix has no latitude or longitude"
        // Never the coordinates: one of them may be precise, and the app may have reduced accuracy.
        case .outOfRange: "the position is out of range (latitude beyond ±90° or longitude beyond ±180°)"
        case .missingTime: "the fix carries no time, so its age is unknown"
        case .stale(let age) where age >= 86_400:
            "the fix is dated \(fixedDecimal(age / 86_400, decimals: 0)) days ago — the receiver's date is wrong (a "
                + "week-rollover bug), or gpsd is playing an old recording (for recordings use `gpsloc replay FILE`, "
                + "which follows their own clock)"
        case .stale(let age):
            "the fix is \(fixedDecimal(age, decimals: 1)) s old: the receiver stopped reporting fresh positions"
        case .future(let ahead):
            "the fix is dated \(fixedDecimal(ahead, decimals: 0)) s in the future — the receiver's clock (or date "
                + "rollover) is wrong; check `gpspipe -w` and the receiver's firmware"
        case .backwards(let seconds):
            "the fix's time went back by \(fixedDecimal(seconds, decimals: 3)) s; it is dropped"
        case .jumped(let seconds):
            "the fix's time jumped \(fixedDecimal(seconds, decimals: 1)) s further ahead than the time that has "
                + "passed; it is dropped (followed once the receiver keeps to it)"
        case .duplicate: "a repeat of the last location"
        }
    }
}

extension ReceiverSelection: CustomStringConvertible {
    /// In words, for messages.
    public var description: String {
        switch self {
        case .bestFix: "the receiver with the best fix"
        case .path(let path): path
        }
    }
}
