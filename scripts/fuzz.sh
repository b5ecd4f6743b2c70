#!/usr/bin/env bash
# Fuzzes the NMEA parser and epoch assembler with libFuzzer (+ AddressSanitizer), or the broker's
# compact JSON reader against Foundation's JSONDecoder.
# Usage: scripts/fuzz.sh [SECONDS] [nmea|compact-json]   (default 600, nmea). Crashes are written
#        to .build/fuzz/.
#        scripts/fuzz.sh --build-only  (what CI runs: both fuzz binaries still build)
# SwiftPM cannot link a -sanitize=fuzzer executable (it wants a main), so swiftc builds the
# NMEA engine's own sources (NMEA0183 and the GNSSCore values it uses, as one module: their
# `import GNSSCore` lines are dropped in a copy) with the entry point in Fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
target=${2:-nmea}
out=.build/fuzz
mkdir -p "$out/corpus" "$out/sources"
rm -f "$out/sources"/*.swift
for f in Sources/NMEA0183/*.swift; do grep -v '^import GNSSCore$' "$f" > "$out/sources/$(basename "$f")"; done
swiftc -O -sanitize=fuzzer,address -parse-as-library -swift-version 6 -module-name NMEAFuzz -package-name GPSLocation \
  Fuzz/NMEAFuzzTarget.swift Sources/GNSSCore/*.swift "$out"/sources/*.swift \
  -o "$out/nmea-fuzz"
# The broker's compact JSON reader against Foundation's JSONDecoder (gpslocd reads every program's
# requests with it): its two files and the entry point as one module.
swiftc -O -sanitize=fuzzer,address -parse-as-library -swift-version 6 -module-name BrokerJSONFuzz \
  -package-name GPSLocation Fuzz/CompactJSONFuzzTarget.swift Sources/LocationCore/Broker/CompactJSON.swift \
  Sources/LocationCore/Broker/BrokerMessage.swift -o "$out/compact-json-fuzz"
if [ "$seconds" = "--build-only" ]; then echo "fuzz: $out/nmea-fuzz and $out/compact-json-fuzz build"; exit 0; fi
export SWIFT_BACKTRACE=enable=no  # let libFuzzer, not the Swift backtracer, report a trap
if [ "$target" = "compact-json" ]; then
  # Seeds: lines of each kind the protocol writes.
  mkdir -p "$out/json-corpus"
  i=0
  while IFS= read -r line; do
    printf '%s' "$line" > "$out/json-corpus/seed-$i"
    i=$((i + 1))
  done <<'SEEDS'
{"class":"FIX","mode":3,"quality":1,"time":1781510719.6,"lat":51.445684703,"lon":-2.541508123,"altHAE":108.3,"altMSL":60.1,"speed":11.58,"track":108.38,"climb":-21.0,"device":"/dev/ttyACM0","ept":0.005,"epx":6.797,"eph":18.05,"reduced":false}
{"class":"ESTIMATE","time":1781510719.6,"lat":1.5,"lon":1.4,"alt":2.8}
{"class":"SKY","time":1781510719.0,"hdop":0.95,"satellites":[{"class":"SATELLITE","prn":1,"gnss":0,"svid":1,"ss":21.5,"el":12.0,"az":9.0,"used":false},{"class":"SATELLITE","prn":2,"used":true}]}
{"class":"WATCH","enable":true,"sky":false,"app":"gpsloc"}
{"class":"PROBLEM","code":"locationUnknown","reason":"gpsdUnreachable","terminal":false,"message":"gpsd is not reachable — start it","n":-0,"e":1e-5,"z":null}
SEEDS
  exec "$out/compact-json-fuzz" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/" \
    "$out/json-corpus"
fi
# Seeds: the project's fixtures, cut into pieces, and the real-receiver corpus when present.
for f in fixtures/*.nmea ../shared/corpus/gpsd-3.22/*.log ../shared/corpus/gpsd-modern/*.log; do
  [ -f "$f" ] || continue
  split -b 4096 -d "$f" "$out/corpus/$(basename "$f")." 2>/dev/null || true
done
exec "$out/nmea-fuzz" -max_total_time="$seconds" -print_final_stats=1 -artifact_prefix="$out/" "$out/corpus"
