// `gpsloc-bench epochs [--cycles N] [--order O|all] [--baud B|burst] [--interval S]`: #49's live
// latency — for each receiver order, how long after an epoch's last sentence the manager
// delivers it, beside gpspipe's line of gpsd's complete TPV (`EpochLatencyProbe`).
import Foundation
import GPSLocation
import GPSLocationTesting

func epochLatency(_ arguments: [String]) async throws {
    let cycles = Int(flag("--cycles", in: arguments) ?? "") ?? 60
    let orderName = flag("--order", in: arguments) ?? "all"
    let orders =
        orderName == "all"
        ? EpochLatencyProbe.Order.allCases
        : try [
            EpochLatencyProbe.Order(rawValue: orderName).orThrow(
                BenchError("--order: gga-first, rmc-first, gst-after-fix or all"))
        ]
    let pacings: [Int?] =
        switch flag("--baud", in: arguments) {
        case nil: [9600, nil]
        case "burst": [nil]
        case let text?: [try Int(text).orThrow(BenchError("--baud: a line speed or burst"))]
        }
    let interval = Double(flag("--interval", in: arguments) ?? "") ?? 0
    func ms(_ value: Double?) -> String { value.map { String(format: "%.2f", $0 * 1000) } ?? "-" }
    print("order          pacing     epochs  ours p50/p99 ms   gpspipe p50/p99 ms   added p50/p99 ms  whole  waited")
    for order in orders {
        for baud in pacings {
            let outcome = try await EpochLatencyProbe.run(order: order, baud: baud, cycles: cycles, interval: interval)
            let timed = outcome.warmup..<outcome.epochs.count
            let ours = timed.compactMap { outcome.ourDelays[$0] }
            let gpsd = timed.compactMap { outcome.gpsdDelays[$0] }
            let added = timed.compactMap { index in
                outcome.ourDelays[index].flatMap { ours in outcome.gpsdDelays[index].map { ours - $0 } }
            }
            let whole = outcome.epochs.count - outcome.incomplete.count
            let p = EpochLatencyProbe.percentile
            print(
                order.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0)
                    + (baud.map { "\($0) baud" } ?? "burst").padding(toLength: 11, withPad: " ", startingAt: 0)
                    + String(format: "%6d", outcome.epochs.count)
                    + "  \(ms(p(ours, 50)))/\(ms(p(ours, 99)))".padding(toLength: 18, withPad: " ", startingAt: 0)
                    + "  \(ms(p(gpsd, 50)))/\(ms(p(gpsd, 99)))".padding(toLength: 21, withPad: " ", startingAt: 0)
                    + "  \(ms(p(added, 50)))/\(ms(p(added, 99)))".padding(toLength: 18, withPad: " ", startingAt: 0)
                    + String(format: "%5d", whole) + String(format: "%8d", outcome.waitedForNext.count))
        }
    }
}

extension Optional {
    func orThrow(_ error: some Error) throws -> Wrapped {
        guard let self else { throw error }
        return self
    }
}
