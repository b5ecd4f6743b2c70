import Foundation

/// One populated place of GeoNames' cities table.
package struct Place: Sendable, Equatable {
    package var name: String
    var region: String
    var country: String
    var countryCode: String
    var timeZone: String
    package var latitude: Double
    package var longitude: Double
    var population: Int
    /// `name`, case- and diacritic-folded, for matching what a user typed.
    var folded: String
}

/// GeoNames' cities of 15,000 people or more (about 24,000 places; CC BY 4.0), read from
/// Debian's `libgeonames0`, which compiles the table into the library. The library is opened
/// when first needed, not linked: a program that never geocodes runs without it, and one that
/// does gets a `CLError` naming the package.
///
/// Everything is offline: no coordinate leaves the machine.
package struct PlaceDatabase: Sendable {
    /// The places, sorted by latitude (the reverse search walks outwards from a latitude).
    package let places: [Place]

    package static let libraryName = "libgeonames.so.0"
    static let installAdvice =
        "offline place names are not installed: run `sudo apt-get install libgeonames0` (GeoNames' cities "
        + "of 15,000+ people, CC BY 4.0; `scripts/setup.sh` installs it)"
    /// GeoNames' licence asks for this credit wherever its data is shown.
    static let attribution = "Place names: GeoNames (geonames.org), CC BY 4.0, via Debian's libgeonames0"

    /// The shared table, loaded once per process; the error says what to install.
    static let shared: Result<PlaceDatabase, CLError> = load(libraryName)

    package static func load(_ library: String) -> Result<PlaceDatabase, CLError> {
        guard let handle = dlopen(library, RTLD_NOW | RTLD_LOCAL) else {
            return .failure(CLError(.network, message: installAdvice))
        }
        typealias Count = @convention(c) () -> Int32
        typealias City = @convention(c) (Int32) -> OpaquePointer?
        typealias Free = @convention(c) (OpaquePointer?) -> Void
        typealias Text = @convention(c) (OpaquePointer?) -> UnsafePointer<CChar>?
        typealias Number = @convention(c) (OpaquePointer?) -> Double
        typealias Population = @convention(c) (OpaquePointer?) -> UInt32
        func symbol<T>(_ name: String, _: T.Type) -> T? {
            dlsym(handle, name).map { unsafeBitCast($0, to: T.self) }
        }
        guard let count = symbol("geonames_get_n_cities", Count.self),
            let city = symbol("geonames_get_city", City.self),
            let free = symbol("geonames_city_free", Free.self),
            let name = symbol("geonames_city_get_name", Text.self),
            let region = symbol("geonames_city_get_state", Text.self),
            let country = symbol("geonames_city_get_country", Text.self),
            let code = symbol("geonames_city_get_country_code", Text.self),
            let zone = symbol("geonames_city_get_timezone", Text.self),
            let latitude = symbol("geonames_city_get_latitude", Number.self),
            let longitude = symbol("geonames_city_get_longitude", Number.self),
            let population = symbol("geonames_city_get_population", Population.self)
        else {
            return .failure(
                CLError(.network, message: "\(library) lacks GeoNames' city functions; reinstall libgeonames0"))
        }
        func string(_ pointer: UnsafePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }
        var places: [Place] = []
        let total = count()
        places.reserveCapacity(Int(max(0, total)))
        for index in 0..<max(0, total) {
            guard let entry = city(index) else { continue }
            let placeName = string(name(entry))
            places.append(
                Place(
                    name: placeName, region: string(region(entry)), country: string(country(entry)),
                    countryCode: string(code(entry)), timeZone: string(zone(entry)), latitude: latitude(entry),
                    longitude: longitude(entry), population: Int(population(entry)), folded: fold(placeName)))
            free(entry)
        }
        guard !places.isEmpty else {
            return .failure(CLError(.network, message: "\(library) holds no places; reinstall libgeonames0"))
        }
        return .success(PlaceDatabase(places: places))
    }

    init(places: [Place]) {
        self.places = places.sorted { $0.latitude < $1.latitude }
    }

    static func fold(_ text: String) -> String {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
            .trimmingCharacters(in: .whitespaces)
    }

    /// Great-circle distance in metres on the mean Earth sphere (place lookups need no better).
    static func distance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let radians = Double.pi / 180
        let dLat = (lat2 - lat1) * radians
        let dLon = (lon2 - lon1) * radians
        let a =
            sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * radians) * cos(lat2 * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * 6_371_008.8 * asin(min(1, sqrt(a)))
    }

    /// The place a position is in, as far as a table of towns can say:
    /// - among the places within `uncertainty` metres (a reduced-accuracy location's radius), the
    ///   most populous — so a location that is only known to a few kilometres names the area's town,
    ///   never the village the true position might be in;
    /// - otherwise the nearest place, if it is within `reach` metres (200 km: beyond that, at sea or
    ///   in a wilderness, a town's name would mislead).
    package func place(latitude: Double, longitude: Double, uncertainty: Double = 0, reach: Double = 200_000) -> Place?
    {
        guard latitude.isFinite, longitude.isFinite, !places.isEmpty else { return nil }
        let metresPerDegree = 111_195.0
        var best: (place: Place, distance: Double)?
        var populous: Place?
        let start = firstIndex(atLeast: latitude)
        var below = start - 1
        var above = start
        // Walk outwards in latitude; stop once a whole degree band is farther than what could win.
        while below >= 0 || above < places.count {
            let bound = max(min(best?.distance ?? reach, reach), uncertainty)
            let belowGap = below >= 0 ? (latitude - places[below].latitude) * metresPerDegree : .infinity
            let aboveGap = above < places.count ? (places[above].latitude - latitude) * metresPerDegree : .infinity
            if min(belowGap, aboveGap) > bound { break }
            let index: Int
            if belowGap <= aboveGap {
                index = below
                below -= 1
            } else {
                index = above
                above += 1
            }
            let candidate = places[index]
            let distance = Self.distance(latitude, longitude, candidate.latitude, candidate.longitude)
            if distance <= reach, distance < (best?.distance ?? .infinity) { best = (candidate, distance) }
            if distance <= uncertainty, candidate.population > (populous?.population ?? -1) { populous = candidate }
        }
        return populous ?? best?.place
    }

    private func firstIndex(atLeast latitude: Double) -> Int {
        var low = 0
        var high = places.count
        while low < high {
            let middle = (low + high) / 2
            if places[middle].latitude < latitude { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// Places matching what a user typed: "Bristol", "bristol, england", "Bristol, US",
    /// "Zurich" (accents and case do not matter). The first comma-separated part is the place's
    /// name — whole-name matches first, then names it begins; the other parts must each match its
    /// region, country or country code. Most populous first.
    package func places(matching text: String, limit: Int = 10) -> [Place] {
        let parts = text.split(separator: ",").map { Self.fold(String($0)) }.filter { !$0.isEmpty }
        guard let wanted = parts.first else { return [] }
        let qualifiers = parts.dropFirst()
        func qualifies(_ place: Place) -> Bool {
            qualifiers.allSatisfy { part in
                Self.fold(place.region) == part || Self.fold(place.country) == part
                    || Self.fold(place.countryCode) == part || Self.fold(place.country).hasPrefix(part)
            }
        }
        let exact = places.filter { $0.folded == wanted && qualifies($0) }
        let matches =
            exact.isEmpty ? places.filter { $0.folded.hasPrefix(wanted) && qualifies($0) } : exact
        return Array(matches.sorted { $0.population > $1.population }.prefix(limit))
    }
}
