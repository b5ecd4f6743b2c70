#!/usr/bin/env bash
# Benchmarks, side by side in one run (method and latest figures: BENCHMARKS.md).
# Usage: scripts/bench.sh [--long] [--against REV]
#   --long          adds the 24-hour memory run (about 90 s more)
#   --against REV   adds the end-to-end replay side by side with the commit REV (built in a
#                   worktree under .build), in alternating pairs: is this commit as fast as that one?
set -euo pipefail
long=""
against=""
while [ $# -gt 0 ]; do
  case "$1" in
    --long) long=1 ;;
    --against)
      [ $# -ge 2 ] || { echo "bench.sh: --against needs a commit (e.g. --against 433801b)" >&2; exit 2; }
      against="$2"
      shift ;;
    *) echo "bench.sh: unknown argument '$1' (usage: scripts/bench.sh [--long] [--against REV])" >&2; exit 2 ;;
  esac
  shift
done
if [ -n "$against" ]; then
  git rev-parse --verify --quiet "$against^{commit}" > /dev/null \
    || { echo "bench.sh: '$against' is not a commit in this repository" >&2; exit 2; }
fi
cd "$(dirname "$0")/.."
scripts/setup.sh
for product in gpsloc-bench gpsloc nmea-sim; do swift build -c release --product "$product" >&2; done
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
bin=.build/release

echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(swift --version 2>&1 | head -1)"

# pynmea2 (PyPI) in a private virtual environment, for the Python comparison.
if [ ! -x .build/bench-venv/bin/python ]; then
  python3 -m venv .build/bench-venv >&2 && .build/bench-venv/bin/pip install -q pynmea2 >&2
fi

echo "== one hour at 10 Hz, multi-GNSS (nmea-sim --rate 10 --duration 3600 --talkers multi --scenario clean)"
"$bin/nmea-sim" --rate 10 --duration 3600 --talkers multi --scenario clean --output "$out/hour.nmea"
echo "$(wc -l < "$out/hour.nmea") lines, $(stat -c %s "$out/hour.nmea") bytes"

# best of 3 wall-clock runs of a shell command
best() {
  python3 - "$@" <<'PY'
import subprocess, sys, time
label, command = sys.argv[1], sys.argv[2]
times = []
for _ in range(3):
    start = time.perf_counter()
    subprocess.run(command, shell=True, check=True)
    times.append(time.perf_counter() - start)
print(f"{label}: {min(times):.3f} s (best of 3)")
PY
}

"$bin/gpsloc-bench" nmea "$out/hour.nmea"
best "gpsloc replay --fast --json > /dev/null (end to end)" "$bin/gpsloc replay $out/hour.nmea --fast --json > /dev/null"
best "gpsdecode < file > /dev/null (gpsd's own decoder)" "gpsdecode < $out/hour.nmea > /dev/null"
# The ratio from alternating pairs (ours, then gpsdecode, seven times): on a shared machine the
# two best-of-3 figures above can land in different moments of load; each pair shares one.
python3 - "$bin/gpsloc-bench" "$out/hour.nmea" <<'PY'
import statistics, subprocess, sys, time
bench, recording = sys.argv[1], sys.argv[2]
ratios, ours, theirs = [], [], []
for _ in range(7):
    ours.append(float(subprocess.run([bench, "nmea", recording], capture_output=True, text=True, check=True).stdout.split()[2]))
    start = time.perf_counter()
    subprocess.run(f"gpsdecode < {recording} > /dev/null", shell=True, check=True)
    theirs.append(time.perf_counter() - start)
    ratios.append(theirs[-1] / ours[-1])
print(f"parse + assembly vs gpsdecode, 7 alternating pairs: median {statistics.median(ratios):.1f}x "
      f"(pairs {min(ratios):.1f}-{max(ratios):.1f}x; ours median {statistics.median(ours):.3f} s, "
      f"gpsdecode median {statistics.median(theirs):.3f} s)")
PY
best "pynmea2.parse on every line (Python, parse only)" ".build/bench-venv/bin/python -c \"
import pynmea2
n = 0
for line in open('$out/hour.nmea', errors='replace'):
    try:
        pynmea2.parse(line); n += 1
    except pynmea2.ParseError:
        pass
\""

echo "== memory"
/usr/bin/time -f "1 hour replay: max RSS %M KB" "$bin/gpsloc" replay - --fast --json < "$out/hour.nmea" > /dev/null
if [ -n "$long" ]; then
  "$bin/nmea-sim" --rate 10 --duration 86400 --talkers multi --scenario clean \
    | /usr/bin/time -f "24 hour replay (streamed from nmea-sim): max RSS %M KB" "$bin/gpsloc" replay - --fast --json > /dev/null
fi

echo "== pipeline and geodesic (one core)"
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
"$bin/gpsloc-bench" pipeline 1000000 "$out/lines.txt"
"$bin/gpsloc-bench" manager 1000000

echo "== gpsloc built two ways: the Swift runtime as shared libraries, or linked in (scripts/install.sh)"
installed_dir="$(scripts/build-static.sh)"
strip -o "$out/gpsloc-static" "$installed_dir/gpsloc"
python3 - "$bin/gpsloc" "$out/gpsloc-static" fixtures/loop-1hz-gp.nmea <<'PY'
import os, re, resource, subprocess, sys, time
def libraries(path):
    found = re.findall(r"=> (/\S+)", subprocess.run(["ldd", path], capture_output=True, text=True).stdout)
    return found
def startup(path, runs=200):
    best = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(runs):
            subprocess.run([path, "--help"], stdout=subprocess.DEVNULL, check=True)
        best.append((time.perf_counter() - start) / runs)
    return min(best) * 1000
def max_rss(command):
    result = subprocess.run(["/usr/bin/time", "-f", "%M"] + command, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, check=True)
    return int(result.stderr.strip().splitlines()[-1])
for label, path in (("dynamic (.build/release)", sys.argv[1]), ("static, stripped (install.sh)", sys.argv[2])):
    libs = libraries(path)
    swift = [l for l in libs if re.search(r"libswift|Foundation|libdispatch|BlocksRuntime", l)]
    disk = os.path.getsize(path) + sum(os.path.getsize(os.path.realpath(l)) for l in libs)
    print(f"{label}: {len(libs)} shared libraries ({len(swift)} Swift), binary {os.path.getsize(path)/1e6:.1f} MB, "
          f"binary + libraries {disk/1e6:.1f} MB; --help {startup(path):.1f} ms (best of 5 × 200); "
          f"max RSS --help {max_rss([path, '--help'])} KB, replay of the loop recording {max_rss([path, 'replay', sys.argv[3], '--fast', '--json'])} KB")
PY

echo "== end to end, the installed gpsloc (what install.sh and the Debian package ship): replay of the hour"
# Alternating with gpsdecode, so each pair shares a moment of the machine's load.
python3 - "$out/gpsloc-static" "$out/hour.nmea" <<'PY'
import statistics, subprocess, sys, time
ours, theirs = [], []
for _ in range(9):
    start = time.perf_counter()
    subprocess.run(f"{sys.argv[1]} replay {sys.argv[2]} --fast --json > /dev/null", shell=True, check=True)
    ours.append(time.perf_counter() - start)
    start = time.perf_counter()
    subprocess.run(f"gpsdecode < {sys.argv[2]} > /dev/null", shell=True, check=True)
    theirs.append(time.perf_counter() - start)
print(f"installed gpsloc replay --fast --json: best {min(ours):.4f} s (median {statistics.median(ours):.4f}); "
      f"gpsdecode best {min(theirs):.3f} s (median {statistics.median(theirs):.3f}): "
      f"{min(theirs) / min(ours):.1f}x best to best, {statistics.median(theirs) / statistics.median(ours):.1f}x median to median")
PY

echo "== live: gpsloc watch --json beside gpspipe -w on one real gpsd (a 10 Hz receiver, one minute);"
echo "   the installed (static, stripped) gpsloc, and gpslocd serving one, measured in the same run"
mkdir -p "$out/installed"
strip -o "$out/installed/gpsloc" "$installed_dir/gpsloc"
strip -o "$out/installed/gpslocd" "$installed_dir/gpslocd"
ls -l "$out/installed" | awk 'NR > 1 { printf "installed %s: %.1f MB on disk\n", $9, $5 / 1e6 }'
# gpslocd's GeoClue face too, serving GeoClue's own client, where dbus-daemon and geoclue-2-demo are.
geoclue=()
[ -x /usr/libexec/geoclue-2.0/demos/where-am-i ] && [ -x /usr/bin/dbus-daemon ] && geoclue=(--geoclue)
python3 scripts/bench-live.py "$bin" --seconds 60 --installed "$out/installed" "${geoclue[@]}" --rounds 5

echo "== geofences: 10,000 monitored circles, one hour of a 10 Hz drive (grid index against the naive loop)"
"$bin/gpsloc-bench" regions 10000
best "GeodSolve -i on the same 200,000 lines (text in/out)" "GeodSolve -i -p 9 < $out/lines.txt > /dev/null"

echo "== geocoding: CLGeocoder's offline lookups beside libgeonames' own name search"
"$bin/gpsloc-bench" geocode 100000

echo "== gpsd path end to end: fixtures/drive-10hz-multi.nmea through gpsfake"
best "gpsloc replay --via gpsd --json" "$bin/gpsloc replay fixtures/drive-10hz-multi.nmea --via gpsd --json > /dev/null"

echo "== live: each epoch's location after its last sentence, beside gpspipe -w (pseudo-terminal receiver, real gpsd, 60 epochs an order)"
"$bin/gpsloc-bench" epochs --cycles 60

if [ -n "$against" ]; then
  echo "== end to end beside $against: gpsloc replay --via nmea --fast --json of the hour, 7 alternating pairs"
  tree=".build/against-$(git rev-parse --short "$against")"
  [ -d "$tree" ] || git worktree add --detach "$tree" "$against" >&2
  (cd "$tree" && swift build -c release --product gpsloc >&2)
  python3 - "$bin/gpsloc" "$tree/.build/release/gpsloc" "$out/hour.nmea" "$against" <<'PY'
import statistics, subprocess, sys, time
ours, theirs, recording, label = sys.argv[1:5]
def run(binary):
    start = time.perf_counter()
    subprocess.run([binary, "replay", recording, "--via", "nmea", "--fast", "--json"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start
a, b = [], []
for _ in range(7):
    a.append(run(ours))
    b.append(run(theirs))
ratios = [x / y for x, y in zip(a, b)]
print(f"this commit {statistics.median(a):.3f} s, {label} {statistics.median(b):.3f} s (medians); "
      f"time ratio median {statistics.median(ratios):.2f} (pairs {min(ratios):.2f}-{max(ratios):.2f}; "
      f"below 1: this commit is faster)")
PY
fi
