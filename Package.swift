// swift-tools-version:6.2
import PackageDescription

/// One settings loop: every Swift target builds in Swift 6 language mode with warnings as errors.
let strictSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "GPSLocation",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "GPSLocation", targets: ["GPSLocation"]),
        .executable(name: "gpsloc", targets: ["gpsloc"]),
        .executable(name: "nmea-sim", targets: ["nmea-sim"]),
    ],
    targets: [
        .systemLibrary(
            name: "CGPS",
            pkgConfig: "libgps",
            providers: [.apt(["libgps-dev"])]
        ),
        .target(name: "GPSLocation", dependencies: ["CGPS"], swiftSettings: strictSettings),
        .target(name: "GPSLocCLI", dependencies: ["GPSLocation"], swiftSettings: strictSettings),
        .executableTarget(name: "gpsloc", dependencies: ["GPSLocCLI"], swiftSettings: strictSettings),
        .executableTarget(name: "nmea-sim", dependencies: ["GPSLocation"], swiftSettings: strictSettings),
        .executableTarget(name: "gpsloc-bench", dependencies: ["GPSLocation"], swiftSettings: strictSettings),
        .testTarget(
            name: "GPSLocationTests",
            dependencies: ["GPSLocation", "GPSLocCLI"],
            swiftSettings: strictSettings
        ),
    ]
)
