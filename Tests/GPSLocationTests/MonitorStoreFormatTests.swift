import Foundation
import Testing

@testable import GPSLocation
@testable import LocationCore

/// #33: the monitor file holds what a geofence daemon is given — 100,000 circles with real ids
/// and full-precision coordinates fit, and read back exactly; files of the first format are
/// still read.
@Suite("monitor files: size and formats", .timeLimit(.minutes(5)))
struct MonitorStoreFormatTests {
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("monitor-format-\(UUID())")
        try FileManager.default.createDirectory(
            at: url, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return url
    }

    @Test("100,000 circles with 26-character ids and full-precision coordinates are saved and read back")
    func hundredThousand() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = MonitorStore(directory: folder)
        var conditions: [MonitorStore.Condition] = []
        for index in 0..<100_000 {
            let step = Double(index)
            let latitude: Double = 51.123456789012 + step * 1.7e-7
            let longitude: Double = -2.987654321098 - step * 2.3e-7
            let radius: Double = 50 + Double(index % 7) * 12.5
            let date: Date? = index % 5 == 0 ? Date(timeIntervalSince1970: 1_800_000_000.25 + step) : nil
            conditions.append(
                MonitorStore.Condition(
                    identifier: "site-\(index)-north-entrance", latitude: latitude, longitude: longitude,
                    radius: radius, notifyOnEntry: index % 2 == 0, notifyOnExit: true,
                    state: index % 3 == 0 ? "inside" : "outside", date: date))
        }
        try store.save(conditions, monitor: "geofenced", app: "geofenced")
        let file = try store.file(monitor: "geofenced", app: "geofenced")
        let size = try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int ?? 0
        print("monitor file: 100,000 circles in \(size / 1000) kB (limit \(MonitorStore.maximumFileSize >> 20) MB)")
        // ~88 bytes a circle: about 190,000 such circles fit.
        #expect(size < MonitorStore.maximumFileSize * 6 / 10)
        #expect(try store.conditions(monitor: "geofenced", app: "geofenced") == conditions)
    }

    @Test("a file of the first format (0.3) is read; a newer format is refused with what to do")
    func formats() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = MonitorStore(directory: folder)
        let file = try store.file(monitor: "old", app: "app")
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700])
        let first = #"{"version":1,"monitor":"old","conditions":[{"identifier":"yard","latitude":51.45,"#
        let second = #""longitude":-2.59,"radius":60,"notifyOnEntry":true,"notifyOnExit":false,"#
        let third = #""state":"inside","date":"2026-06-15T08:00:00Z"}]}"#
        try Data((first + second + third).utf8).write(to: file)
        let read = try store.conditions(monitor: "old", app: "app")
        #expect(read.count == 1 && read.first?.identifier == "yard" && read.first?.notifyOnExit == false)
        #expect(read.first?.date == ISO8601DateFormatter().date(from: "2026-06-15T08:00:00Z"))
        try Data(#"{"version":9,"monitor":"old","conditions":[]}"#.utf8).write(to: file)
        #expect {
            try store.conditions(monitor: "old", app: "app")
        } throws: { error in
            (error as? MonitorStore.Failure)?.description.contains("newer GPSLocation") == true
        }
    }
}
