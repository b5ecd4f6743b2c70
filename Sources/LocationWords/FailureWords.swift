import FoundationEssentials
import GNSSCore
import GPSDClient
import LocationCore

// The words of the rules core's failures: what each `CLError.Facts` says to a person, with what
// to do. The core gives values; every face (the CoreLocation API, gpsloc, gpslocd) speaks
// through these, so one failure reads the same everywhere (#50).

extension CLError: CustomStringConvertible {
    /// What happened and what to do, in one or two sentences.
    public var message: String { facts.words }

    /// The message, or the code's name when there is none.
    public var description: String { message.isEmpty ? "CLError \(code.name) (\(code.rawValue))" : message }
}

extension CLError.Facts {
    /// The facts in words.
    public var words: String {
        switch self {
        case .text(let words):
            return words
        case .gpsd(let error):
            // The gpsd client names the fix for its own part; the whole setup is `gpsloc doctor`'s.
            return error.description + " `gpsloc doctor` checks the whole setup."
        case .gpsdRefused(let endpoint, let said):
            // gpsd's own words, as gpspipe prints them; for a device it does not read, the fix.
            let hint =
                said.hasPrefix("No such device")
                ? " — the DEVICE in HOST:PORT:DEVICE must be one gpsd reads (`gpsloc doctor` lists them)" : ""
            return "gpsd at \(endpoint): \(said)\(hint)"
        case .recordingUnreadable(let path, let cause):
            return "cannot read the recording \(path): \(cause)"
        case .recordingReadFailed(let path, let cause):
            return "reading the recording \(path) failed: \(cause)"
        case .recordingEnded(let path):
            return "the replay of \(path == "-" ? "standard input" : path) ended"
        case .brokerUnavailable(let failure):
            return failure.description
        case .brokerSaidNothing:
            return "gpslocd reported a problem without saying what — `journalctl -u gpslocd` may say more"
        case .noBroker(let app, let failure):
            return "\(app) gets no location: \(failure)"
        case .stale(let silence, let lastLocation, let rejection):
            return Self.stale(silence: silence, lastLocation: lastLocation, rejection: rejection)
        case .receiverDeactivated(let path, let live, let lastLocation):
            guard live else { return "gpsd closed the receiver \(path) it was replaying: the recording has ended" }
            let kept = lastLocation.map { "; the last location (\(iso8601Milliseconds($0))) is kept" } ?? ""
            return "gpsd deactivated the receiver \(path) (unplugged, or removed with `gpsdctl remove`)\(kept)"
                + " — locations resume when it or another receiver is back; check the cable and `gpsloc doctor`"
        case .receiverMissing(let pinned, let reporting):
            return "receiverSelection follows only \(pinned), but gpsd reports fixes from \(reporting) and none from "
                + "it — pin the right path, or use .bestFix (`gpsloc doctor` lists gpsd's receivers)"
        case .timedOut(let seconds, let cause?):
            return "no location within \(seconds) s: \(cause.words)"
        case .timedOut(let seconds, nil):
            return "no location within \(seconds) s — the receiver has no usable fix (see `gpsloc doctor`)"
        case .undetermined(let cause):
            return "no location could be determined: \(cause.words)"
        case .noLocation:
            return "no location"
        case .noHeading:
            return "no heading: this receiver reports none (a heading comes from NMEA HDT, THS or HDG, or gpsd's "
                + "ATT reports: dual-antenna and moving-base receivers, compasses); a moving receiver's direction "
                + "of travel is `location.course`"
        case .notInUse(let app):
            return "\(app) is authorized only while in use, and it is not in use (no terminal) — nothing is "
                + "delivered; grant Always (`gpsloc auth grant \(app) --always`) or declare it in use"
        case .notDetermined(let app, let inUse):
            return "location authorization for \(app) is not determined: no location is delivered until it is "
                + "granted — \(Self.grantAdvice(app, inUse: inUse))"
        case .denied(let app, let inUse):
            return "location access for \(app) is denied — no location is delivered; "
                + "\(Self.grantAdvice(app, inUse: inUse)) allows it"
        case .restricted(let app, let policy):
            return "location access for \(app) is restricted by the administrator's policy (\(policy)) — no "
                + "location is delivered; ask the administrator"
        case .reducedAccuracyUnavailable(let app, let problem):
            return "\(app) has approximate (reduced) accuracy, and its secret offset cannot be kept: \(problem) — no "
                + "approximate location is delivered until it can (a new offset at every start would give the "
                + "precise position away)"
        }
    }

    /// The grant that would work for `app` now: a program that is not in use (no terminal, a
    /// daemon) gets nothing from When In Use, so it is told to grant Always.
    static func grantAdvice(_ app: String, inUse: Bool) -> String {
        inUse
            ? "`gpsloc auth grant \(app) --when-in-use` (or `--always`)"
            : "`gpsloc auth grant \(app) --always` (it has no terminal, so it is never in use: When In Use "
                + "would deliver nothing)"
    }

    /// No usable fix for `silence` s: the rejection of the fixes that came is the cause when
    /// there is one, else the sky (never a fix yet, or lost since the last location).
    static func stale(silence: Double, lastLocation: Date?, rejection: FixRejection?) -> String {
        let seconds = fixedDecimal(silence, decimals: 1)
        if let rejection {
            return "no usable position fix for \(seconds) s: fixes arrive but are not used — \(rejection.words)"
        }
        guard let lastLocation else {
            return "no usable position fix yet after \(seconds) s — the receiver is still searching for satellites "
                + "(a cold start can take a minute or more under open sky; indoors it may never fix) — "
                + "`gpsloc doctor` shows what it sees"
        }
        return "no usable position fix for \(seconds) s — the last location (\(iso8601Milliseconds(lastLocation))) "
            + "is kept but is getting old; the receiver has lost its fix (check its view of the sky and the antenna, "
            + "or `gpsloc doctor`)"
    }
}
