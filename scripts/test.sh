#!/usr/bin/env bash
# Sets up and runs every test: unit tests, the real-gpsd integration tests (gpsfake), the
# GeodSolve comparison, the CLI tests, the NMEA engine built without libgps, the fuzz target's
# build, the DocC check, the installer, the Debian packages, the suites that depend on where the
# checkout is from a private folder, and the manager, engine, staleness and receiver suites
# under Thread Sanitizer. Warnings are errors (Package.swift). One line per step on the page,
# with its time; each step's output in .build/ci-logs/.
#
# scripts/test.sh --stress N   runs the parallel suite N times while busy loops keep every core
#                              busy (as on a shared CI machine), and prints how often each test failed.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# The house style (.swift-format): lint clean, or the run stops here and says where.
swift format lint --strict -r Sources Tests Examples
# gpsd 3.22's whole regression corpus from Debian's source package (cached in .build; the
# conformance test NMEADebianCorpusTests reads it): fetched beside the build, once per clone.
mkdir -p .build
scripts/fetch-gpsd-corpus.sh > .build/gpsd-corpus.log 2>&1 &
corpus=$!
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
# One debug build above; then the checks. The parallel suite runs in the foreground while the
# checks that need builds of their own (each in its own build folder, so none waits on the
# suite's lock or replaces a binary it runs) go one after another beside it: the suite mostly
# waits on gpsd's pacing, so they use the cores it leaves idle. Each step's output goes to
# .build/ci-logs/STEP.log; the page gets one line per step with its time, and a failing step's
# log tail.
logs=.build/ci-logs
rm -rf "$logs"; mkdir -p "$logs"
step() { # step NAME COMMAND... : runs COMMAND, logs it, says how long it took
  local name=$1; shift
  local start=$SECONDS
  if "$@" >"$logs/$name.log" 2>&1; then
    echo "step $name: passed in $((SECONDS - start)) s"
  else
    echo "step $name: FAILED after $((SECONDS - start)) s (log: $logs/$name.log)"
    # The failing tests and their issues first (a fresh clone's log may be gone when CI ends),
    # then the log's end.
    grep -E -A3 '^. Test .* recorded an issue' "$logs/$name.log" | head -n 60 || true
    echo "step $name: the end of its log:"
    tail -n 40 "$logs/$name.log"
    return 1
  fi
}
# The threading of the manager, the engine's drivers and timers, and the gpsd reader thread,
# under Thread Sanitizer: built and run beside the suite, in a package of their own
# (scripts/tsan.sh: only the threading suites' files are compiled under TSan, not the whole
# test bundle). The receiver rules run there through their stage and a manager fed fixes
# (ReceiverSelectionStageTests); the real-gpsd receiver suite is left out: under TSan's slowdown
# which receiver reports first is a race of its set-up, not of the code.
tsan_checks() {
  # Its tests right after its build, beside the suite: no test waits on the wall clock, so they
  # need no quiet machine. GPSLOCATION_TSAN: a sample of the data-heavy cases, since Thread
  # Sanitizer needs each path of the threading run, not each fixture through it.
  step tsan-build scripts/tsan.sh --build-only || return 1
  step tsan-tests scripts/tsan.sh
}
other_checks() {
  local failed=0
  # The NMEA engine in a package with no CGPS at all: it builds without libgps (its tests run in
  # the suite above).
  step nmea-alone scripts/check-nmea-standalone.sh || failed=1
  # The libFuzzer targets still build: the NMEA engine, and the broker's compact JSON reader
  # against JSONDecoder (scripts/fuzz.sh SECONDS [nmea|compact-json] runs one).
  step fuzz-build scripts/fuzz.sh --build-only || failed=1
  # The API documentation (DocC): no warning, every public declaration documented
  # (its symbol graphs come from the debug build above: no build of its own).
  step docs env GPSLOCATION_DEBUG_BUILT=1 scripts/docs.sh || failed=1
  # The installer into an empty prefix: a static gpsloc (release build), man page, completion,
  # udev rule, idempotence and uninstall.
  step install scripts/check-install.sh || failed=1
  # The Debian packages (debian/): built with dpkg-buildpackage (reusing the installer's static
  # build), lintian-clean, and as root installed with no network, run, upgraded and purged.
  step deb scripts/check-deb.sh || failed=1
  # The checkout-location lane in a copy of this tree in a 0700 folder, on a path with spaces.
  step private-clone scripts/check-private-clone.sh || failed=1
  return "$failed"
}
status=0
if wait "$corpus"; then
  echo "step gpsd-corpus: passed beside the build ($(tail -n 1 .build/gpsd-corpus.log))"
else
  echo "step gpsd-corpus: FAILED (log: .build/gpsd-corpus.log)"
  tail -n 5 .build/gpsd-corpus.log
  status=1
fi
tsan_checks > "$logs/tsan-checks.txt" 2>&1 &
tsan=$!
other_checks > "$logs/other-checks.txt" 2>&1 &
others=$!
# The suite in parallel; the real-gpsd suites run one at a time in each of four lanes (RealGPSD),
# and every suite has a Swift Testing time limit, so a stuck test fails by itself.
# A watchdog over the whole suite: a test stuck where its time limit cannot reach (a blocking
# call that ignores cancellation) ends the step after 40 minutes instead of CI's 90, and the
# page names the tests that started and never finished.
step tests timeout --kill-after=30 2400 swift test --skip-build --parallel || {
  status=1
  unfinished=$(awk '/^◇ Test .* started\.$/ && !/^◇ Test case / { sub(/^◇ Test /, ""); sub(/ started\.$/, ""); open[$0] = 1 }
    /^(✔|✘) Test / { line = $0; sub(/^(✔|✘) Test /, "", line); for (name in open) if (index(line, name) == 1) delete open[name] }
    END { for (name in open) print "  " name }' "$logs/tests.log")
  [ -n "$unfinished" ] && printf 'step tests: started and never finished:\n%s\n' "$unfinished"
}
grep -E "^. Test run with" "$logs/tests.log" || true
wait "$tsan" || status=1
wait "$others" || status=1
cat "$logs/tsan-checks.txt" "$logs/other-checks.txt"
[ "$status" = 0 ] && echo "test.sh: every step passed in $SECONDS s" || echo "test.sh: FAILED (see the steps above)"
exit "$status"
