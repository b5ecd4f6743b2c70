#!/usr/bin/env bash
# Sets up and runs every test: unit tests, the real-gpsd integration tests (gpsfake), the
# GeodSolve comparison, the CLI tests, the NMEA engine built without libgps, the installer, and the manager,
# engine, staleness and receiver suites under Thread Sanitizer. Warnings are errors (Package.swift).
#
# scripts/test.sh --stress N   runs the parallel suite N times while busy loops keep every core
#                              busy (as on a shared CI machine), and prints how often each test failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The house style (.swift-format): lint clean, or the run stops here and says where.
swift format lint --strict -r Sources Tests Examples
swift build --build-tests
if [ "${1:-}" = "--stress" ]; then
  runs=${2:?usage: scripts/test.sh --stress N}
  busy=()
  for _ in $(seq "$(nproc)"); do (while :; do :; done) & busy+=($!); done
  trap 'kill "${busy[@]}" 2>/dev/null' EXIT
  log=$(mktemp -d)
  failed_runs=0
  for run in $(seq "$runs"); do
    start=$SECONDS
    if swift test --skip-build --parallel >"$log/run-$run.txt" 2>&1; then result=passed; else result=FAILED; failed_runs=$((failed_runs + 1)); fi
    echo "stress: run $run of $runs $result in $((SECONDS - start)) s (cores busy: $(nproc))"
  done
  echo "stress: $((runs - failed_runs)) of $runs runs passed; failures per test:"
  cat "$log"/run-*.txt | grep -E '^✘ Test "[^"]*".* failed after' | sed -E 's/^✘ Test ("[^"]*").*/\1/' | sort | uniq -c | sort -rn || true
  echo "stress: logs in $log"
  [ "$failed_runs" -eq 0 ]
  exit
fi
# In parallel; the real-gpsd suites run one at a time in each of two lanes (RealGPSD), and every suite has a
# Swift Testing time limit, so a stuck test fails by itself instead of hanging the run.
swift test --skip-build --parallel
# The NMEA engine in a package with no CGPS at all: it builds and passes without libgps.
scripts/check-nmea-standalone.sh
# The libFuzzer target over the NMEA engine still builds (scripts/fuzz.sh SECONDS runs it).
scripts/fuzz.sh --build-only
# The installer into an empty prefix: a gpsloc with the Swift runtime linked in (no Swift library
# loaded), its man page and completion, the udev rule, idempotence and uninstall (a release build).
scripts/check-install.sh
# The API documentation (DocC): builds with no warning, and every public declaration has a doc
# comment.
scripts/docs.sh
# The threading of the manager, the engine's drivers and timers, and the gpsd reader thread, under
# Thread Sanitizer (a separate build).
# The receiver rules run here through their stage and a manager fed fixes (ReceiverSelectionStageTests);
# the real-gpsd receiver suite is left out: under TSan's slowdown which receiver reports first is a
# race of its set-up (seen: it picked the other receiver), not of the code.
swift test --sanitize=thread \
  --filter "ManagerTests|ManagerRaceTests|LocationEngineTests|PortedCodeTests|StalenessTests|ReceiverSelectionStageTests|EngineMonitoringTests|RegionAPITests|EngineTimersTests|GPSDReaderTests|DriverRaceTests|SlowConsumerTests"
