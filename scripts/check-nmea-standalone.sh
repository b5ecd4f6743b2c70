#!/usr/bin/env bash
# Proves the NMEA engine needs no libgps: copies GNSSCore and NMEA0183 into a scratch package
# whose manifest has no CGPS (nor any C target) and builds them there; their tests are checked
# to import no libgps layer (they compile and run in the main suite; a second build of them
# here cost a minute of CI and proved nothing more).
# Run by scripts/test.sh; works the same on a machine without libgps-dev.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=.build/nmea-standalone/package
rm -rf "$scratch/Sources" "$scratch/Tests"
mkdir -p "$scratch/Sources"
cp -R Sources/GNSSCore Sources/NMEA0183 "$scratch/Sources/"
cat > "$scratch/Package.swift" <<'MANIFEST'
// swift-tools-version:6.2
import PackageDescription
let settings: [SwiftSetting] = [.swiftLanguageMode(.v6), .treatAllWarnings(as: .error)]
let package = Package(
    name: "NMEA0183Standalone",
    targets: [
        .target(name: "GNSSCore", swiftSettings: settings),
        .target(name: "NMEA0183", dependencies: ["GNSSCore"], swiftSettings: settings),
    ]
)
MANIFEST
if grep -rlE '^(@testable )?(internal |public |package )?import (CGPS|GPSDClient|GPSLocation)' \
  "$scratch/Sources" Tests/NMEA0183Tests Tests/TestSupport; then
  echo "check-nmea-standalone: the files above import a libgps layer" >&2
  exit 1
fi
(cd "$scratch" && swift build -q)
echo "check-nmea-standalone: GNSSCore and NMEA0183 build in a package with no CGPS; their tests import no libgps layer"
