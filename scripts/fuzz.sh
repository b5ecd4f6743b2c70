#!/usr/bin/env bash
# Fuzzes the NMEA parser and epoch assembler with libFuzzer (+ AddressSanitizer).
# Usage: scripts/fuzz.sh [SECONDS]   (default 600). Crashes are written to .build/fuzz/.
# SwiftPM cannot link a -sanitize=fuzzer executable (it wants a main), so swiftc builds the
# parser's own sources with the entry point in Fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
out=.build/fuzz
mkdir -p "$out/corpus"
swiftc -O -sanitize=fuzzer,address -parse-as-library -swift-version 6 \
  Fuzz/NMEAFuzzTarget.swift Sources/GPSLocation/Fix.swift Sources/GPSLocation/NMEA/*.swift \
  -o "$out/nmea-fuzz"
# Seeds: the project's fixtures, cut into pieces, and the real-receiver corpus when present.
for f in fixtures/*.nmea ../shared/corpus/gpsd-3.22/*.log ../shared/corpus/gpsd-modern/*.log; do
  [ -f "$f" ] || continue
  split -b 4096 -d "$f" "$out/corpus/$(basename "$f")." 2>/dev/null || true
done
export SWIFT_BACKTRACE=enable=no  # let libFuzzer, not the Swift backtracer, report a trap
exec "$out/nmea-fuzz" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus"
