import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

// Distances between nearby points (a receiver's consecutive fixes, the distance filter's
// question) on the tangent plane, with the exact geodesic (`Geodesic.distance`) where that is not
// close enough: a file of its own beside Karney's method.
extension Geodesic {
    /// Whether two nearby points are at least `threshold` metres apart — the distance filter's
    /// question, asked for every fix. Points within 0.2° of each other (and away from the poles)
    /// are first measured on the tangent plane at their mid-latitude, with the ellipsoid's
    /// meridional and prime-vertical radii there; that estimate is within 10⁻⁵ of the geodesic
    /// length at such distances, so when it is more than 1 % from `threshold` it decides.
    /// Otherwise — near the threshold, far apart, near a pole — the exact `distance` decides.
    public func isDistance(
        latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double, atLeast threshold: Double
    ) -> Bool {
        if let estimate = tangentPlaneDistance(latitude1, longitude1, latitude2, longitude2, within: 0.2) {
            if estimate > threshold * 1.01 { return true }
            if estimate < threshold * 0.99 { return false }
        }
        return distance(latitude1: latitude1, longitude1: longitude1, latitude2: latitude2, longitude2: longitude2)
            >= threshold
    }

    /// The distance on the tangent plane at the points' mid-latitude, with the meridional and
    /// prime-vertical radii there, for points within `span` degrees of each other away from the
    /// poles (nil otherwise): within 10⁻⁵ of the geodesic at 0.2°, 10⁻⁷ at 0.01°.
    private func tangentPlaneDistance(
        _ latitude1: Double, _ longitude1: Double, _ latitude2: Double, _ longitude2: Double, within span: Double
    ) -> Double? {
        Self.tangentPlaneDistance(
            latitude1, longitude1, latitude2, longitude2, within: span, equatorialRadius: equatorialRadius, e2: e2)
    }

    private static func tangentPlaneDistance(
        _ latitude1: Double, _ longitude1: Double, _ latitude2: Double, _ longitude2: Double, within span: Double,
        equatorialRadius: Double, e2: Double
    ) -> Double? {
        var dLon = longitude2 - longitude1
        if dLon > 180 { dLon -= 360 } else if dLon < -180 { dLon += 360 }
        let dLat = latitude2 - latitude1
        guard abs(dLat) < span && abs(dLon) < span && abs(latitude1) < 85 && abs(latitude2) < 85 else { return nil }
        let phi = (latitude1 + latitude2) / 2 * .pi / 180
        let s = sin(phi)
        let w2 = 1 - e2 * s * s
        let w = w2.squareRoot()
        let meridional = equatorialRadius * (1 - e2) / (w2 * w)
        let primeVertical = equatorialRadius / w
        let y = meridional * dLat * .pi / 180
        let x = primeVertical * cos(phi) * dLon * .pi / 180
        return (x * x + y * y).squareRoot()
    }

    /// The distance in metres between two points at most about a kilometre apart (a receiver's
    /// consecutive fixes): on the tangent plane, within 1e-7 of the geodesic at that range (0.1 mm
    /// a kilometre: far below the precision gpsd prints what it is used for), and much cheaper.
    /// Farther apart, the geodesic itself (`distance`).
    public func nearbyDistance(latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double) -> Double {
        tangentPlaneDistance(latitude1, longitude1, latitude2, longitude2, within: 0.01)
            ?? distance(latitude1: latitude1, longitude1: longitude1, latitude2: latitude2, longitude2: longitude2)
    }

    /// `wgs84.nearbyDistance`, for a caller on every fix: the tangent plane needs only the
    /// ellipsoid's two figures, so `wgs84` (with its series coefficients) is not copied for it.
    public static func nearbyDistanceOnWGS84(
        latitude1: Double, longitude1: Double, latitude2: Double, longitude2: Double
    ) -> Double {
        tangentPlaneDistance(
            latitude1, longitude1, latitude2, longitude2, within: 0.01, equatorialRadius: wgs84Radius,
            e2: wgs84Flattening * (2 - wgs84Flattening))
            ?? wgs84.distance(
                latitude1: latitude1, longitude1: longitude1, latitude2: latitude2, longitude2: longitude2)
    }
}
