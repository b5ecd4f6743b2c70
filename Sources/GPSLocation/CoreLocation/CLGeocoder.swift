import Foundation
import GNSSCore

/// Apple's `CLPlacemark`: a place's name and address for a location. GPSLocation's geocoder fills
/// what GeoNames' town table knows — `name` and `locality` (the town), `administrativeArea`
/// (its region), `country`, `isoCountryCode`, `timeZone` and `location` (the town's centre) —
/// and leaves street, postal code and water fields nil.
// @unchecked Sendable: a non-final class cannot be checked; its own values are immutable.
open class CLPlacemark: NSObject, NSCopying, NSSecureCoding, @unchecked Sendable {
    /// The place's centre.
    open var location: CLLocation? { fields.location }
    /// The place's name (the town).
    open var name: String? { fields.name }
    /// The street: nil (the town table has none).
    open var thoroughfare: String? { fields.thoroughfare }
    /// The street number: nil.
    open var subThoroughfare: String? { fields.subThoroughfare }
    /// The town.
    open var locality: String? { fields.locality }
    /// The district: nil.
    open var subLocality: String? { fields.subLocality }
    /// The town's region (state, province, England…).
    open var administrativeArea: String? { fields.administrativeArea }
    /// The county: nil.
    open var subAdministrativeArea: String? { fields.subAdministrativeArea }
    /// The postal code: nil.
    open var postalCode: String? { fields.postalCode }
    /// ISO 3166-1 alpha-2, e.g. GB.
    open var isoCountryCode: String? { fields.isoCountryCode }
    /// The country's name in English.
    open var country: String? { fields.country }
    /// The town's time zone (IANA).
    open var timeZone: TimeZone? { fields.timeZone }

    /// Every value, set once (what `init(placemark:)` copies).
    private struct Fields {
        var location: CLLocation?
        package var name, thoroughfare, subThoroughfare, locality, subLocality, administrativeArea: String?
        var subAdministrativeArea, postalCode, isoCountryCode, country: String?
        var timeZone: TimeZone?
    }
    private let fields: Fields

    /// Apple's extras: nil here (the town table has no water bodies or points of interest).
    open var inlandWater: String? { nil }
    /// Nil: no oceans in the town table.
    open var ocean: String? { nil }
    /// Nil: no points of interest in the town table.
    open var areasOfInterest: [String]? { nil }
    /// A circle around the place's centre, as Apple gives one.
    open var region: CLRegion? {
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
        fields = Fields(
            location: location, name: name, thoroughfare: thoroughfare, subThoroughfare: subThoroughfare,
            locality: locality, subLocality: subLocality, administrativeArea: administrativeArea,
            subAdministrativeArea: subAdministrativeArea, postalCode: postalCode, isoCountryCode: isoCountryCode,
            country: country, timeZone: timeZone)
        super.init()
    }

    /// Apple's `init()` (NSObject's): a placemark with nothing known. Test doubles start here
    /// and override the properties.
    public override convenience init() { self.init(location: nil) }

    /// Apple's copy initializer, designated as Apple's (what `placemark` reports, a subclass's
    /// overrides included).
    public init(placemark: CLPlacemark) {
        fields = Fields(
            location: placemark.location, name: placemark.name, thoroughfare: placemark.thoroughfare,
            subThoroughfare: placemark.subThoroughfare, locality: placemark.locality,
            subLocality: placemark.subLocality, administrativeArea: placemark.administrativeArea,
            subAdministrativeArea: placemark.subAdministrativeArea, postalCode: placemark.postalCode,
            isoCountryCode: placemark.isoCountryCode, country: placemark.country, timeZone: placemark.timeZone)
        super.init()
    }

    convenience init(_ place: Place) {
        self.init(
            location: CLLocation(latitude: place.latitude, longitude: place.longitude), name: place.name,
            locality: place.name, administrativeArea: place.region.isEmpty ? nil : place.region,
            isoCountryCode: place.countryCode, country: place.country,
            timeZone: TimeZone(identifier: place.timeZone))
    }

    /// True: archives with `requiringSecureCoding: true` take it.
    open class var supportsSecureCoding: Bool { true }

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

    /// The placemark itself: it is immutable (`NSCopying`, as Apple's).
    open func copy(with zone: NSZone? = nil) -> Any { self }

    /// Writes every field that is set.
    open func encode(with coder: NSCoder) {
        for (key, value) in zip(Self.textKeys, texts) {
            if let value { coder.encode(value as NSString, forKey: key) }
        }
        if let location { coder.encode(location, forKey: "location") }
    }

    /// Reads what `encode(with:)` wrote.
    public required convenience init?(coder: NSCoder) {
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
/// Completion handlers run where Apple runs them — on the main queue — when the request is made
/// on the main thread (so a `@MainActor` model's closure runs on its actor; the program serves
/// the main queue with `dispatchMain()`, `RunLoop.main.run()` or an `async` main). A request made
/// on any other thread completes on a global queue: a Linux program need not run its main queue.
///
/// Open, as Apple's: an app's test double subclasses it and overrides the completion-handler
/// methods; the `async` forms call those, so one override serves both.
///
/// ```swift
/// let placemarks = try await CLGeocoder().reverseGeocodeLocation(CLLocation(latitude: 51.4545, longitude: -2.5879))
/// print(placemarks.first?.locality ?? "no town near")  // "Bristol"
/// ```
// @unchecked Sendable: a non-final class cannot be checked; its own state is under `state`'s lock.
open class CLGeocoder: NSObject, @unchecked Sendable {
    /// Apple's completion: placemarks, or the error (`CLGeocodeCompletionHandler`).
    public typealias CompletionHandler = CLGeocodeCompletionHandler

    /// GeoNames' licence asks for this credit wherever its names are shown.
    public static let dataAttribution = PlaceDatabase.attribution

    /// The one thread geocoding requests run on. Loading the place table takes seconds (tens of
    /// thousands of GeoNames entries; 11–25 s in a debug build on a busy machine), and a lookup
    /// scans it. On `DispatchQueue.global()` every request that came during the load held a
    /// worker of the shared pool for all of it (three at once were seen blocked in the table's
    /// one-time initializer); here requests queue in order and the program's shared threads never
    /// wait on the table.
    static let thread = JobThread(name: "gpslocation.geocoder")

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
    open var isGeocoding: Bool { state.withLock { $0.pending > 0 } }

    /// Ends the pending requests with `CLError.geocodeCanceled`.
    open func cancelGeocode() { state.withLock { $0.generation += 1 } }

    /// Looks up on the geocoder's thread; completes on the main queue for a request made on the
    /// main thread or the main actor (Apple's rule), else on a global queue.
    private func run(
        _ work: @escaping @Sendable (PlaceDatabase) throws(CLError) -> [CLPlacemark],
        completionHandler: @escaping CompletionHandler
    ) {
        let generation = state.withLock { state in
            state.pending += 1
            return state.generation
        }
        let queue = Thread.isMainThread || EngineRunner.onMainQueue ? DispatchQueue.main : DispatchQueue.global()
        // Apple's handler is not `@Sendable`: it is called once, on `queue`, and nowhere else.
        nonisolated(unsafe) let handler = completionHandler
        Self.thread.async { [self] in
            let result = database().flatMap { database in Result { () throws(CLError) in try work(database) } }
            let cancelled = state.withLock { state in
                state.pending -= 1
                return state.generation != generation
            }
            let answer =
                cancelled
                ? .failure(CLError(.geocodeCanceled, message: "the geocoding request was cancelled")) : result
            queue.async {
                switch answer {
                case .success(let placemarks): handler(placemarks, nil)
                case .failure(let error): handler(nil, error)
                }
            }
        }
    }

    private func awaiting(
        _ start: (@escaping @Sendable ([CLPlacemark]?, (any Error)?) -> Void) -> Void
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

    /// The town `location` is in (see the type's rules), to `completionHandler` (see the type for
    /// the queue).
    open func reverseGeocodeLocation(_ location: CLLocation, completionHandler: @escaping CompletionHandler) {
        run(
            { database throws(CLError) in try Self.reverse(location, in: database) },
            completionHandler: completionHandler)
    }

    /// `locale` is accepted and ignored: GeoNames' table names places in English.
    open func reverseGeocodeLocation(
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
    open func geocodeAddressString(_ addressString: String, completionHandler: @escaping CompletionHandler) {
        geocodeAddressString(addressString, in: nil, completionHandler: completionHandler)
    }

    /// With a `CLCircularRegion`, towns inside it come first (all matches when none is inside).
    open func geocodeAddressString(
        _ addressString: String, in region: CLRegion?, completionHandler: @escaping CompletionHandler
    ) {
        run(
            { database throws(CLError) in try Self.forward(addressString, region: region, in: database) },
            completionHandler: completionHandler)
    }

    /// As `geocodeAddressString(_:in:completionHandler:)`; the locale is ignored.
    open func geocodeAddressString(
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

/// Apple's geocoder completion: placemarks, or the error. Not `@Sendable`, as Apple's is not: a
/// closure written in a `@MainActor` method stays on the main actor.
public typealias CLGeocodeCompletionHandler = ([CLPlacemark]?, (any Error)?) -> Void
