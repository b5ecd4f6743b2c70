import Foundation
import GNSSCore
import GPSLocation

/// A program with reduced accuracy behind gpslocd: the library's location engine, with its gate
/// and `LocationFuzzer` (the uid's secret and kept cell, in gpslocd's state folder), reads gpsd's
/// fixes; on each fix with a position the program gets one line — the grid point the fuzzer
/// last let out, with reduced accuracy's fields (no altitude, speed, course, receiver or
/// estimate), at the fix's time — or nothing before the first point. Every program of one uid
/// shares the secret and the kept cell, so five app ids get one position. Headings go without
/// the receiver's magnetic variation (it would say where the receiver is).
final class ReducedSession: Sendable {
    private let runner: EngineRunner
    private let current = Locked<CLLocation?>(nil)

    init(
        client: BrokerClient, endpoint: GPSDEndpoint, store: ReducedAccuracyStore,
        delivered: @escaping @Sendable (String) -> Void
    ) {
        let current = self.current
        let source = TappedLocationSource(GPSDLocationSource(endpoint: endpoint, sky: true)) { event in
            switch event {
            case .fix(let fix) where fix.hasPosition:
                guard let point = current.withLock({ $0 }) else { return }
                let reduced = Fix(
                    mode: .twoDimensional, time: fix.time, latitude: point.coordinate.latitude,
                    longitude: point.coordinate.longitude,
                    // eph is the 95 % figure: twice the horizontal accuracy.
                    errors: FixErrors(horizontal: point.horizontalAccuracy * 2))
                let line = BrokerProtocol.fixLine(reduced, reduced: true)
                client.send(line, droppable: true)
                delivered(line)
            case .heading(var heading):
                heading.magneticVariation = nil
                heading.magneticHeading = nil
                heading.device = nil
                client.send(BrokerProtocol.line(for: .heading(heading)), droppable: true)
            default:
                break
            }
        }
        var configuration = LocationEngine.Configuration()
        configuration.pausesAutomatically = false
        runner = EngineRunner(
            source: source, configuration: configuration,
            authorization: AuthorizationState(
                appID: "uid \(client.identity.uid)", status: .authorizedAlways, accuracy: .reducedAccuracy),
            fuzzer: LocationFuzzer(store: store, appID: "reduced", live: source.isLive), lastLocationCache: nil,
            queue: nil)
        runner.setConsumer { output in
            switch output {
            case .locations(let batch): if let last = batch.last { current.withLock { $0 = last } }
            case .failure(let error) where error.reason == .reducedAccuracyState:
                // The secret or the state cannot be kept: the program is told, and gets nothing.
                client.send(BrokerProtocol.problemLine(error, terminal: false))
            default: break
            }
        }
    }

    func start() { _ = runner.start(.continuous) }
    func stop() { runner.stop() }
}
