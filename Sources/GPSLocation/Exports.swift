// `import GPSLocation` brings the layers below it too, so code written against the single module
// of earlier versions (`Fix`, `NMEADecoder`, `GPSDSource`, `GPSDEndpoint`, …) keeps compiling.
@_exported import GNSSCore
@_exported import GPSDClient
@_exported import NMEA0183
