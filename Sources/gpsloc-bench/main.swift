import Foundation
// gpsloc-bench — throughput of GPSLocation's hot paths, for BENCHMARKS.md.
// Run through scripts/bench.sh (release build, with the reference tools side by side).
import GNSSCore
import GPSLocCLI
import GPSLocation
import GPSLocationTesting

func seconds(_ body: () -> Void) -> Double {
    let start = ContinuousClock.now
    body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// A one-hour-style 10 Hz drive as Fix values (no parsing): what the pipeline sees.
func syntheticDrive(count: Int) -> [Fix] {
    var fixes: [Fix] = []
    fixes.reserveCapacity(count)
    var latitude = 51.45
    var longitude = -2.59
    let start = Date(timeIntervalSince1970: 1_781_510_400)
    for index in 0..<count {
        let t = Double(index) / 10
        let heading = 72 + 30 * sin(t / 400)
        latitude += 1.34 * cos(heading * .pi / 180) / 111_132
        longitude += 1.34 * sin(heading * .pi / 180) / (111_320 * cos(latitude * .pi / 180))
        fixes.append(
            Fix(
                mode: .threeDimensional, time: start.addingTimeInterval(t), latitude: latitude, longitude: longitude,
                altitudeHAE: 89, altitudeMSL: 41, geoidSeparation: 48,
                errors: FixErrors(
                    longitude: 4 + Double(index % 7) * 0.1, latitude: 5, vertical: 9, speed: 0.5, course: 3),
                speed: 13.4, course: heading))
    }
    return fixes
}

var arguments = Array(CommandLine.arguments.dropFirst())

// The soak benchmark's processes (Soak.swift).
if arguments.first == "serve" {
    try serve(Array(arguments.dropFirst()))
    exit(0)
}
if arguments.first == "baseline" {
    // A process that has used Dispatch once and then only waits: the wakeup floor of any
    // Dispatch-based program on Linux, for comparison.
    DispatchQueue.global().async {}
    waitForSignals()
    exit(0)
}
if arguments.first == "read" {
    // Only GPSDConnection on a gpsd, decoding what `gpsloc watch --json` decodes, and nothing else —
    // the floor under `gpsloc watch` in the live benchmark.
    guard let port = Int(flag("--port", in: arguments) ?? "") else { throw BenchError("read needs --port") }
    let source = GPSDConnection(endpoint: GPSDEndpoint(host: "127.0.0.1", port: port), decodesSky: false)
    let reports = Locked(0)
    source.start { event in if event.isReport { reports.withLock { $0 += 1 } } }
    waitForSignals()
    source.stop()
    print("reports \(reports.withLock { $0 })")
    exit(0)
}
if arguments.first == "consume" {
    try consume(Array(arguments.dropFirst()))
    exit(0)
}

if arguments.first == "epochs" {
    try await epochLatency(Array(arguments.dropFirst()))
    exit(0)
}

if arguments.first == "geocode" {
    try geocodeBenchmark(count: arguments.count > 1 ? Int(arguments[1]) ?? 100_000 : 100_000)
    exit(0)
}
if arguments.first == "regions" {
    benchmarkRegions(circles: arguments.count > 1 ? Int(arguments[1]) ?? 10_000 : 10_000)
    exit(0)
}

// `gpsloc-bench nmea FILE`: parse + epoch assembly throughput over a recording, best of 3.
if arguments.first == "nmea", arguments.count >= 2 {
    let data = try Data(contentsOf: URL(fileURLWithPath: arguments[1]))
    var best = Double.infinity
    var fixes = 0
    var statistics = NMEAStatistics()
    for _ in 0..<3 {
        var decoder = NMEADecoder()
        fixes = 0
        let elapsed = seconds {
            decoder.feed(data) { _ in fixes += 1 }
            decoder.finish { _ in fixes += 1 }
        }
        statistics = decoder.statistics
        best = min(best, elapsed)
    }
    print(
        String(
            format: "NMEA parse+assembly: %.3f s for %d bytes, %d sentences, %d fixes: %.2f M sentences/s, %.0f MB/s",
            best, data.count, statistics.sentences, fixes, Double(statistics.sentences) / best / 1e6,
            Double(data.count) / best / 1e6))
    exit(0)
}
if arguments.first == "manager" {
    benchManager(count: Int(arguments.dropFirst().first ?? "") ?? 1_000_000)
    exit(0)
}
if arguments.first == "pipeline" { arguments.removeFirst() }
let count = Int(arguments.first ?? "") ?? 1_000_000
let fixes = syntheticDrive(count: count)
print("fixes: \(count) (synthetic 10 Hz drive, 3D, with error estimates)")

for filter in [kCLDistanceFilterNone, 5.0, 50.0] {
    var delivered = 0
    var best = Double.infinity
    for _ in 0..<3 {
        // A fresh engine each run: its time-order stage would reject a replayed sequence.
        var configuration = LocationEngine.Configuration()
        configuration.distanceFilter = filter
        var engine = LocationEngine(
            configuration: configuration,
            authorization: AuthorizationState(appID: "bench", status: .authorizedAlways), isLive: false)
        _ = engine.start(.continuous, now: Date())
        delivered = 0
        let now = Date()
        let elapsed = seconds {
            for fix in fixes {
                for action in engine.handle(.fix(fix), now: now) {
                    if action.delivered != nil { delivered += 1 }
                }
            }
        }
        best = min(best, elapsed)
    }
    let label = filter < 0 ? "none" : "\(Int(filter)) m"
    print(
        String(
            format:
                "engine (validity+accuracy+receiver+time order+staleness+gate+filter %@): %.0f fixes/s, %d delivered",
            label,
            Double(count) / best, delivered))
}

var writer = NDJSONWriter()
let location = AccuracyStage().location(from: fixes[0])
let ndjsonSeconds = seconds {
    for _ in 0..<count {
        writer.location(location)
        if writer.buffer.count > 1 << 20 { writer.removeAll() }
    }
}
print(String(format: "NDJSON location lines: %.0f lines/s", Double(count) / ndjsonSeconds))

// Geodesic: the same lines GeodSolve is given by scripts/bench.sh.
if arguments.count >= 2, let path = arguments.dropFirst().first {
    let text = try String(contentsOfFile: path, encoding: .utf8)
    let lines = text.split(separator: "\n").map { $0.split(separator: " ").map { Double($0)! } }
    var sum = 0.0
    let geodesicSeconds = seconds {
        for line in lines {
            sum += Geodesic.wgs84.distance(
                latitude1: line[0], longitude1: line[1], latitude2: line[2], longitude2: line[3])
        }
    }
    print(
        String(
            format: "geodesic inverse (ours, in process): %.0f lines/s (checksum %.3f)",
            Double(lines.count) / geodesicSeconds, sum))
}
