#!/usr/bin/env bash
# Exit 0 when the gpsd at HOST[:PORT[:DEVICE]] (default $GPSLOCATION_GPSD, else 127.0.0.1:2947)
# sends a position report (TPV) within 4 seconds; 1 otherwise. scripts/run.sh uses it to choose
# between the live receiver and the bundled recording.
# (The reports are read whole before they are searched: a `gpspipe | grep -q` pipeline fails
# under pipefail when grep stops reading first, which made a reporting gpsd look silent.)
set -uo pipefail
gpsd="${1:-${GPSLOCATION_GPSD:-127.0.0.1:2947}}"
reports=$(timeout 4 gpspipe -w -n 12 "$gpsd" 2>/dev/null)
grep -q '"class":"TPV"' <<<"$reports"
