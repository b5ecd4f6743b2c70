#!/usr/bin/env bash
# Fuzzes the NMEA parser and epoch assembler with libFuzzer (+ AddressSanitizer).
# Usage: scripts/fuzz.sh [SECONDS]   (default 600). Crashes are written to .build/fuzz/.
#        scripts/fuzz.sh --build-only  (what CI runs: the fuzz binary still builds)
# SwiftPM cannot link a -sanitize=fuzzer executable (it wants a main), so swiftc builds the
# NMEA engine's own sources (NMEA0183 and the GNSSCore values it uses, as one module: their
# `import GNSSCore` lines are dropped in a copy) with the entry point in Fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
out=.build/fuzz
mkdir -p "$out/corpus" "$out/sources"
rm -f "$out/sources"/*.swift
for f in Sources/NMEA0183/*.swift; do grep -v '^import GNSSCore$' "$f" > "$out/sources/$(basename "$f")"; done
swiftc -O -sanitize=fuzzer,address -parse-as-library -swift-version 6 -module-name NMEAFuzz -package-name GPSLocation \
  Fuzz/NMEAFuzzTarget.swift Sources/GNSSCore/*.swift "$out"/sources/*.swift \
  -o "$out/nmea-fuzz"
if [ "$seconds" = "--build-only" ]; then echo "fuzz: $out/nmea-fuzz builds"; exit 0; fi
# Seeds: the project's fixtures, cut into pieces, and the real-receiver corpus when present.
for f in fixtures/*.nmea ../shared/corpus/gpsd-3.22/*.log ../shared/corpus/gpsd-modern/*.log; do
  [ -f "$f" ] || continue
  split -b 4096 -d "$f" "$out/corpus/$(basename "$f")." 2>/dev/null || true
done
export SWIFT_BACKTRACE=enable=no  # let libFuzzer, not the Swift backtracer, report a trap
exec "$out/nmea-fuzz" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus"
