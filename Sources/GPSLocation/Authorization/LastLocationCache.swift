import Foundation

/// The last location an app received, kept per user and per app so a new manager can show it
/// at once (Apple's `manager.location` before updates start) and `gpsloc last` can print it.
///
/// Only what passed the authorization gate for that app is written — a reduced-accuracy app's
/// cache holds its reduced location, never the precise one — and only locations from a
/// receiver (`sourceInformation.isProducedByAccessory`): a replay's recorded position is never
/// kept as if it were where the machine is. Files: `$XDG_CACHE_HOME/gpslocation/last/APP.json`
/// (or `~/.cache/…`), mode 0600 in a 0700 folder, written whole to a new temporary file
/// (`O_EXCL|O_NOFOLLOW`) and renamed over the old one, at most once per `writeInterval` per
/// manager plus once when updates stop.
public final class LastLocationCache: Sendable {
    /// The folder of the cache (default: `defaultDirectory()`).
    public let directory: URL
    /// Seconds between writes while locations keep coming.
    public let writeInterval: TimeInterval
    /// At most one write a minute's half per app: a last location is a hint, and a 10 Hz
    /// receiver must not wear the disk (gpslocd's per-uid store follows the same rule).
    public static let defaultWriteInterval: TimeInterval = 30
    /// Keep simulated locations too (for tests of the cache itself).
    package let recordsSimulated: Bool
    private let lastWrite = Locked(Writes())

    /// When each app's location was last written; the latest app is kept apart, so the usual
    /// case (one app, a location ten times a second) compares one string instead of hashing.
    private struct Writes {
        var app = ""
        var time = Date.distantPast
        var others: [String: Date] = [:]

        subscript(app: String) -> Date? {
            get { app == self.app ? time : others[app] }
            set {
                if app != self.app {
                    if !self.app.isEmpty { others[self.app] = time }
                    self.app = app
                    others[app] = nil
                }
                time = newValue ?? .distantPast
            }
        }
    }

    /// A cache in `directory` (default: the user's), written at most every `writeInterval` seconds.
    public init(directory: URL? = nil, writeInterval: TimeInterval = LastLocationCache.defaultWriteInterval) {
        self.directory = directory ?? Self.defaultDirectory()
        self.writeInterval = writeInterval
        recordsSimulated = false
    }

    package init(directory: URL, writeInterval: TimeInterval, recordsSimulated: Bool) {
        self.directory = directory
        self.writeInterval = writeInterval
        self.recordsSimulated = recordsSimulated
    }

    /// The user's cache.
    public static let user = LastLocationCache()

    /// `$XDG_CACHE_HOME/gpslocation/last`, else `~/.cache/gpslocation/last`.
    public static func defaultDirectory() -> URL {
        PrivateFile.userDirectory(.cache, "last")
    }

    private struct Entry: Codable {
        var version = 1
        var app: String
        var location: CLLocation
    }

    /// The file for `app` (app ids are letters, digits, '.', '_', '-'; others are refused).
    func file(for app: String) -> URL? {
        guard !app.isEmpty, !app.hasPrefix("."),
            app.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) })
        else { return nil }
        return directory.appendingPathComponent(app + ".json")
    }

    /// Records `location` as `app`'s last one, unless one was written less than
    /// `writeInterval` ago (`force`: write now, e.g. when updates stop). Returns whether it
    /// wrote. Failures are not errors for the app: the cache is a convenience.
    @discardableResult
    public func record(_ location: CLLocation, for app: String, now: Date = Date(), force: Bool = false) -> Bool {
        guard recordsSimulated || location.sourceInformation?.isProducedByAccessory == true else { return false }
        let due = lastWrite.withLock { writes -> Bool in
            if !force, let last = writes[app], now.timeIntervalSince(last) < writeInterval, now >= last { return false }
            writes[app] = now
            return true
        }
        guard due, let url = file(for: app) else { return false }
        guard let data = try? JSONEncoder().encode(Entry(app: app, location: location)) else { return false }
        return Self.writeAtomically(data, to: url)
    }

    /// `app`'s last location, or nil when there is none (or the file is not a cache entry, or
    /// the folder is not private: see `folderProblem`).
    public func location(for app: String) -> CLLocation? {
        // Only from a private folder of the user's (a planted file in a folder others can write
        // is never taken for the app's own location), a regular file, bounded.
        guard let url = file(for: app), let data = PrivateFile.read(url, maximumSize: 1 << 16),
            let entry = try? JSONDecoder().decode(Entry.self, from: data), entry.app == app
        else { return nil }
        return entry.location
    }

    /// What `app` may see of its cached location under `decision` now: nothing unless it is
    /// authorized; with reduced accuracy, only a location that was reduced when it was cached.
    public func location(for app: String, allowedBy decision: AuthorizationDecision) -> CLLocation? {
        guard decision.status.isAuthorized, let location = location(for: app), decision.permits(cached: location)
        else { return nil }
        return location
    }

    /// What is wrong with the cache's folder (open to others, not the user's), with the fix.
    public var folderProblem: String? { PrivateFile.folderProblem(directory) }

    /// Forgets `app`'s location.
    public func remove(app: String) {
        guard let url = file(for: app) else { return }
        unlink(url.path)
    }

    private static func writeAtomically(_ data: Data, to url: URL) -> Bool {
        try? FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        do {
            try PrivateFile.replace(url, with: data)
            return true
        } catch {
            return false
        }
    }
}

/// `CLLocation` encodes every field, GPSLocation's details and its source (for the cache).
extension CLLocation: Codable {
    private enum Keys: String, CodingKey {
        case latitude, longitude, altitude, ellipsoidalAltitude, horizontalAccuracy, verticalAccuracy, course
        case courseAccuracy, speed, speedAccuracy, timestamp, fixMode, quality, accuracyClass, reduced, device
        case simulated, accessory
    }

    /// Encodes every value by name (`Codable`).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(coordinate.latitude, forKey: .latitude)
        try container.encode(coordinate.longitude, forKey: .longitude)
        try container.encode(altitude, forKey: .altitude)
        try container.encode(ellipsoidalAltitude, forKey: .ellipsoidalAltitude)
        try container.encode(horizontalAccuracy, forKey: .horizontalAccuracy)
        try container.encode(verticalAccuracy, forKey: .verticalAccuracy)
        try container.encode(course, forKey: .course)
        try container.encode(courseAccuracy, forKey: .courseAccuracy)
        try container.encode(speed, forKey: .speed)
        try container.encode(speedAccuracy, forKey: .speedAccuracy)
        try container.encode(timestamp.timeIntervalSince1970, forKey: .timestamp)
        if let gnss {
            try container.encode(gnss.fixMode.rawValue, forKey: .fixMode)
            try container.encode(gnss.quality.rawValue, forKey: .quality)
            try container.encode(gnss.accuracyClass.description, forKey: .accuracyClass)
            try container.encode(gnss.reduced, forKey: .reduced)
            try container.encodeIfPresent(gnss.device, forKey: .device)
        }
        if let sourceInformation {
            try container.encode(sourceInformation.isSimulatedBySoftware, forKey: .simulated)
            try container.encode(sourceInformation.isProducedByAccessory, forKey: .accessory)
        }
    }

    /// Decodes what `encode(to:)` wrote.
    public convenience init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        func number(_ key: Keys) throws -> Double {
            let value = try container.decode(Double.self, forKey: key)
            guard value.isFinite else {
                throw DecodingError.dataCorruptedError(forKey: key, in: container, debugDescription: "not finite")
            }
            return value
        }
        let latitude = try number(.latitude)
        let longitude = try number(.longitude)
        guard abs(latitude) <= 90, abs(longitude) <= 180 else {
            throw DecodingError.dataCorruptedError(
                forKey: .latitude, in: container, debugDescription: "coordinate out of range")
        }
        var gnss: GNSSDetails?
        if let mode = try container.decodeIfPresent(Int.self, forKey: .fixMode).flatMap(FixMode.init(rawValue:)) {
            let accuracyName = try container.decodeIfPresent(String.self, forKey: .accuracyClass)
            gnss = GNSSDetails(
                fixMode: mode,
                quality: try container.decodeIfPresent(Int.self, forKey: .quality).flatMap(FixQuality.init(rawValue:))
                    ?? .unknown,
                accuracyClass: AccuracyClass.allCases.first { $0.description == accuracyName } ?? .coarse,
                reduced: try container.decodeIfPresent(Bool.self, forKey: .reduced) ?? false,
                device: try container.decodeIfPresent(String.self, forKey: .device))
        }
        var source: CLLocationSourceInformation?
        if let simulated = try container.decodeIfPresent(Bool.self, forKey: .simulated) {
            source = CLLocationSourceInformation(
                softwareSimulationState: simulated,
                andExternalAccessoryState: try container.decodeIfPresent(Bool.self, forKey: .accessory) ?? false)
        }
        self.init(
            coordinate: CLLocationCoordinate2D(latitude: latitude, longitude: longitude),
            altitude: try number(.altitude), ellipsoidalAltitude: try number(.ellipsoidalAltitude),
            horizontalAccuracy: try number(.horizontalAccuracy), verticalAccuracy: try number(.verticalAccuracy),
            course: try number(.course), courseAccuracy: try number(.courseAccuracy), speed: try number(.speed),
            speedAccuracy: try number(.speedAccuracy),
            timestamp: Date(timeIntervalSince1970: try number(.timestamp)), gnss: gnss, sourceInformation: source)
    }
}
