import Foundation

extension LocationValue {
    /// What `location` reports (through a subclass's overrides, if it has them).
    init(_ location: CLLocation) {
        self.init(
            coordinate: location.coordinate, altitude: location.altitude,
            ellipsoidalAltitude: location.ellipsoidalAltitude, horizontalAccuracy: location.horizontalAccuracy,
            verticalAccuracy: location.verticalAccuracy, course: location.course,
            courseAccuracy: location.courseAccuracy, speed: location.speed, speedAccuracy: location.speedAccuracy,
            timestamp: location.timestamp, gnss: location.gnss,
            origin: location.sourceInformation?.origin)
    }
}

// A keyed archive (`NSSecureCoding`): every value under its own key, the names of the core's
// storage form (`LocationValue.Keys`).
extension LocationValue {
    /// The key 0.7.1 and earlier wrote: the whole location as the cache's JSON.
    private static let formerArchiveKey = "GPSLocation.location"

    func encode(with coder: NSCoder) {
        for (key, value) in numbers { coder.encode(value, forKey: key.rawValue) }
        if let gnss {
            coder.encode(gnss.fixMode.rawValue, forKey: Keys.fixMode.rawValue)
            coder.encode(gnss.quality.rawValue, forKey: Keys.quality.rawValue)
            coder.encode(gnss.accuracyClass.description as NSString, forKey: Keys.accuracyClass.rawValue)
            coder.encode(gnss.reduced, forKey: Keys.reduced.rawValue)
            if let device = gnss.device { coder.encode(device as NSString, forKey: Keys.device.rawValue) }
        }
        if let origin {
            coder.encode(origin.isSimulatedBySoftware, forKey: Keys.simulated.rawValue)
            coder.encode(origin.isProducedByAccessory, forKey: Keys.accessory.rawValue)
        }
    }

    /// What `encode(with:)` wrote (or an earlier version's archive); nil when a value is
    /// missing, of the wrong type or out of range.
    init?(coder: NSCoder) {
        // Only a key that is there: swift-corelibs' decoder fails the whole archive on a missing one.
        if coder.containsValue(forKey: Self.formerArchiveKey) {
            guard let data = coder.decodeObject(of: NSData.self, forKey: Self.formerArchiveKey) as Data? else {
                return nil
            }
            guard let values = try? JSONDecoder().decode(LocationValue.self, from: data) else { return nil }
            self = values
            return
        }
        var numbers: [Keys: Double] = [:]
        for key in Keys.allCases[...Keys.allCases.firstIndex(of: .timestamp)!]
        where coder.containsValue(forKey: key.rawValue) {
            numbers[key] = coder.decodeDouble(forKey: key.rawValue)
        }
        var gnss: GNSSDetails?
        if coder.containsValue(forKey: Keys.fixMode.rawValue),
            let mode = FixMode(rawValue: coder.decodeInteger(forKey: Keys.fixMode.rawValue))
        {
            gnss = GNSSDetails(
                fixMode: mode,
                quality: FixQuality(rawValue: coder.decodeInteger(forKey: Keys.quality.rawValue)) ?? .unknown,
                accuracyClass: Self.accuracyClassNamed(
                    coder.containsValue(forKey: Keys.accuracyClass.rawValue)
                        ? coder.decodeObject(of: NSString.self, forKey: Keys.accuracyClass.rawValue) as String? : nil),
                reduced: coder.decodeBool(forKey: Keys.reduced.rawValue),
                device: coder.containsValue(forKey: Keys.device.rawValue)
                    ? coder.decodeObject(of: NSString.self, forKey: Keys.device.rawValue) as String? : nil)
        }
        let origin =
            coder.containsValue(forKey: Keys.simulated.rawValue)
            ? LocationOrigin(
                isSimulatedBySoftware: coder.decodeBool(forKey: Keys.simulated.rawValue),
                isProducedByAccessory: coder.decodeBool(forKey: Keys.accessory.rawValue)) : nil
        self.init(numbers: numbers, gnss: gnss, origin: origin)
    }
}
