#!/usr/bin/env bash
# Benchmarks, side by side in one run (see BENCHMARKS.md for method and latest figures).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product gpsloc-bench >&2
swift build -c release --product gpsloc >&2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(swift --version 2>&1 | head -1)"

# Geodesic lines: short (1–100 km, what a distance filter sees) and random global ones.
python3 - "$out/lines.txt" <<'PY'
import random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    for i in range(200000):
        lat = random.uniform(-80, 80); lon = random.uniform(-180, 180)
        if i % 2 == 0:
            f.write(f"{lat:.9f} {lon:.9f} {lat + random.uniform(-0.5, 0.5):.9f} {lon + random.uniform(-0.5, 0.5):.9f}\n")
        else:
            f.write(f"{lat:.9f} {lon:.9f} {random.uniform(-90, 90):.9f} {random.uniform(-180, 180):.9f}\n")
PY

echo "== GPSLocation (one core)"
.build/release/gpsloc-bench 1000000 "$out/lines.txt"

echo "== GeographicLib GeodSolve on the same 200,000 lines (text in, text out; what people use for geodesics)"
start=$(date +%s.%N); GeodSolve -i -p 9 < "$out/lines.txt" > /dev/null; end=$(date +%s.%N)
python3 -c "print(f'GeodSolve: {200000/($end-$start):.0f} lines/s ({$end-$start:.3f} s)')"

echo "== gpsd path end to end: fixtures/drive-10hz-multi.nmea (7,354 sentences) through gpsfake"
start=$(date +%s.%N); .build/release/gpsloc replay fixtures/drive-10hz-multi.nmea --via gpsd --json > "$out/ours.ndjson"; end=$(date +%s.%N)
python3 -c "print(f'gpsloc replay --via gpsd --json: {$end-$start:.2f} s, $(grep -c '\"location\"' "$out/ours.ndjson") locations')"
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
start=$(date +%s.%N); TMPDIR=$out gpsfake -1 -p -q -s 38400 -P "$port" fixtures/drive-10hz-multi.nmea > "$out/gpsfake.json" 2>/dev/null; end=$(date +%s.%N)
python3 -c "print(f'gpsfake -1 -p alone (its own watcher): {$end-$start:.2f} s, $(grep -c TPV "$out/gpsfake.json") TPVs')"
