#!/usr/bin/env bash
# Proves the NMEA engine needs no libgps: copies GNSSCore, NMEA0183 and their tests into a
# scratch package whose manifest has no CGPS (nor any C target) and builds it there.
# Run by scripts/test.sh; works the same on a machine without libgps-dev.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build/nmea-standalone/package
rm -rf "$scratch/Sources" "$scratch/Tests"
mkdir -p "$scratch/Sources" "$scratch/Tests"
cp -R Sources/GNSSCore Sources/NMEA0183 "$scratch/Sources/"
cp -R Tests/NMEA0183Tests Tests/TestSupport "$scratch/Tests/"
cat > "$scratch/Package.swift" <<'MANIFEST'
// swift-tools-version:6.2
import PackageDescription
let settings: [SwiftSetting] = [.swiftLanguageMode(.v6), .treatAllWarnings(as: .error)]
let package = Package(
    name: "NMEA0183Standalone",
    targets: [
        .target(name: "GNSSCore", swiftSettings: settings),
        .target(name: "NMEA0183", dependencies: ["GNSSCore"], swiftSettings: settings),
        .target(name: "TestSupport", path: "Tests/TestSupport", swiftSettings: settings),
        .testTarget(name: "NMEA0183Tests", dependencies: ["NMEA0183", "TestSupport"], swiftSettings: settings),
    ]
)
MANIFEST
# The tests find fixtures/ in the package and the corpus at ../shared/corpus beside it.
ln -sfn "$(pwd)/fixtures" "$scratch/fixtures"
[ -d ../shared ] && ln -sfn "$(cd .. && pwd)/shared" "$(dirname "$scratch")/shared"
if grep -rlE '^(internal |public |package )?import (CGPS|GPSDClient|GPSLocation)' "$scratch/Sources" "$scratch/Tests"; then
  echo "check-nmea-standalone: the files above import a libgps layer" >&2
  exit 1
fi
# Built with its tests (they compile without libgps too); the tests themselves run once, in the
# main suite, not again here.
(cd "$scratch" && swift build --build-tests -q)
echo "check-nmea-standalone: GNSSCore, NMEA0183 and their tests build in a package with no CGPS"
