import Foundation
import GNSSCore
import GPSDClient
import Testing

@testable import LocationCore
@testable import LocationWords

/// #50: the rules core says what happened as values; LocationWords says it in words, and
/// gpslocd's wire carries the values so each side speaks for itself.
@Suite("the core's facts: values on the wire, words in LocationWords")
struct FactsTests {
    static let time = Date(timeIntervalSince1970: 1_781_510_400)  // 2026-06-15T08:00:00Z
    static let endpoint = GPSDEndpoint(host: "127.0.0.1", port: 29_470, device: "/dev/ttyACM0")

    /// One value of each case of `CLError.Facts`; `index` makes a new case a compile error here
    /// until it has a sample.
    static let failures: [CLError.Facts] = [
        .text("a face's own words"),
        .gpsd(GPSDError.noDevice(at: endpoint)),
        .gpsdRefused(endpoint: "127.0.0.1:2947", said: "No such device as /dev/pts/9"),
        .recordingUnreadable(path: "/tmp/a.nmea", cause: "No such file or directory"),
        .recordingReadFailed(path: "/tmp/a.nmea", cause: "Input/output error"),
        .recordingEnded(path: "-"),
        .brokerUnavailable(.lost(path: "/run/gpslocd.sock", failure: .tooLong(limit: 65_536))),
        .brokerSaidNothing,
        .noBroker(
            app: "widget", .unreachable(path: "/run/x", cause: "Connection refused", brokerRequired: true, named: false)
        ),
        .stale(silence: 12.5, lastLocation: time, rejection: .future(ahead: 3_600)),
        .receiverDeactivated(path: "/dev/ttyACM0", live: true, lastLocation: time),
        .receiverMissing(pinned: "/dev/ttyUSB0", reporting: "/dev/ttyACM0"),
        .timedOut(seconds: 30, cause: .gpsd(GPSDError.noDevice(at: endpoint))),
        .undetermined(cause: .recordingEnded(path: "/tmp/a.nmea")),
        .noLocation,
        .noHeading,
        .notInUse(app: "widget"),
        .notDetermined(app: "fleetd", inUse: false),
        .denied(app: "widget", inUse: true),
        .restricted(app: "widget", policy: "/etc/gpslocation/policy.json"),
        .reducedAccuracyUnavailable(
            app: "widget",
            problem: .storeUnusable(path: "/x/authorizations.json", why: .storeInvalid(salvaged: 2), movedAside: nil)),
    ]

    static func index(_ facts: CLError.Facts) -> Int {
        switch facts {
        case .text: 0
        case .gpsd: 1
        case .gpsdRefused: 2
        case .recordingUnreadable: 3
        case .recordingReadFailed: 4
        case .recordingEnded: 5
        case .brokerUnavailable: 6
        case .brokerSaidNothing: 7
        case .noBroker: 8
        case .stale: 9
        case .receiverDeactivated: 10
        case .receiverMissing: 11
        case .timedOut: 12
        case .undetermined: 13
        case .noLocation: 14
        case .noHeading: 15
        case .notInUse: 16
        case .notDetermined: 17
        case .denied: 18
        case .restricted: 19
        case .reducedAccuracyUnavailable: 20
        }
    }

    static let notes: [LocationDiagnostic.Facts] = [
        .text("a diagnostic in a face's words"),
        .rejected(.backwards(by: 0.2), recordingTime: time),
        .outOfRange(PhysicalRanges.Removed(speed: 2_000, course: nil, altitude: 70_000, negativeEstimate: true)),
        .timeResynchronized(step: 3_600),
        .systemClockOffset(offset: 7_200, fixTime: time, now: time.addingTimeInterval(7_200), simulated: false),
        .delegateThreadBlocked(seconds: 10, thread: nil),
        .droppedLocations(count: 5, batch: 64),
        .brokerConnected(path: "/run/gpslocd.sock", app: "widget"),
        .reconnected(endpoint: "127.0.0.1:2947"),
        .reconnecting(endpoint: "127.0.0.1:2947", attempt: 3, delay: 2),
        .skippedInput(badChecksum: 1, cutOff: 2, tooLong: 0, noise: 4, malformed: 0),
        .noChecksums(accepted: 10, satelliteListsSkipped: 2),
        .nobodyToAsk(app: "fleetd", always: true),
        .requestRefused(said: nil),
        .requestFailed(.noAnswer(path: "/run/gpslocd.sock", seconds: 300)),
        .noUsageDescription(app: "widget"),
        .authorizationFollow(app: "widget", problem: .inotifyUnavailable(errno: EMFILE)),
        .file(.policyUnknownKeys(path: "/etc/gpslocation/policy.json", keys: ["restrictd"])),
        .lastLocationNotSaved(path: "/home/ana/.cache/gpslocation/last/gpsloc.json", waited: 2),
        .lastLocationWriteFailed(.incompleteWrite(path: "/home/ana/.cache/gpslocation/last/.gpsloc.json.1.A.tmp")),
    ]

    static func index(_ facts: LocationDiagnostic.Facts) -> Int {
        switch facts {
        case .text: 0
        case .rejected: 1
        case .outOfRange: 2
        case .timeResynchronized: 3
        case .systemClockOffset: 4
        case .delegateThreadBlocked: 5
        case .droppedLocations: 6
        case .brokerConnected: 7
        case .reconnected: 8
        case .reconnecting: 9
        case .skippedInput: 10
        case .noChecksums: 11
        case .nobodyToAsk: 12
        case .requestRefused: 13
        case .requestFailed: 14
        case .noUsageDescription: 15
        case .authorizationFollow: 16
        case .file: 17
        case .lastLocationNotSaved: 18
        case .lastLocationWriteFailed: 19
        }
    }

    @Test("every case has a sample, and every sample says something of its own in words")
    func everyCaseSaysSomething() {
        #expect(Set(Self.failures.map(Self.index)) == Set(0...20))
        #expect(Set(Self.notes.map(Self.index)) == Set(0...19))
        let words = Self.failures.map(\.words) + Self.notes.map(\.words)
        for text in words {
            #expect(!text.isEmpty && !text.contains("Optional(") && !text.contains("Facts."), "\(text)")
        }
        #expect(Set(words).count == words.count, "two facts read the same")
    }

    @Test("a failure nests its cause's words: a timed-out request says gpsd's error with its fix")
    func nestedWords() {
        let error = CLError(
            .locationUnknown, .timedOut(seconds: 30, cause: .gpsd(GPSDError.noDevice(at: Self.endpoint))),
            reason: .gpsdUnreachable)
        #expect(error.message.hasPrefix("no location within 30 s: gpsd at 127.0.0.1:29470 has no receiver open"))
        #expect(error.message.hasSuffix("`gpsloc doctor` checks the whole setup."))
        #expect("\(error)" == error.message && error.localizedDescription == error.message)
        let stale = CLError(
            .locationUnknown, .stale(silence: 12.5, lastLocation: Self.time, rejection: .future(ahead: 3_600)),
            reason: .stale
        ).message
        #expect(stale.contains("fixes arrive but are not used — the fix is dated 3600 s in the future"), "\(stale)")
    }

    @Test("the core's stderr handler prints the words, found at run time: 'GPSLocation: message [code]'")
    func diagnosticsInWords() {
        let diagnostic = LocationDiagnostic(code: "droppedLocations", .droppedLocations(count: 5, batch: 64))
        // `Diagnostics.standardError` interpolates the diagnostic: the conformance is LocationWords'.
        #expect("\(diagnostic)" == diagnostic.message + " [droppedLocations]")
        #expect(diagnostic.message.hasPrefix("5 live location(s) dropped"))
    }

    @Test("gpslocd's lines carry what it relays from gpsd as values, the rest in its words: each reads the same")
    func wireRoundTrip() throws {
        for facts in Self.failures {
            let error = CLError(.denied, facts, reason: .notAuthorized)
            let line = BrokerProtocol.problemLine(error, terminal: true, words: .said)
            let message = try #require(BrokerMessage(line: Array(line.utf8.dropLast())))
            guard case .problem(let read, let terminal) = BrokerProtocol.event(from: message) else {
                Issue.record("not a problem: \(line)")
                continue
            }
            #expect(read.message == error.message && read.reason == error.reason && terminal, "\(line)")
            switch facts {
            case .gpsd, .gpsdRefused:
                // Values: the program says them in its own words.
                #expect(read == error, "\(line)")
                #expect(!line.contains(error.message), "words on the wire: \(line)")
            default:
                #expect(read.facts == .text(error.message), "\(line)")
            }
        }
        for facts in Self.notes {
            let note = LocationDiagnostic(code: "note", facts)
            let line = BrokerProtocol.line(for: .notice(note), words: .said)
            let message = try #require(BrokerMessage(line: Array(line.utf8.dropLast())))
            guard case .notice(let read) = BrokerProtocol.event(from: message) else {
                Issue.record("not a notice: \(line)")
                continue
            }
            #expect(read.message == note.message, "\(line)")
        }
        for note in [
            LocationDiagnostic(code: "reconnected", .reconnected(endpoint: "127.0.0.1:2947")),
            LocationDiagnostic(code: "reconnecting", .reconnecting(endpoint: "[::1]:2947", attempt: 2, delay: 1.5)),
        ] {
            let line = BrokerProtocol.line(for: .notice(note), words: .said)
            let message = try #require(BrokerMessage(line: Array(line.utf8.dropLast())))
            guard case .notice(let read) = BrokerProtocol.event(from: message) else {
                Issue.record("not a notice: \(line)")
                continue
            }
            #expect(read == note && !line.contains("\"message\""), "\(line)")
        }
    }

    @Test("without a face's words a line still says what happened, as values")
    func valuesWithoutWords() throws {
        let error = CLError(.locationUnknown, .noLocation, reason: .sourceEnded)
        let line = BrokerProtocol.problemLine(error, terminal: false)
        let message = try #require(BrokerMessage(line: Array(line.utf8.dropLast())))
        #expect(message.string("message") == "noLocation", "\(line)")
    }

    @Test("a line with words only (gpslocd's own notes) is read as those words")
    func wordsWithoutFacts() throws {
        let problem = try #require(
            BrokerMessage(
                line: Array(#"{"class":"PROBLEM","code":0,"reason":"gpsdLost","message":"gpsd went away"}"#.utf8)))
        guard case .problem(let error, _) = BrokerProtocol.event(from: problem) else {
            Issue.record("not a problem")
            return
        }
        #expect(error.facts == .text("gpsd went away") && error.reason == .gpsdLost)
        // Neither values nor words: the program is still told something, and where to look.
        let bare = try #require(BrokerMessage(line: Array(#"{"class":"PROBLEM","code":0}"#.utf8)))
        guard case .problem(let unexplained, _) = BrokerProtocol.event(from: bare) else {
            Issue.record("not a problem")
            return
        }
        #expect(unexplained.facts == .brokerSaidNothing && unexplained.message.contains("journalctl -u gpslocd"))
        let dropped = try #require(
            BrokerMessage(line: Array(#"{"class":"NOTICE","code":"brokerDropped","message":"3 dropped"}"#.utf8)))
        guard case .notice(let note) = BrokerProtocol.event(from: dropped) else {
            Issue.record("not a notice")
            return
        }
        #expect(note.code == "brokerDropped" && note.message == "3 dropped")
    }
}
