import Foundation

/// Apple's `CLPlacemark`: a place's name and address for a location. GPSLocation's geocoder fills
/// what GeoNames' town table knows — `name` and `locality` (the town), `administrativeArea`
/// (its region), `country`, `isoCountryCode`, `timeZone` and `location` (the town's centre) —
/// and leaves street, postal code and water fields nil.
public final class CLPlacemark: NSObject, NSSecureCoding, Sendable {
    /// The place's centre.
    public let location: CLLocation?
    /// The place's name (the town).
    public let name: String?
    /// The street: nil (the town table has none).
    public let thoroughfare: String?
    /// The street number: nil.
    public let subThoroughfare: String?
    /// The town.
    public let locality: String?
    /// The district: nil.
    public let subLocality: String?
    /// The town's region (state, province, England…).
    public let administrativeArea: String?
    /// The county: nil.
    public let subAdministrativeArea: String?
    /// The postal code: nil.
    public let postalCode: String?
    /// ISO 3166-1 alpha-2, e.g. GB.
    public let isoCountryCode: String?
    /// The country's name in English.
    public let country: String?
    /// The town's time zone (IANA).
    public let timeZone: TimeZone?
    /// Apple's extras: nil here (the town table has no water bodies or points of interest).
    public var inlandWater: String? { nil }
    /// Nil: no oceans in the town table.
    public var ocean: String? { nil }
    /// Nil: no points of interest in the town table.
    public var areasOfInterest: [String]? { nil }
    /// A circle around the place's centre, as Apple gives one.
    public var region: CLRegion? {
        guard let location, let name else { return nil }
        return CLCircularRegion(center: location.coordinate, radius: 5_000, identifier: name)
    }

    /// A placemark with its parts (tests, and code that builds one).
    public init(
        location: CLLocation?, name: String? = nil, thoroughfare: String? = nil, subThoroughfare: String? = nil,
        locality: String? = nil, subLocality: String? = nil, administrativeArea: String? = nil,
        subAdministrativeArea: String? = nil, postalCode: String? = nil, isoCountryCode: String? = nil,
        country: String? = nil, timeZone: TimeZone? = nil
    ) {
        self.location = location
        self.name = name
        self.thoroughfare = thoroughfare
        self.subThoroughfare = subThoroughfare
        self.locality = locality
        self.subLocality = subLocality
        self.administrativeArea = administrativeArea
        self.subAdministrativeArea = subAdministrativeArea
        self.postalCode = postalCode
        self.isoCountryCode = isoCountryCode
        self.country = country
        self.timeZone = timeZone
    }

    /// Apple's copy initializer.
    public convenience init(placemark: CLPlacemark) {
        self.init(
            location: placemark.location, name: placemark.name, thoroughfare: placemark.thoroughfare,
            subThoroughfare: placemark.subThoroughfare, locality: placemark.locality,
            subLocality: placemark.subLocality, administrativeArea: placemark.administrativeArea,
            subAdministrativeArea: placemark.subAdministrativeArea, postalCode: placemark.postalCode,
            isoCountryCode: placemark.isoCountryCode, country: placemark.country, timeZone: placemark.timeZone)
    }

    convenience init(_ place: Place) {
        self.init(
            location: CLLocation(latitude: place.latitude, longitude: place.longitude), name: place.name,
            locality: place.name, administrativeArea: place.region.isEmpty ? nil : place.region,
            isoCountryCode: place.countryCode, country: place.country,
            timeZone: TimeZone(identifier: place.timeZone))
    }

    /// True: archives with `requiringSecureCoding: true` take it.
    public static var supportsSecureCoding: Bool { true }

    private static let textKeys = [
        "name", "thoroughfare", "subThoroughfare", "locality", "subLocality", "administrativeArea",
        "subAdministrativeArea", "postalCode", "isoCountryCode", "country", "timeZone",
    ]

    private var texts: [String?] {
        [
            name, thoroughfare, subThoroughfare, locality, subLocality, administrativeArea, subAdministrativeArea,
            postalCode, isoCountryCode, country, timeZone?.identifier,
        ]
    }

    /// Writes every field that is set.
    public func encode(with coder: NSCoder) {
        for (key, value) in zip(Self.textKeys, texts) {
            if let value { coder.encode(value as NSString, forKey: key) }
        }
        if let location { coder.encode(location, forKey: "location") }
    }

    /// Reads what `encode(with:)` wrote.
    public convenience init?(coder: NSCoder) {
        var values: [String: String] = [:]
        for key in Self.textKeys {
            // Only keys that were written: swift-corelibs' decoder fails the whole archive on a missing one.
            if coder.containsValue(forKey: key), let value = coder.decodeObject(of: NSString.self, forKey: key) {
                values[key] = value as String
            }
        }
        self.init(
            location: coder.containsValue(forKey: "location")
                ? coder.decodeObject(of: CLLocation.self, forKey: "location") : nil, name: values["name"],
            thoroughfare: values["thoroughfare"], subThoroughfare: values["subThoroughfare"],
            locality: values["locality"], subLocality: values["subLocality"],
            administrativeArea: values["administrativeArea"],
            subAdministrativeArea: values["subAdministrativeArea"], postalCode: values["postalCode"],
            isoCountryCode: values["isoCountryCode"], country: values["country"],
            timeZone: values["timeZone"].flatMap { TimeZone(identifier: $0) })
    }
}

/// Apple's `CLGeocoder`, offline: place names from GeoNames' table of towns of 15,000 people or
/// more (CC BY 4.0, Debian's `libgeonames0`). No coordinate leaves the machine.
///
/// - Reverse geocoding names the town a location is in as far as its accuracy says: among the
///   towns within `horizontalAccuracy`, the largest (a reduced-accuracy location, known to a few
///   kilometres, gets its area's town, never a village its true position might be in); otherwise
///   the nearest town within 200 km. Farther than that: `CLError.geocodeFoundNoResult`.
/// - Forward geocoding takes "Town", "Town, Region" or "Town, Country" (case and accents do not
///   matter); the largest matching towns first, at most ten.
/// - Without the data: `CLError.network` (Apple's error when its service is out of reach) whose
///   message names the package to install.
/// - `cancelGeocode()` ends pending requests with `CLError.geocodeCanceled`, as on Apple platforms.
///
/// Completion handlers run on a global queue (Apple uses the main queue, which a Linux program
/// need not run).
///
/// ```swift
/// let placemarks = try await CLGeocoder().reverseGeocodeLocation(CLLocation(latitude: 51.4545, longitude: -2.5879))
/// print(placemarks.first?.locality ?? "no town near")  // "Bristol"
/// ```
public final class CLGeocoder: NSObject, Sendable {
    /// Apple's completion: placemarks, or the error.
    public typealias CompletionHandler = @Sendable ([CLPlacemark]?, (any Error)?) -> Void

    /// GeoNames' licence asks for this credit wherever its names are shown.
    public static let dataAttribution = PlaceDatabase.attribution

    private struct State {
        var pending = 0
        var generation = 0
    }
    private let state = Locked(State())
    private let database: @Sendable () -> Result<PlaceDatabase, CLError>

    /// A geocoder on the shared table (loaded once per process, at the first request).
    public override init() {
        database = { PlaceDatabase.shared }
        super.init()
    }

    /// A geocoder reading the table from `library` (tests: a missing library).
    init(library: String) {
        let loaded = PlaceDatabase.load(library)
        database = { loaded }
        super.init()
    }

    /// True while a request has not completed.
    public var isGeocoding: Bool { state.withLock { $0.pending > 0 } }

    /// Ends the pending requests with `CLError.geocodeCanceled`.
    public func cancelGeocode() { state.withLock { $0.generation += 1 } }

    private func run(
        _ work: @escaping @Sendable (PlaceDatabase) throws(CLError) -> [CLPlacemark],
        completionHandler: @escaping CompletionHandler
    ) {
        let generation = state.withLock { state in
            state.pending += 1
            return state.generation
        }
        GeocoderThread.shared.enqueue { [self] in
            let result = database().flatMap { database in Result { () throws(CLError) in try work(database) } }
            let cancelled = state.withLock { state in
                state.pending -= 1
                return state.generation != generation
            }
            if cancelled {
                completionHandler(nil, CLError(.geocodeCanceled, message: "the geocoding request was cancelled"))
                return
            }
            switch result {
            case .success(let placemarks): completionHandler(placemarks, nil)
            case .failure(let error): completionHandler(nil, error)
            }
        }
    }

    private func awaiting(
        _ start: (@escaping CompletionHandler) -> Void
    ) async throws -> [CLPlacemark] {
        try await withCheckedThrowingContinuation { continuation in
            start { placemarks, error in
                if let error {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume(returning: placemarks ?? [])
                }
            }
        }
    }

    static func reverse(_ location: CLLocation, in database: PlaceDatabase) throws(CLError) -> [CLPlacemark] {
        let coordinate = location.coordinate
        guard CLLocationCoordinate2DIsValid(coordinate) else {
            throw CLError(.geocodeFoundNoResult, message: "the location has no valid coordinate to look up")
        }
        guard
            let place = database.place(
                latitude: coordinate.latitude, longitude: coordinate.longitude,
                uncertainty: max(0, location.horizontalAccuracy))
        else {
            throw CLError(
                .geocodeFoundNoResult,
                message: "no town of 15,000 people or more within 200 km of this location (GeoNames' table)")
        }
        return [CLPlacemark(place)]
    }

    static func forward(
        _ text: String, region: CLRegion?, in database: PlaceDatabase
    ) throws(CLError) -> [CLPlacemark] {
        var matches = database.places(matching: text, limit: region == nil ? 10 : database.places.count)
        if let circle = region as? CLCircularRegion {
            let inside = matches.filter {
                PlaceDatabase.distance(circle.center.latitude, circle.center.longitude, $0.latitude, $0.longitude)
                    <= circle.radius
            }
            matches = Array((inside.isEmpty ? matches : inside).prefix(10))
        }
        guard !matches.isEmpty else {
            throw CLError(
                .geocodeFoundNoResult,
                message: "no town named \"\(text)\" in GeoNames' table of towns of 15,000 people or more")
        }
        return matches.map(CLPlacemark.init)
    }

    /// The town `location` is in (see the type's rules), to `completionHandler` on a global queue.
    public func reverseGeocodeLocation(_ location: CLLocation, completionHandler: @escaping CompletionHandler) {
        run(
            { database throws(CLError) in try Self.reverse(location, in: database) },
            completionHandler: completionHandler)
    }

    /// `locale` is accepted and ignored: GeoNames' table names places in English.
    public func reverseGeocodeLocation(
        _ location: CLLocation, preferredLocale locale: Locale?, completionHandler: @escaping CompletionHandler
    ) {
        reverseGeocodeLocation(location, completionHandler: completionHandler)
    }

    /// The town `location` is in, awaited.
    public func reverseGeocodeLocation(_ location: CLLocation) async throws -> [CLPlacemark] {
        try await awaiting { reverseGeocodeLocation(location, completionHandler: $0) }
    }

    /// As `reverseGeocodeLocation(_:)`; the locale is ignored (English names).
    public func reverseGeocodeLocation(_ location: CLLocation, preferredLocale locale: Locale?) async throws
        -> [CLPlacemark]
    {
        try await reverseGeocodeLocation(location)
    }

    /// The towns `addressString` names ("Town", "Town, Region", "Town, Country"), largest first.
    public func geocodeAddressString(_ addressString: String, completionHandler: @escaping CompletionHandler) {
        geocodeAddressString(addressString, in: nil, completionHandler: completionHandler)
    }

    /// With a `CLCircularRegion`, towns inside it come first (all matches when none is inside).
    public func geocodeAddressString(
        _ addressString: String, in region: CLRegion?, completionHandler: @escaping CompletionHandler
    ) {
        run(
            { database throws(CLError) in try Self.forward(addressString, region: region, in: database) },
            completionHandler: completionHandler)
    }

    /// As `geocodeAddressString(_:in:completionHandler:)`; the locale is ignored.
    public func geocodeAddressString(
        _ addressString: String, in region: CLRegion?, preferredLocale locale: Locale?,
        completionHandler: @escaping CompletionHandler
    ) {
        geocodeAddressString(addressString, in: region, completionHandler: completionHandler)
    }

    /// The towns `addressString` names, awaited.
    public func geocodeAddressString(_ addressString: String) async throws -> [CLPlacemark] {
        try await awaiting { geocodeAddressString(addressString, completionHandler: $0) }
    }

    /// The towns `addressString` names, those inside `region` first, awaited.
    public func geocodeAddressString(_ addressString: String, in region: CLRegion?) async throws -> [CLPlacemark] {
        try await awaiting { geocodeAddressString(addressString, in: region, completionHandler: $0) }
    }
}
