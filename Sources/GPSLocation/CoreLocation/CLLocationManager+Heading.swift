import Foundation
import GNSSCore
import NMEA0183

// What `CLLocationManager.headingAvailable()` knows before a heading has been delivered in this
// process: the source's own knowledge (a recording's sentences), else what this box has seen
// of its receivers (a heading reported, a compass gpsd identified), kept in the user's cache
// like the last location.

extension CLLocationManager {
    /// Whether heading updates can come, answered before any is asked for, as Apple's is:
    /// - true once a heading has been delivered in this process;
    /// - else, when the default source can tell by itself (a replay: true when the recording
    ///   holds a valid `HDT`, `THS` or `HDG` sentence with a value, as its parser reads them),
    ///   its answer;
    /// - else (gpsd, gpslocd) true when a receiver of this box has reported a heading before,
    ///   or gpsd identified a compass (its `True North` and `OceanServer OS5000` drivers), as
    ///   kept in `$XDG_CACHE_HOME/gpslocation/heading` (`~/.cache/gpslocation/heading`);
    /// - else false. A receiver that reports no heading after all is said within ten fixes of
    ///   `startUpdatingHeading()` (`CLError.headingFailure`), so a false yes costs no silence.
    public class func headingAvailable() -> Bool {
        headingAvailable(seenInProcess: headingSeen.withLock { $0 }, source: defaultSource(), record: .user)
    }

    /// The rule, from what it reads (tests give each part).
    static func headingAvailable(seenInProcess: Bool, source: any LocationSource, record: HeadingRecord) -> Bool {
        if seenInProcess { return true }
        if let known = source.reportsHeading { return known }
        return record.entry() != nil
    }

    static let headingSeen = Locked(false)

    /// A heading reached the app: remembered for this process, and for the box when a receiver
    /// (not a recording) reported it — once a process, not a write per heading.
    func headingDelivered() {
        let first = CLLocationManager.headingSeen.withLock { seen in
            defer { seen = true }
            return !seen
        }
        // Written off the delivering thread (it may be the app's main thread): a file and its fsync.
        if first, !runner.source.isSimulated {
            DispatchQueue.global(qos: .utility).async { HeadingRecord.user.record(how: "a heading was delivered") }
        }
    }

    /// gpsd identified a device: a compass driver is remembered for the box.
    func receiverIdentified(_ device: DeviceEvent) {
        guard device.activated, let driver = device.driver, HeadingRecord.compassDrivers.contains(driver),
            !runner.source.isSimulated
        else { return }
        let how = "gpsd identified \(device.path) as a \(driver) compass"
        DispatchQueue.global(qos: .utility).async { HeadingRecord.user.record(how: how) }
    }
}

/// The box's memory of a receiver that reports a heading: one small file in the user's cache,
/// read only from a private folder (a planted file in a folder others can write is ignored).
struct HeadingRecord: Sendable {
    /// gpsd's drivers for devices that are compasses, not GNSS receivers (gpsd's
    /// drivers/driver_nmea0183.c: "True North", "OceanServer OS5000").
    static let compassDrivers: Set<String> = ["True North", "OceanServer OS5000"]

    let directory: URL
    static let user = HeadingRecord(directory: PrivateFile.userDirectory(.cache))

    var file: URL { directory.appendingPathComponent("heading") }

    struct Entry: Codable, Equatable {
        var version = 1
        /// What showed it (words for a person reading the file).
        var how: String
        /// When, seconds since 1970.
        var seen: Double
    }

    /// The record, or nil when there is none (or it is not a private file of the user's).
    func entry() -> Entry? {
        guard PrivateFile.folderProblem(directory) == nil, let data = PrivateFile.read(file, maximumSize: 4096)
        else { return nil }
        return try? JSONDecoder().decode(Entry.self, from: data)
    }

    /// Records what showed a heading. Failures are not the app's: the record is a convenience.
    func record(how: String, now: Date = Date()) {
        try? FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        guard let data = try? JSONEncoder().encode(Entry(how: how, seen: now.timeIntervalSince1970)) else { return }
        try? PrivateFile.replace(file, with: data)
    }
}
