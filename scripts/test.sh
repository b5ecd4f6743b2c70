#!/usr/bin/env bash
# Sets up and runs every test: unit tests, the real-gpsd integration tests (gpsfake), the
# GeodSolve comparison, the CLI tests, the NMEA engine built without libgps, the installer, and the manager,
# engine, staleness and receiver suites under Thread Sanitizer. Warnings are errors (Package.swift).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --build-tests
# In parallel; the real-gpsd suites run one at a time in each of two lanes (RealGPSD), and every suite has a
# Swift Testing time limit, so a stuck test fails by itself instead of hanging the run.
swift test --skip-build --parallel
# The NMEA engine in a package with no CGPS at all: it builds and passes without libgps.
scripts/check-nmea-standalone.sh
# The installer into an empty prefix: a gpsloc with the Swift runtime linked in (no Swift library
# loaded), its man page and completion, the udev rule, idempotence and uninstall (a release build).
scripts/check-install.sh
# The threading of the manager, the engine's drivers and timers, and the gpsd reader thread, under
# Thread Sanitizer (a separate build).
# The receiver rules run here through their stage and a manager fed fixes (ReceiverSelectionStageTests);
# the real-gpsd receiver suite is left out: under TSan's slowdown which receiver reports first is a
# race of its set-up (seen: it picked the other receiver), not of the code.
swift test --sanitize=thread \
  --filter "ManagerTests|ManagerRaceTests|LocationEngineTests|PortedCodeTests|StalenessTests|ReceiverSelectionStageTests|EngineMonitoringTests|RegionAPITests|EngineTimersTests|GPSDReaderTests|DriverRaceTests|SlowConsumerTests"
