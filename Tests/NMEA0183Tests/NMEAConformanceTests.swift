import Foundation
import GNSSCore
import TestSupport
import Testing

@testable import NMEA0183

/// Agreement of our NMEA engine with gpsd 3.22 on one recording.
struct Agreement: CustomStringConvertible {
    var name: String
    /// gpsd's fix epochs: distinct times of day with mode ≥ 2 and a position (the last TPV of each).
    var gpsdEpochs = 0
    var matched = 0
    var missing: [String] = []
    var different: [String] = []
    var extra: [String] = []

    var percent: Double { gpsdEpochs == 0 ? 100 : 100 * Double(matched) / Double(gpsdEpochs) }
    var perfect: Bool { matched == gpsdEpochs && extra.isEmpty }

    var description: String {
        String(
            format: "%-34@ %5d %5d %6.1f%% %4d %4d %4d", name as NSString, gpsdEpochs, matched, percent, missing.count,
            different.count, extra.count)
    }

    static func timeOfDay(_ date: Date) -> Int { Int((date.timeIntervalSince1970 * 1000).rounded()) % 86_400_000 }

    /// Compares by time of day (gpsd 3.22 moves old dates by 1024 weeks; see the README).
    static func measure(name: String, ours: [Fix], gpsd: [ReferenceTPV]) -> Agreement {
        var result = Agreement(name: name)
        var reference: [Int: ReferenceTPV] = [:]
        for tpv in gpsd where tpv.mode >= 2 {
            guard let time = tpv.time, tpv.latitude != nil, tpv.longitude != nil else { continue }
            reference[timeOfDay(time)] = tpv
        }
        var mine: [Int: Fix] = [:]
        for fix in ours where fix.hasPosition {
            guard let time = fix.time else { continue }
            mine[timeOfDay(time)] = fix
        }
        result.gpsdEpochs = reference.count
        for (key, tpv) in reference.sorted(by: { $0.key < $1.key }) {
            guard let fix = mine[key] else {
                result.missing.append("\(tpv.timeText ?? "?")")
                continue
            }
            if fix.mode.rawValue == tpv.mode && nearlyEqual(fix.latitude, tpv.latitude, tolerance: 1e-7)
                && nearlyEqual(fix.longitude, tpv.longitude, tolerance: 1e-7)
            {
                result.matched += 1
            } else {
                result.different.append(
                    "\(tpv.timeText ?? "?"): ours mode \(fix.mode.rawValue) \(fix.latitude ?? .nan),\(fix.longitude ?? .nan); gpsd mode \(tpv.mode) \(tpv.latitude ?? .nan),\(tpv.longitude ?? .nan)"
                )
            }
        }
        for key in mine.keys.sorted() where reference[key] == nil { result.extra.append(String(key)) }
        return result
    }
}

@Suite(
    "NMEA engine agrees with gpsd",
    .enabled(
        if: !Paths.corpusLogs().isEmpty,
        "real-receiver corpus tests skipped: ../shared/corpus is not beside this checkout"),
    .timeLimit(.minutes(5)))
struct NMEAConformanceTests {
    @Test("per-log agreement with gpsd 3.22 over the real-receiver corpus")
    func corpusAgreement() throws {
        var rows: [Agreement] = []
        for (log, chk) in Paths.corpusLogs() {
            let (fixes, _) = NMEADecoder.fixes(in: try Data(contentsOf: log))
            let reference = ReferenceTPV.parse(try String(contentsOf: chk, encoding: .utf8))
            rows.append(Agreement.measure(name: log.lastPathComponent, ours: fixes, gpsd: reference))
        }
        print("log                                epochs match  agree  miss diff extra")
        for row in rows { print(row) }
        for row in rows where !row.perfect {
            print(
                "\(row.name): missing \(row.missing.prefix(3)) different \(row.different.prefix(2)) extra \(row.extra.prefix(3))"
            )
        }
        let perfect = rows.filter(\.perfect).count
        print("perfect agreement on \(perfect) of \(rows.count) logs")
        #expect(perfect >= 26)
        for row in rows {
            // Every fix epoch gpsd reports, we report too, with the same mode and position.
            #expect(row.matched == row.gpsdEpochs, "\(row.name): \(row.missing) \(row.different)")
            // The only epochs we report beyond gpsd are the documented ones (README, "NMEA engine").
            #expect(row.extra.count == (Self.documentedExtras[row.name] ?? 0), "\(row.name): extra \(row.extra)")
        }
    }

    /// The first fix after a no-fix stretch: gpsd 3.22 reports it without a time (so it is no
    /// timed epoch of gpsd's), we report it with the time its sentences carry.
    static let documentedExtras = ["bt451.log": 1, "motorola-t805.log": 1, "rgm3800.log": 1]
}
