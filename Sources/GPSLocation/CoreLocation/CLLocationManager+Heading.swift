import Foundation
import GNSSCore

// What `CLLocationManager.headingAvailable()` knows before a heading has been delivered in this
// process: the source's own knowledge (a recording's sentences), else what this box has seen
// of its receivers (a heading reported, a compass gpsd identified), kept in the user's cache
// like the last location.

extension CLLocationManager {
    /// Whether heading updates can come, answered before any is asked for, as Apple's is:
    /// - true once a heading has been delivered in this process;
    /// - else, when the default source can tell by itself (a replay: true when the recording
    ///   holds a `HDT`, `THS` or `HDG` sentence with a value, or gpsd's `ATT` with a heading),
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
        if first, !runner.source.isSimulated { HeadingRecord.user.record(how: "a heading was delivered") }
    }

    /// gpsd identified a device: a compass driver is remembered for the box.
    func receiverIdentified(_ device: DeviceEvent) {
        guard device.activated, let driver = device.driver, HeadingRecord.compassDrivers.contains(driver),
            !runner.source.isSimulated
        else { return }
        HeadingRecord.user.record(how: "gpsd identified \(device.path) as a \(driver) compass")
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

/// Finds a heading in a recording without replaying it.
enum HeadingScan {
    /// The most of a recording read (a heading-reporting receiver sends one every cycle, so a
    /// recording that has none in its first 16 MB has none worth waiting for).
    static let limit = 16 << 20

    /// Whether the file at `path` holds a heading; nil when it cannot be read.
    static func file(_ path: String) -> Bool? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        var carried: [UInt8] = []
        var read = 0
        while read < limit, let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            read += chunk.count
            let bytes = carried + chunk
            if holdsHeading(bytes) { return true }
            // A sentence split across two chunks is seen whole in the next.
            carried = Array(bytes.suffix(96))
        }
        return false
    }

    /// A `$ttHDT,`, `$ttTHS,` or `$ttHDG,` sentence whose heading field has a value (THS: not
    /// mode V, invalid), or a gpsd `ATT` report with a heading.
    static func holdsHeading(_ bytes: [UInt8]) -> Bool {
        let dollar = UInt8(ascii: "$")
        var index = 0
        while index + 8 < bytes.count {
            defer { index += 1 }
            if bytes[index] == dollar {
                let type = bytes[(index + 3)..<(index + 7)]
                guard
                    type.elementsEqual("HDT,".utf8) || type.elementsEqual("THS,".utf8)
                        || type.elementsEqual("HDG,".utf8)
                else { continue }
                let first = bytes[index + 7]
                guard first >= UInt8(ascii: "0"), first <= UInt8(ascii: "9") else { continue }
                if type.elementsEqual("THS,".utf8), invalidTHS(bytes, from: index + 7) { continue }
                return true
            } else if bytes[index] == UInt8(ascii: "\""), matches(bytes, at: index, "\"class\":\"ATT\"") {
                var end = index
                while end < bytes.count, bytes[end] != UInt8(ascii: "\n") { end += 1 }
                if String(decoding: bytes[index..<end], as: UTF8.self).contains("\"heading\":") { return true }
            }
        }
        return false
    }

    private static func matches(_ bytes: [UInt8], at index: Int, _ text: String) -> Bool {
        let pattern = Array(text.utf8)
        return index + pattern.count <= bytes.count && bytes[index..<(index + pattern.count)].elementsEqual(pattern)
    }

    /// THS's mode field (after the heading) is V: the receiver says its heading is not valid.
    private static func invalidTHS(_ bytes: [UInt8], from start: Int) -> Bool {
        var index = start
        while index < bytes.count, bytes[index] != UInt8(ascii: ",") { index += 1 }
        return index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "V")
    }
}
