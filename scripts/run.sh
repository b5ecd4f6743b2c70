#!/usr/bin/env bash
# The main job: set up, build, and show the locations an app would receive.
# With a receiver behind gpsd: `gpsloc watch` (live). Without one (a fresh machine, CI): the
# bundled recording replayed through the same pipeline, clearly labelled as a replay.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product gpsloc >&2
gpsloc=.build/release/gpsloc

# The gpsd to use: GPSLOCATION_GPSD (HOST[:PORT[:DEVICE]], as gpsd's clients take it) or the local one.
gpsd="${GPSLOCATION_GPSD:-127.0.0.1:2947}"
if scripts/gpsd-reporting.sh "$gpsd"; then
  echo "run: gpsd at $gpsd is reporting — watching the live receiver (Ctrl-C to stop)" >&2
  exec "$gpsloc" watch "$gpsd" "$@"
fi
recording=fixtures/drive-1hz-gp.nmea
echo "run: no receiver reporting through gpsd at $gpsd — replaying the bundled recording $recording instead" >&2
echo "run: (this is recorded data, not your position; \`$gpsloc doctor\` explains how to set up a receiver)" >&2
if [ -t 1 ]; then
  exec "$gpsloc" replay "$recording" --speed 20 "$@"
else
  exec "$gpsloc" replay "$recording" --fast "$@"
fi
