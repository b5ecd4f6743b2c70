import Foundation
import GPSLocation
import GPSLocationTesting
import TestSupport
import Testing

/// The real daemon, the real libgps: every TPV gpsd reports must reach our `Fix` exactly.
// Serialized: 29 gpsfake daemons at once on a small machine make clients miss gpsfake's
// 1.4 s start window; one at a time takes about a minute.
extension RealGPSD.LaneA {
    @Suite(
        "gpsd integration: real-receiver corpus", .serialized,
        .enabled(if: Conditions.gpsdAvailable, Conditions.gpsdMissingReason),
        .enabled(if: Conditions.corpusAvailable, Conditions.corpusMissingReason)
    )
    struct GPSDCorpusTests {
        static let logs = Paths.corpusLogs().map(\.log)
        /// SKYs at a log's start that gpsd builds from less than the log: quectelLC79D's first
        /// cycle's GPS, GLONASS, QZSS and BeiDou GSVs come while gpsd is still finding out what
        /// the device speaks, and its first SKY holds only the Galileo set that follows (every
        /// later SKY has them all, as ours does).
        static let skiesBeforeGPSDFollows = ["quectelLC79D.log": 1]

        @Test("every gpsd TPV reaches our Fix exactly", arguments: logs)
        func corpusLogMatchesChk(log: URL) async throws {
            let chk = Paths.corpusLogs().first { $0.log == log }!.chk
            let expected = ReferenceTPV.parse(try String(contentsOf: chk, encoding: .utf8))
            let (events, _) = try await replayThroughGPSD(log, expectedTPVs: expected.count)
            let fixes = events.compactMap { event -> Fix? in
                if case .fix(let fix) = event { fix } else { nil }
            }
            assertSameFixes(fixes, expected, name: log.lastPathComponent)
            // The NMEA path's SKYs are gpsd's (`assertSameSkies`).
            let skies = events.compactMap { event -> SkyView? in
                if case .sky(let sky) = event { sky } else { nil }
            }
            assertSameSkies(
                NMEASkyAgreement.skies(of: log), skies, name: log.lastPathComponent,
                skippingFirst: Self.skiesBeforeGPSDFollows[log.lastPathComponent, default: 0])
            // #49: what the app gets from the real daemon's reports — each epoch once, as gpsd's
            // last report of it (`DeliveredConformanceTests`, the same measure).
            let delivered = await DeliveredConformanceTests.delivered(FixListSource(fixes))
            let row = DeliveredAgreement.measure(name: log.lastPathComponent, delivered: delivered, gpsd: expected)
            print("  real gpsd, delivered: " + row.description)
            if !DeliveredConformanceTests.disputedLogs.contains(row.name) {
                // (bt451: the epoch its clock stepped back at is delivered from another of its
                // reports, one of the disputed epochs.)
                #expect(
                    row.sameTotal == row.knownTotal
                        || row.knownTotal - row.sameTotal
                            <= DeliveredConformanceTests.disputedMissing[row.name, default: 0],
                    "\(row)")
                #expect(row.missing.count <= DeliveredConformanceTests.disputedMissing[row.name, default: 0], "\(row)")
                #expect(row.duplicates == 0, "\(row)")
            }
        }
    }
}

/// Asserts count, mode, time and lat/lon (to 1e-9°) of `fixes` against gpsd's own TPVs.
func assertSameFixes(
    _ fixes: [Fix], _ expected: [ReferenceTPV], name: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(
        fixes.count == expected.count, "\(name): \(fixes.count) fixes, gpsd reported \(expected.count) TPVs",
        sourceLocation: sourceLocation)
    for (index, (fix, tpv)) in zip(fixes, expected).enumerated() {
        let label = "\(name) TPV #\(index)"
        #expect(fix.mode.rawValue == tpv.mode, "\(label): mode", sourceLocation: sourceLocation)
        switch (fix.time, tpv.time) {
        case (nil, nil): break
        case (let ours?, let theirs?):
            #expect(
                abs(ours.timeIntervalSince(theirs)) < 0.0005, "\(label): time \(ours) vs \(tpv.timeText ?? "")",
                sourceLocation: sourceLocation)
        default:
            Issue.record(
                "\(label): time \(String(describing: fix.time)) vs \(tpv.timeText ?? "nil")",
                sourceLocation: sourceLocation)
        }
        #expect(nearlyEqual(fix.latitude, tpv.latitude), "\(label): latitude", sourceLocation: sourceLocation)
        #expect(nearlyEqual(fix.longitude, tpv.longitude), "\(label): longitude", sourceLocation: sourceLocation)
    }
}
