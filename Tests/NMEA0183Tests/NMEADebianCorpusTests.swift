import Foundation
import GNSSCore
import TestSupport
import Testing

@testable import NMEA0183

/// #35: the NMEA engine against gpsd 3.22's whole regression corpus (every NMEA log of Debian's
/// gpsd 3.22-4.1+deb12u1 `test/daemon/` with its `.chk`), fetched by
/// `scripts/fetch-gpsd-corpus.sh` — receivers the rules were never fitted to. Reports per log
/// and per field; the floor is 99.5 % of the values gpsd reports on matched epochs, and every
/// fix epoch gpsd reports outside the documented disputes (`disputes`).
@Suite(
    "NMEA engine against gpsd 3.22's whole regression corpus",
    .enabled(
        if: !Paths.debianCorpusLogs().isEmpty,
        "the Debian gpsd corpus is not fetched: run scripts/fetch-gpsd-corpus.sh (.ci/run does)"),
    .timeLimit(.minutes(5)))
struct NMEADebianCorpusTests {
    @Test("every field of every epoch, per log, over the Debian gpsd 3.22 corpus")
    func debianCorpus() throws {
        var positions: [Agreement] = []
        var fields: [FieldAgreement] = []
        for (log, chk) in Paths.debianCorpusLogs() {
            let data = try Data(contentsOf: log)
            let (fixes, _) = NMEADecoder.fixes(in: data)
            let reference = ReferenceTPV.parse(try String(contentsOf: chk, encoding: .utf8))
            let name = log.lastPathComponent
            positions.append(Agreement.measure(name: name, ours: fixes, gpsd: reference))
            let estimates = FieldAgreement.receiverEstimates(String(decoding: data, as: UTF8.self))
            fields.append(
                FieldAgreement.measure(
                    name: name, ours: fixes, gpsd: reference, estimates: estimates))
        }
        print("log                                epochs match  agree  miss diff extra untimed match")
        for row in positions where !row.perfect { print(row) }
        for row in positions where !row.perfect {
            print(
                "  \(row.name): missing \(row.missing.prefix(3)) different \(row.different.prefix(2)) extra "
                    + "\(row.extra.prefix(3)) untimed missing \(row.untimedMissing.prefix(3))")
        }
        let total = FieldAgreement.report(fields, onlyImperfect: true)
        let epochs = positions.reduce(0) { $0 + $1.gpsdEpochs }
        let matched = positions.reduce(0) { $0 + $1.matched }
        print(
            String(
                format: "Debian gpsd corpus: %d logs; positions %d of %d epochs; fields %.2f%% (%d of %d values)",
                positions.count, matched, epochs, total.percent, total.sameTotal, total.knownTotal))
        #expect(total.percent >= 99.5)
    }
}
