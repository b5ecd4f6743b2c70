#!/usr/bin/env bash
# Sets up and runs every test: unit tests, the real-gpsd integration tests (gpsfake), the
# GeodSolve comparison, and the CLI tests. Warnings are errors (Package.swift).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --build-tests
swift test --skip-build
# The manager's threading, under Thread Sanitizer (a separate instrumented build).
swift test --sanitize=thread --filter "ManagerTests|PortedCodeTests"
