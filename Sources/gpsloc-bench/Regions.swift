import Foundation
import GNSSCore
import GPSLocation

/// `gpsloc-bench regions [CIRCLES]`: the region stage with CIRCLES (default 10,000) monitored
/// circles of 50–500 m scattered over the 60 × 17 km a one-hour 10 Hz drive crosses, fed that
/// drive's locations (36,000); against the naive loop that classifies every circle for every
/// location with the same geodesic and rule (timed on the first minute, 600 locations, as it
/// is slow). Prints microseconds per location and the share of one core at 10 Hz.
func benchmarkRegions(circles count: Int) {
    let drive = syntheticDrive(count: 36_000).map { fix in
        LocationValue(
            coordinate: CLLocationCoordinate2D(latitude: fix.latitude!, longitude: fix.longitude!), altitude: 41,
            horizontalAccuracy: 3, verticalAccuracy: 5, course: -1, courseAccuracy: -1, speed: -1, speedAccuracy: -1,
            timestamp: fix.time!)
    }
    let latitudes = drive.map(\.coordinate.latitude)
    let longitudes = drive.map(\.coordinate.longitude)
    let south = latitudes.min()! - 0.05
    let north = latitudes.max()! + 0.05
    let west = longitudes.min()! - 0.05
    let east = longitudes.max()! + 0.05
    var random = SplitMix64(seed: 11)
    let fences = (0..<count).map { index in
        Geofence(
            identifier: "c\(index)", latitude: south + random.unit() * (north - south),
            longitude: west + random.unit() * (east - west), radius: 50 + random.unit() * 450)
    }
    var stage = RegionMonitorStage()
    var events: [RegionEvent] = []
    for fence in fences { stage.add(fence, into: &events) }
    events.removeAll()
    var best = Double.infinity
    var eventCount = 0
    for _ in 0..<3 {
        var copy = stage
        var produced: [RegionEvent] = []
        produced.reserveCapacity(4096)
        let time = seconds {
            for location in drive {
                copy.observe(location, clock: location.timestamp, limitation: nil, into: &produced)
            }
        }
        best = min(best, time)
        eventCount = produced.count
    }
    let indexed = best / Double(drive.count) * 1e6
    print(
        String(
            format:
                "regions, grid index: %d circles, %d locations (1 h at 10 Hz), %d events: %.2f µs a location = %.3f %% of a core at 10 Hz",
            count, drive.count, eventCount, indexed, indexed * 10 / 1e4))

    // The naive loop: every circle, every location.
    let sample = drive.prefix(600)
    var naiveBest = Double.infinity
    var inside = 0
    for _ in 0..<3 {
        var states = [UInt8](repeating: 0, count: fences.count)
        let time = seconds {
            for location in sample {
                let latitude = location.coordinate.latitude
                let longitude = location.coordinate.longitude
                let accuracy = location.horizontalAccuracy
                for (index, fence) in fences.enumerated() {
                    let distance = Geodesic.wgs84.distance(
                        latitude1: fence.latitude, longitude1: fence.longitude, latitude2: latitude,
                        longitude2: longitude)
                    if distance + accuracy <= fence.radius {
                        states[index] = 1
                    } else if distance - accuracy > fence.radius {
                        states[index] = 2
                    }
                }
            }
        }
        naiveBest = min(naiveBest, time)
        inside = states.filter { $0 == 1 }.count
    }
    let naive = naiveBest / Double(sample.count) * 1e6
    print(
        String(
            format:
                "regions, naive loop: %d circles, %d locations (%d inside at the end): %.0f µs a location = %.1f %% of a core at 10 Hz (%.0f× the index)",
            count, sample.count, inside, naive, naive * 10 / 1e4, naive / indexed))
}
