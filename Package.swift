// swift-tools-version:6.2
import PackageDescription

/// One settings loop: every Swift target builds in Swift 6 language mode with warnings as errors.
let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .treatAllWarnings(as: .error),
]

// The layers, each a folder under Sources/ (the README's "Architecture" has the diagram):
//   GNSSCore            the fix, sky and device values every source produces (Foundation only)
//   NMEA0183            NMEA framing, sentences, epoch assembly → Fix (no C, no libgps)
//   CGPS                libgps, and nothing else (a system library over <gps.h>)
//   GPSDClient          the libgps handle, GPSDSource, gpsd reports and errors
//   LocationCore        the rules' core, below every face (FoundationEssentials only): the engine
//                       and its stages, its values in and out, the authorization vocabulary and
//                       its stores, the policy, the fuzzer, diagnostics, private files (#50)
//   LocationWords       the core's facts in words: CLError.message, diagnostics, rejections (#50)
//   GPSLocation         the CoreLocation API, the engine's driver, authorization, location sources
//   GPSDProcesses       starting gpsd and gpsfake, child processes, free ports (replay --via gpsd, tests)
//   GPSLocationTesting  harnesses for people testing code that embeds GPSLocation
//   GPSLocCLI / gpsloc  the command-line tool: arguments, writers, terminal UI
//   GPSLocationBroker / gpslocd  the system location service: the socket, peer identity, sessions
let package = Package(
    name: "GPSLocation",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "GPSLocation", targets: ["GPSLocation"]),
        .library(name: "GPSLocationTesting", targets: ["GPSLocationTesting"]),
        .library(name: "NMEA0183", targets: ["NMEA0183"]),
        .executable(name: "gpsloc", targets: ["gpsloc"]),
        .executable(name: "nmea-sim", targets: ["nmea-sim"]),
        .executable(name: "gpslocd", targets: ["gpslocd"]),
    ],
    targets: [
        .systemLibrary(
            name: "CGPS",
            pkgConfig: "libgps",
            providers: [.apt(["libgps-dev"])]
        ),
        .target(name: "CPseudoTerminal"),
        .target(name: "CTimerFD"),
        .target(name: "GNSSCore", swiftSettings: strictSettings),
        .target(name: "NMEA0183", dependencies: ["GNSSCore"], swiftSettings: strictSettings),
        .target(name: "GPSDClient", dependencies: ["CGPS", "GNSSCore", "CTimerFD"], swiftSettings: strictSettings),
        .target(name: "LocationCore", dependencies: ["GNSSCore", "NMEA0183", "GPSDClient"], swiftSettings: strictSettings),
        .target(name: "LocationWords", dependencies: ["GNSSCore", "GPSDClient", "LocationCore"], swiftSettings: strictSettings),
        .target(
            name: "GPSLocation", dependencies: ["GNSSCore", "NMEA0183", "GPSDClient", "LocationCore", "LocationWords"],
            swiftSettings: strictSettings),
        .target(name: "GPSDProcesses", dependencies: ["GPSDClient"], swiftSettings: strictSettings),
        .target(
            name: "GPSLocationTesting", dependencies: ["GPSLocation", "GPSDProcesses", "CPseudoTerminal"],
            swiftSettings: strictSettings),
        // libmicrohttpd (libmicrohttpd-dev's header) for `gpsloc serve`: opened when serve starts
        // (dlopen), not linked — its GnuTLS would cost every other command memory.
        .target(name: "CServeHTTP"),
        .target(
            name: "GPSLocCLI", dependencies: ["LocationCore", "LocationWords", "GPSDClient", "GPSDProcesses", "NMEA0183", "CServeHTTP"],
            swiftSettings: strictSettings),
        .executableTarget(name: "gpsloc", dependencies: ["GPSLocCLI"], swiftSettings: strictSettings),
        .target(name: "CBrokerSupport"),
        // sd-bus (libsystemd-dev) for gpslocd's GeoClue face: its object tables are C macros.
        .target(name: "CGeoClueBus", linkerSettings: [.linkedLibrary("systemd")]),
        .target(
            name: "GPSLocationBroker", dependencies: ["LocationCore", "LocationWords", "GPSDClient", "CBrokerSupport", "CGeoClueBus"], swiftSettings: strictSettings),
        .executableTarget(name: "gpslocd", dependencies: ["GPSLocationBroker", "LocationCore", "GPSDClient", "GNSSCore"], swiftSettings: strictSettings),
        .executableTarget(name: "nmea-sim", dependencies: ["GNSSCore"], swiftSettings: strictSettings),
        .executableTarget(
            name: "ported-daemon", dependencies: ["GPSLocation"], path: "Examples/PortedDaemon",
            swiftSettings: strictSettings),
        .executableTarget(
            name: "app-shapes", dependencies: ["GPSLocation"], path: "Examples/AppShapes", swiftSettings: strictSettings),
        .executableTarget(
            name: "geofenced", dependencies: ["GPSLocation"], path: "Examples/GeofenceDaemon",
            exclude: ["geofenced.service", "geofenced.conf"], swiftSettings: strictSettings),
        .executableTarget(
            name: "gpsloc-bench", dependencies: ["GPSLocation", "GPSLocationTesting", "GPSLocCLI"],
            swiftSettings: strictSettings),
        .target(name: "TestSupport", path: "Tests/TestSupport", swiftSettings: strictSettings),
        .testTarget(name: "NMEA0183Tests", dependencies: ["NMEA0183", "TestSupport"], swiftSettings: strictSettings),
        .testTarget(
            name: "GPSLocationTests",
            dependencies: [
                "GPSLocation", "LocationCore", "LocationWords", "GPSLocationTesting", "GPSLocCLI", "GPSLocationBroker", "TestSupport",
            ],
            swiftSettings: strictSettings
        ),
    ]
)
