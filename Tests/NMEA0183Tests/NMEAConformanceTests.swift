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
    /// gpsd's fix reports that carry no time (mode ≥ 2, a position, no `time`).
    var gpsdUntimed = 0
    /// …of which we report the same fix (mode and position), dated with its sentences' time.
    var untimedMatched = 0
    var untimedMissing: [String] = []

    var percent: Double { gpsdEpochs == 0 ? 100 : 100 * Double(matched) / Double(gpsdEpochs) }
    var perfect: Bool { matched == gpsdEpochs && extra.isEmpty && untimedMatched == gpsdUntimed }

    var description: String {
        String(
            format: "%-34@ %5d %5d %6.1f%% %4d %4d %4d %7d %5d", name as NSString, gpsdEpochs, matched, percent,
            missing.count, different.count, extra.count, gpsdUntimed, untimedMatched)
    }

    static func timeOfDay(_ date: Date) -> Int { Int((date.timeIntervalSince1970 * 1000).rounded()) % 86_400_000 }

    /// gpsd's fix epochs and ours, each by time of day: the last TPV with mode ≥ 2 and a position,
    /// and our last fix with a position, of each time.
    static func epochs(ours: [Fix], gpsd: [ReferenceTPV]) -> (reference: [Int: ReferenceTPV], mine: [Int: Fix]) {
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
        return (reference, mine)
    }

    /// Compares by time of day (gpsd 3.22 moves old dates by 1024 weeks; see the README).
    static func measure(name: String, ours: [Fix], gpsd: [ReferenceTPV]) -> Agreement {
        var result = Agreement(name: name)
        let (reference, mine) = epochs(ours: ours, gpsd: gpsd)
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
        // gpsd's reports without a time are compared by what they hold: ours with the same mode
        // and position (it may be dated — we keep the time its sentences carry — or not).
        var unmatched = Set(mine.keys.filter { reference[$0] == nil })
        var untimedOurs = ours.enumerated().filter { $0.element.hasPosition && $0.element.time == nil }.map(\.offset)
        for tpv in gpsd where tpv.mode >= 2 && tpv.time == nil && tpv.latitude != nil && tpv.longitude != nil {
            result.gpsdUntimed += 1
            // The same position; gpsd's mode may be lower: before it has learned a receiver's
            // cycle it reports sentence by sentence, so a GLL alone is 2D where the cycle's fix
            // (with the GGA's altitude and the GSA's mode) is 3D.
            let same = { (fix: Fix) in
                fix.mode.rawValue >= tpv.mode && nearlyEqual(fix.latitude, tpv.latitude, tolerance: 1e-7)
                    && nearlyEqual(fix.longitude, tpv.longitude, tolerance: 1e-7)
            }
            if let key = unmatched.sorted().first(where: { same(mine[$0]!) }) {
                unmatched.remove(key)
                result.untimedMatched += 1
            } else if let index = untimedOurs.firstIndex(where: { same(ours[$0]) }) {
                untimedOurs.remove(at: index)
                result.untimedMatched += 1
            } else if ours.contains(where: { $0.hasPosition && same($0) }) {
                // The cycle gpsd reported before it knew the date, and again once it did: we
                // report it once, with its time.
                result.untimedMatched += 1
            } else {
                result.untimedMissing.append("\(tpv.latitude ?? .nan),\(tpv.longitude ?? .nan) mode \(tpv.mode)")
            }
        }
        for key in unmatched.sorted() { result.extra.append(String(key)) }
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
        print("log                                epochs match  agree  miss diff extra untimed match")
        for row in rows { print(row) }
        for row in rows where !row.perfect {
            print(
                "\(row.name): missing \(row.missing.prefix(3)) different \(row.different.prefix(2)) extra \(row.extra.prefix(3)) untimed missing \(row.untimedMissing.prefix(3))"
            )
        }
        let perfect = rows.filter(\.perfect).count
        print("perfect agreement on \(perfect) of \(rows.count) logs")
        #expect(perfect == rows.count)
        for row in rows {
            // Every fix epoch gpsd reports, we report too, with the same mode and position.
            #expect(row.matched == row.gpsdEpochs, "\(row.name): \(row.missing) \(row.different)")
            // And every fix gpsd reports without a time (the first after a no-fix stretch), the
            // same fix — which we date with its sentences' time (README, "NMEA engine").
            #expect(row.untimedMatched == row.gpsdUntimed, "\(row.name): untimed missing \(row.untimedMissing)")
            // Nothing beyond gpsd's reports.
            #expect(row.extra.isEmpty, "\(row.name): extra \(row.extra)")
        }
    }
}
