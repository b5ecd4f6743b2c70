#!/usr/bin/env bash
# Sets up and runs every test: unit tests, the real-gpsd integration tests (gpsfake), the
# GeodSolve comparison, the CLI tests, and the manager under Thread Sanitizer.
# Warnings are errors (Package.swift).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --build-tests
# One test at a time (about 3.5 minutes): run in parallel on a 2-core machine, the suite has
# hung now and then with every task suspended (under investigation, see the README); a run that
# exceeds 20 minutes is stopped and tried once more, saying so.
status=0
timeout 1200 swift test --skip-build --no-parallel || status=$?
if [ "$status" -eq 124 ]; then
  echo "test.sh: the test run did not finish within 20 minutes; running it once more" >&2
  status=0
  timeout 1200 swift test --skip-build --no-parallel || status=$?
fi
[ "$status" -eq 0 ] || exit "$status"
# The manager's threading, under Thread Sanitizer (a separate instrumented build).
timeout 1200 swift test --sanitize=thread --filter "ManagerTests|PortedCodeTests|StalenessTests"
