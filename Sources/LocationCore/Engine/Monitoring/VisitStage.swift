import FoundationEssentials
import GNSSCore

/// A stop somewhere: the visit stage's output, and `CLVisit`'s fields.
public struct VisitRecord: Sendable, Equatable {
    /// When the stop began.
    public var arrival: Date
    /// nil while the visit goes on.
    public var departure: Date?
    /// Where (degrees).
    public var latitude: Double
    /// Where (degrees).
    public var longitude: Double
    /// The radius of the visited place (metres).
    public var horizontalAccuracy: Double
}

/// Stage: visits, fed only with locations that passed the gate.
///
/// **The rule.** Consecutive locations that all stay within `radius` of their running centre
/// (the mean position), with no two more than `maximumGap` apart (by their timestamps), for at
/// least `minimumStay`, are a stop: the *arrival* is reported then, dated with the first of
/// them within the *place* — `placeRadius`, or three times their median accuracy if more, of
/// the centre (so the last metres of the approach do not count as the stay). The *departure*
/// is reported when `minimumLocations` consecutive locations spanning `dwell` are all further
/// than `radius` + their own accuracy from the centre, dated with the last location that was
/// within the place. A gap longer than `maximumGap` before the
/// stop is confirmed starts over (a tunnel or an outage is not a stop); during a confirmed
/// visit the next location decides (still there: the visit goes on; elsewhere: it ended at the
/// last location before the gap). The visit's coordinate is the mean of the locations within the
/// place, its `horizontalAccuracy` the place's radius.
///
/// With reduced accuracy the gate passes one snapped location every few minutes, so the stage
/// then accepts gaps up to `reducedMaximumGap` and a radius of the locations' own accuracy:
/// visits come late and as coarse as the locations are, never finer.
struct VisitStage: Sendable {
    static let radius: Double = 50
    static let placeRadius: Double = 5
    static let minimumStay: TimeInterval = 180
    static let maximumGap: TimeInterval = 60
    static let reducedMaximumGap: TimeInterval = 45 * 60
    static let dwell: TimeInterval = 3
    static let minimumLocations = 2

    struct Stop {
        var first: Date
        var last: Date
        var sumLatitude = 0.0
        var sumLongitude = 0.0
        var count = 0
        var accuracies: [Double] = []
        /// The candidate's locations (time, latitude, longitude) until it is confirmed.
        var track: [(Date, Double, Double)] = []
        var confirmed = false
        /// Once confirmed: the place's radius, and the last location within it.
        var place = 0.0
        var lastInPlace = Date.distantPast
        /// Locations outside in a row, and the first one's time.
        var leavingCount = 0
        var leavingSince = Date.distantPast

        var latitude: Double { sumLatitude / Double(count) }
        var longitude: Double { sumLongitude / Double(count) }
    }

    var stop: Stop?

    init() {}

    mutating func reset() { stop = nil }

    mutating func observe(_ location: LocationValue, reduced: Bool, into visits: inout [VisitRecord]) {
        let time = location.timestamp
        let latitude = location.coordinate.latitude
        let longitude = location.coordinate.longitude
        let accuracy = max(0, location.horizontalAccuracy)
        let radius = reduced ? max(Self.radius, accuracy) : Self.radius
        let maximumGap = reduced ? Self.reducedMaximumGap : Self.maximumGap
        guard var current = stop else {
            stop = Self.start(at: location)
            return
        }
        let distance = Geodesic.wgs84.distance(
            latitude1: current.latitude, longitude1: current.longitude, latitude2: latitude, longitude2: longitude)
        let gap = time.timeIntervalSince(current.last)
        if gap < 0 { return }
        if !current.confirmed {
            if gap > maximumGap || distance > radius {
                stop = Self.start(at: location)
                return
            }
            current.add(latitude, longitude, accuracy, time)
            current.track.append((time, latitude, longitude))
            if time.timeIntervalSince(current.first) >= Self.minimumStay {
                current.confirm(minimumPlace: reduced ? radius : Self.placeRadius)
                visits.append(current.record(departure: nil))
            }
            stop = current
            return
        }
        // A confirmed visit.
        if gap > maximumGap && distance > radius {
            visits.append(current.record(departure: current.lastInPlace))
            stop = Self.start(at: location)
            return
        }
        if distance <= radius {
            current.last = time
            if distance <= current.place { current.lastInPlace = time }
            current.leavingCount = 0
            stop = current
            return
        }
        if distance - accuracy <= radius {
            // Undecided: neither there nor certainly gone.
            current.leavingCount = 0
            stop = current
            return
        }
        if current.leavingCount == 0 { current.leavingSince = time }
        current.leavingCount += 1
        if current.leavingCount >= Self.minimumLocations && time.timeIntervalSince(current.leavingSince) >= Self.dwell {
            visits.append(current.record(departure: current.lastInPlace))
            stop = Self.start(at: location)
            return
        }
        stop = current
    }

    static func start(at location: LocationValue) -> Stop {
        var stop = Stop(first: location.timestamp, last: location.timestamp)
        stop.add(
            location.coordinate.latitude, location.coordinate.longitude, max(0, location.horizontalAccuracy),
            location.timestamp)
        stop.track.append((location.timestamp, location.coordinate.latitude, location.coordinate.longitude))
        return stop
    }
}

extension VisitStage.Stop {
    mutating func add(_ latitude: Double, _ longitude: Double, _ accuracy: Double, _ time: Date) {
        sumLatitude += latitude
        sumLongitude += longitude
        count += 1
        last = time
        if accuracies.count < 10_000 { accuracies.append(accuracy) }
    }

    /// The stop is confirmed: the place is the locations within its radius of the centre; the
    /// arrival is the first of them, the centre their mean.
    fileprivate mutating func confirm(minimumPlace: Double) {
        let sorted = accuracies.sorted()
        let median = sorted.isEmpty ? 0 : sorted[sorted.count / 2]
        place = max(minimumPlace, 3 * median)
        let centre = (latitude, longitude)
        let inPlace = track.filter {
            Geodesic.wgs84.distance(latitude1: centre.0, longitude1: centre.1, latitude2: $0.1, longitude2: $0.2)
                <= place
        }
        if let firstInPlace = inPlace.first {
            first = firstInPlace.0
            lastInPlace = inPlace.last!.0
            sumLatitude = inPlace.reduce(0) { $0 + $1.1 }
            sumLongitude = inPlace.reduce(0) { $0 + $1.2 }
            count = inPlace.count
        } else {
            lastInPlace = last
        }
        confirmed = true
        track = []
    }

    fileprivate func record(departure: Date?) -> VisitRecord {
        VisitRecord(
            arrival: first, departure: departure, latitude: latitude, longitude: longitude, horizontalAccuracy: place)
    }
}

/// Stage: the significant-change service — the first location at once, then one whenever the
/// device is at least `minimumDistance` from the last one reported and at least
/// `minimumInterval` has passed since it (Apple's documented 500 m and five minutes), by the
/// locations' own timestamps.
struct SignificantChangeStage: Sendable {
    static let minimumDistance: Double = 500
    static let minimumInterval: TimeInterval = 300

    var last: LocationValue?

    init() {}

    mutating func admits(_ location: LocationValue) -> Bool {
        if let last {
            guard location.timestamp.timeIntervalSince(last.timestamp) >= Self.minimumInterval,
                Geodesic.wgs84.isDistance(
                    latitude1: last.coordinate.latitude, longitude1: last.coordinate.longitude,
                    latitude2: location.coordinate.latitude, longitude2: location.coordinate.longitude,
                    atLeast: Self.minimumDistance)
            else { return false }
        }
        last = location
        return true
    }
}
