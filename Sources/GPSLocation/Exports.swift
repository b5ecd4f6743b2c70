// `import GPSLocation` brings the layers below it too, so code written against the single module
// of earlier versions (`Fix`, `NMEADecoder`, `GPSDConnection`, `GPSDEndpoint`, …) keeps compiling.
// And Foundation, as `import CoreLocation` does on Apple platforms: ported code uses `Date`,
// `NSObject`, `UserDefaults` without importing it.
@_exported import Foundation
@_exported import GNSSCore
@_exported import GPSDClient
@_exported import LocationCore
@_exported import NMEA0183
