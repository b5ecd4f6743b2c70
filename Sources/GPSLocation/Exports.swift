// `import GPSLocation` brings the layers below it too, so code written against the single module
// of earlier versions (`Fix`, `NMEADecoder`, `GPSDConnection`, `GPSDEndpoint`, …) keeps compiling.
// And Foundation, as `import CoreLocation` does on Apple platforms: ported code uses `Date`,
// `NSObject`, `UserDefaults` without importing it.
@_exported import Foundation
@_exported import GPSDClient
@_exported import LocationCore
@_exported import LocationWords
@_exported import NMEA0183

// GNSSCore's data types only (its locks, threads and text helpers are the library's plumbing:
// re-exported, they would meet an app's own `Locked` or `WorkerThread` as an ambiguity).
@_exported import enum GNSSCore.Constellation
@_exported import struct GNSSCore.DeviceEvent
@_exported import struct GNSSCore.DilutionOfPrecision
@_exported import struct GNSSCore.Fix
@_exported import struct GNSSCore.FixErrors
@_exported import enum GNSSCore.FixMode
@_exported import enum GNSSCore.FixQuality
@_exported import struct GNSSCore.Geodesic
@_exported import struct GNSSCore.HeadingReading
@_exported import struct GNSSCore.ReceiverErrorEstimate
@_exported import struct GNSSCore.Satellite
@_exported import struct GNSSCore.SkyView
