import Foundation
import GPSLocation

/// `gpsloc-bench geocode [COUNT]`: CLGeocoder's lookups per second on GeoNames' table, with
/// libgeonames' own name search (`geonames_query_cities_sync`, what a C program would call)
/// side by side for forward lookups. Reverse lookups are positions scattered up to 20 km
/// around the table's own towns, so each finds a town, as a user's positions do.
func geocodeBenchmark(count: Int) throws {
    var loaded: PlaceDatabase?
    let loadSeconds = seconds {
        loaded = try? PlaceDatabase.load(PlaceDatabase.libraryName).get()
    }
    guard let database = loaded else { throw BenchError("libgeonames0 is not installed (scripts/setup.sh)") }
    print(String(format: "geocode: loaded %d places in %.1f ms", database.places.count, loadSeconds * 1000))

    var random = SystemRandomNumberGenerator()
    let towns = database.places
    let points = (0..<count).map { _ -> (Double, Double) in
        let town = towns[Int.random(in: 0..<towns.count, using: &random)]
        return (
            town.latitude + Double.random(in: -0.18...0.18, using: &random),
            town.longitude + Double.random(in: -0.18...0.18, using: &random)
        )
    }
    var found = 0
    let reverse = seconds {
        for (latitude, longitude) in points where database.place(latitude: latitude, longitude: longitude) != nil {
            found += 1
        }
    }
    print(
        String(
            format: "geocode: reverse %.0f lookups/s (%d of %d found a town), %.2f µs each",
            Double(count) / reverse, found, count, reverse / Double(count) * 1e6))
    var reduced = 0
    let reducedSeconds = seconds {
        for (latitude, longitude) in points.prefix(count / 10)
        where database.place(latitude: latitude, longitude: longitude, uncertainty: 2_000) != nil {
            reduced += 1
        }
    }
    print(String(format: "geocode: reverse at 2 km accuracy %.0f lookups/s", Double(count / 10) / reducedSeconds))

    let names = (0..<max(1, count / 100)).map { _ in towns[Int.random(in: 0..<towns.count, using: &random)].name }
    var matched = 0
    let forward = seconds {
        for name in names where !database.places(matching: name).isEmpty { matched += 1 }
    }
    print(
        String(
            format: "geocode: forward (CLGeocoder) %.0f lookups/s (%d of %d matched)", Double(names.count) / forward,
            matched, names.count))

    // libgeonames' own search, on the same names.
    guard let handle = dlopen(PlaceDatabase.libraryName, RTLD_NOW) else { return }
    typealias Raw = UnsafeMutableRawPointer
    typealias Query =
        @convention(c) (UnsafePointer<CChar>?, Int32, UnsafeMutablePointer<UInt32>?, Raw?, Raw?) ->
        UnsafeMutablePointer<Int32>?
    guard let symbol = dlsym(handle, "geonames_query_cities_sync") else { return }
    let query = unsafeBitCast(symbol, to: Query.self)
    var theirs = 0
    let reference = seconds {
        for name in names {
            var length: UInt32 = 0
            let result = name.withCString { query($0, 0, &length, nil, nil) }
            if length > 0 { theirs += 1 }
            free(result)
        }
    }
    print(
        String(
            format: "geocode: forward (libgeonames geonames_query_cities_sync) %.0f lookups/s (%d of %d matched)",
            Double(names.count) / reference, theirs, names.count))
}
