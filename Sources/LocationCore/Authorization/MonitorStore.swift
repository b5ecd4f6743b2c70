import FoundationEssentials
import GNSSCore
import Glibc

/// Where monitored regions live between runs, so a daemon restarted by systemd gets its
/// geofences back with their last known states: one JSON file per monitor under
/// `$XDG_STATE_HOME/gpslocation/monitors/APP/` (falling back to `~/.local/state`), the folder
/// mode 0700 and owned by the user (anything else is refused), each file written whole, mode
/// 0600 (`PrivateFile.replace`). `CLMonitor("name")` uses `monitor-NAME.json` (the name
/// percent-encoded); the legacy `CLLocationManager.startMonitoring(for:)` regions use
/// `regions.json`.
public struct MonitorStore: Sendable {
    /// One stored condition and what was last known of it.
    public struct Condition: Codable, Sendable, Equatable {
        /// The condition's identifier.
        public var identifier: String
        /// The circle's centre, degrees north.
        public var latitude: Double
        /// The circle's centre, degrees east.
        public var longitude: Double
        /// The circle's radius, metres.
        public var radius: Double
        /// Entering is reported (legacy regions).
        public var notifyOnEntry: Bool
        /// Leaving is reported (legacy regions).
        public var notifyOnExit: Bool
        /// "inside", "outside" or "unknown".
        public var state: String
        /// The time of the last event (nil: none yet).
        public var date: Date?

        /// A condition as stored: a circle and its last known state.
        public init(
            identifier: String, latitude: Double, longitude: Double, radius: Double, notifyOnEntry: Bool = true,
            notifyOnExit: Bool = true, state: String = "unknown", date: Date? = nil
        ) {
            self.identifier = identifier
            self.latitude = latitude
            self.longitude = longitude
            self.radius = radius
            self.notifyOnEntry = notifyOnEntry
            self.notifyOnExit = notifyOnExit
            self.state = state
            self.date = date
        }
    }

    /// Why the store could not be read or written.
    public typealias Failure = FileProblem

    /// The first format (0.3): one object per condition, about 170 bytes each — 100,000 circles
    /// with six-decimal coordinates did not fit the size limit. Still read.
    private struct FileVersion1: Codable {
        var version = 1
        var monitor: String
        var conditions: [Condition]
    }

    /// The format written since 0.4.0: one array per condition, in the order `fields` names —
    /// about 88 bytes for a circle with a 26-character id and full-precision coordinates, so the
    /// limit holds about 190,000 of them.
    private struct FileVersion2: Codable {
        var version = 2
        var monitor: String
        var fields = Self.columns
        var conditions: [Row]
        static let columns = ["identifier", "latitude", "longitude", "radius", "notify", "state", "date"]
    }

    /// One condition as `[identifier, latitude, longitude, radius, notify, state, date]`:
    /// `notify` 1 for entry + 2 for exit, `date` seconds since 1970 or null.
    private struct Row: Codable {
        var condition: Condition

        init(_ condition: Condition) { self.condition = condition }

        init(from decoder: any Decoder) throws {
            var row = try decoder.unkeyedContainer()
            let identifier = try row.decode(String.self)
            let latitude = try row.decode(Double.self)
            let longitude = try row.decode(Double.self)
            let radius = try row.decode(Double.self)
            let notify = try row.decode(Int.self)
            let state = try row.decode(String.self)
            let date = try row.decodeNil() ? nil : Date(timeIntervalSince1970: try row.decode(Double.self))
            condition = Condition(
                identifier: identifier, latitude: latitude, longitude: longitude, radius: radius,
                notifyOnEntry: notify & 1 != 0, notifyOnExit: notify & 2 != 0, state: state, date: date)
        }

        func encode(to encoder: any Encoder) throws {
            var row = encoder.unkeyedContainer()
            try row.encode(condition.identifier)
            try row.encode(condition.latitude)
            try row.encode(condition.longitude)
            try row.encode(condition.radius)
            try row.encode((condition.notifyOnEntry ? 1 : 0) + (condition.notifyOnExit ? 2 : 0))
            try row.encode(condition.state)
            if let date = condition.date { try row.encode(date.timeIntervalSince1970) } else { try row.encodeNil() }
        }
    }

    private struct Version: Codable { var version: Int }

    /// The folder holding every app's monitors.
    public let directory: URL

    /// A store in `directory` (default: the user's, see `defaultDirectory()`).
    public init(directory: URL? = nil) { self.directory = directory ?? Self.defaultDirectory() }

    /// `$XDG_STATE_HOME/gpslocation/monitors`, else `~/.local/state/gpslocation/monitors`.
    public static func defaultDirectory() -> URL {
        PrivateFile.userDirectory(.state, "monitors")
    }

    /// The name of the legacy region list (`CLLocationManager.monitoredRegions`).
    public static let legacyRegions = "\u{0}regions"

    /// The file for `monitor` of `app`.
    public func file(monitor: String, app: String) throws(Failure) -> URL {
        guard !app.isEmpty, !app.hasPrefix("."),
            app.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
        else {
            throw .badAppID(app: app)
        }
        let folder = directory.appendingPathComponent(app)
        if monitor == Self.legacyRegions { return folder.appendingPathComponent("regions.json") }
        guard !monitor.isEmpty, monitor.utf8.count <= 200 else {
            throw .badMonitorName(bytes: monitor.utf8.count)
        }
        var encoded = ""
        for byte in monitor.utf8 {
            let scalar = Unicode.Scalar(byte)
            if byte < 0x80
                && (Character(scalar).isLetter || Character(scalar).isNumber || "_-".unicodeScalars.contains(scalar))
            {
                encoded.unicodeScalars.append(scalar)
            } else {
                let hex = String(byte, radix: 16, uppercase: true)
                encoded += "%" + (hex.count < 2 ? "0" : "") + hex
            }
        }
        return folder.appendingPathComponent("monitor-\(encoded).json")
    }

    /// The stored conditions of `monitor` (empty when there is no file yet).
    public func conditions(monitor: String, app: String) throws(Failure) -> [Condition] {
        let url = try file(monitor: monitor, app: app)
        try checkFolder(url.deletingLastPathComponent(), create: false)
        let descriptor: Int32
        switch PrivateFile.openRegular(url.path, flags: O_RDONLY) {
        case .success(let opened): descriptor = opened
        case .failure(let failure) where failure.isMissing: return []
        case .failure(let failure): throw .notAMonitorFile(failure)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .cannotRead(path: url.path, errno: errno) }
        guard info.st_size <= Self.maximumFileSize else {
            throw .monitorTooLarge(path: url.path, megabytes: Self.maximumFileSize >> 20)
        }
        guard let data = PrivateFile.readAll(descriptor, maximumSize: Self.maximumFileSize + 1) else {
            throw .cannotRead(path: url.path, errno: errno)
        }
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            switch try decoder.decode(Version.self, from: data).version {
            case 1: return try decoder.decode(FileVersion1.self, from: data).conditions
            case 2: return try decoder.decode(FileVersion2.self, from: data).conditions.map(\.condition)
            case let version:
                throw Failure.newerMonitorFormat(path: url.path, version: version)
            }
        } catch let failure as Failure {
            throw failure
        } catch {
            throw .unreadableMonitor(path: url.path, detail: "\(error)")
        }
    }

    /// The largest monitor file: `save` refuses to write more than `conditions` reads (about
    /// 190,000 circles with 26-character ids), so nothing is ever written that cannot be read back.
    public static let maximumFileSize = 16 << 20

    /// Replaces the stored conditions of `monitor` (removes the file when there are none).
    public func save(_ conditions: [Condition], monitor: String, app: String) throws(Failure) {
        let url = try file(monitor: monitor, app: app)
        try checkFolder(url.deletingLastPathComponent(), create: true)
        if conditions.isEmpty {
            if unlink(url.path) != 0 && errno != ENOENT {
                throw .cannotRemove(path: url.path, errno: errno)
            }
            return
        }
        let encoder = JSONEncoder()
        // Compact (not pretty-printed), one array per condition: 100,000 circles take ~9 MB.
        encoder.outputFormatting = [.sortedKeys]
        let data: Data
        do {
            data = try encoder.encode(
                FileVersion2(
                    monitor: monitor == Self.legacyRegions ? "" : monitor, conditions: conditions.map(Row.init)))
        } catch {
            throw .monitorNotEncodable(monitor: monitor, detail: "\(error)")
        }
        guard data.count <= Self.maximumFileSize else {
            throw .monitorTooBig(
                monitor: monitor, megabytes: data.count >> 20, conditions: conditions.count,
                maximum: Self.maximumFileSize >> 20)
        }
        try PrivateFile.replace(url, with: data)
    }

    /// The monitor names stored for `app` (legacy regions not included).
    public func monitors(app: String) -> [String] {
        let folder = directory.appendingPathComponent(app)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.compactMap { name -> String? in
            guard name.hasPrefix("monitor-"), name.hasSuffix(".json") else { return nil }
            return Self.percentDecoded(name.dropFirst(8).dropLast(5))
        }.sorted()
    }

    /// The folder must be a folder owned by the user and closed to others: the files in it
    /// decide what a daemon is told about where it is.
    private func checkFolder(_ folder: URL, create: Bool) throws(Failure) {
        if create {
            do {
                try FileManager.default.createDirectory(
                    at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw .monitorFolder(.cannotCreate(path: folder.path, errno: PrivateFile.systemCode(error)))
            }
        }
        if !create && !FileManager.default.fileExists(atPath: folder.path) { return }
        if let problem = PrivateFile.folderProblem(folder) { throw .monitorFolder(problem) }
    }
}

extension MonitorStore {
    /// A monitor's name from its file name: `%XX` escapes back to bytes; nil when an escape is
    /// malformed or the bytes are not UTF-8 (`removingPercentEncoding`'s answers).
    static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte == UInt8(ascii: "%") {
                let first = utf8.index(after: index)
                guard first < utf8.endIndex else { return nil }
                let second = utf8.index(after: first)
                guard second < utf8.endIndex,
                    let value = UInt8(String(decoding: [utf8[first], utf8[second]], as: UTF8.self), radix: 16)
                else { return nil }
                bytes.append(value)
                index = utf8.index(after: second)
            } else {
                bytes.append(byte)
                index = utf8.index(after: index)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }
}
