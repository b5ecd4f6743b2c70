#!/usr/bin/env bash
# The soak benchmark (BENCHMARKS.md): 10 minutes of a simulated 10 Hz receiver through a real
# gpsd, GPSLocation's manager with a sleeping delegate beside gpspipe and gpsd's Python client,
# then a minute of silence. About 12 minutes. Options go to scripts/soak.py (--minutes, --rate,
# --sleep, --idle).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
for product in gpsloc-bench nmea-sim; do swift build -c release --product "$product" >&2; done
exec /usr/bin/python3 scripts/soak.py .build/release "$@"
