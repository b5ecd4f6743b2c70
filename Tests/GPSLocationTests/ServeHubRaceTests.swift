import Foundation
import GNSSCore
import Testing

@testable import GPSLocCLI
@testable import LocationCore

/// #53 under Thread Sanitizer (scripts/tsan.sh runs it): the engine's thread adds and publishes
/// while pages' streams read on their own threads, as libmicrohttpd's connection threads do.
@Suite("gpsloc serve's hub with streams on other threads")
struct ServeHubRaceTests {
    @Test("four streams read while locations are added and published: each gets every id once, in order")
    func streamsWhileAdding() async {
        let hub = ServeHub(settings: ServeHub.Settings(batch: 3600, capacity: 10_000, replay: nil))
        hub.authorization(status: .authorizedAlways, accuracy: .fullAccuracy, reason: nil)
        let total = 1_000
        let streams = (0..<4).map { _ in ServeStream(hub: hub, after: 0) }
        let seen = Locked<[[Int]]>(Array(repeating: [], count: streams.count))
        let group = DispatchGroup()
        for (index, stream) in streams.enumerated() {
            group.enter()
            DispatchQueue.global().async {
                var text = ""
                var ids: [Int] = []
                while ids.last != total, let bytes = stream.next(max: 4096) {
                    text += String(decoding: bytes, as: UTF8.self)
                    // Whole events only; the rest waits for its next bytes.
                    while let end = text.range(of: "\n\n") {
                        let event = String(text[..<end.lowerBound])
                        text = String(text[end.upperBound...])
                        guard event.hasPrefix("event: locations"),
                            let data = event.split(separator: "\n").first(where: { $0.hasPrefix("data: ") }),
                            let batch = try? JSONSerialization.jsonObject(with: Data(String(data.dropFirst(6)).utf8))
                                as? [[String: Any]]
                        else { continue }
                        // The latitude carries the id (see below).
                        ids += batch.compactMap { ($0["latitude"] as? Double).map { Int((($0 - 50) * 1e5).rounded()) } }
                    }
                }
                seen.withLock { $0[index] = ids }
                group.leave()
            }
        }
        group.enter()
        DispatchQueue.global().async {
            for id in 1...total {
                hub.add(
                    LocationValue(
                        coordinate: CLLocationCoordinate2D(latitude: 50 + Double(id) * 1e-5, longitude: 0),
                        altitude: 0, horizontalAccuracy: 5, verticalAccuracy: -1, course: -1, courseAccuracy: -1,
                        speed: -1, speedAccuracy: -1, timestamp: Date(timeIntervalSince1970: 1_800_000_000 + Double(id))
                    ))
                if id.isMultiple(of: 50) { hub.publish() }
                if id.isMultiple(of: 300) {
                    hub.sky(SkyView(time: nil, satellites: [], dilution: DilutionOfPrecision()))
                }
            }
            hub.publish()
            group.leave()
        }
        await withCheckedContinuation { continuation in group.notify(queue: .global()) { continuation.resume() } }
        hub.stop()
        for ids in seen.withLock({ $0 }) {
            #expect(ids == Array(1...total), "\(ids.count) ids, first \(ids.prefix(3)), last \(ids.suffix(3))")
        }
    }
}
