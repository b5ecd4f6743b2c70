#!/usr/bin/env bash
# The suite from a checkout where a new user's clone lands (#48): inside a folder only its owner
# may enter (Debian 12's homes are 0700, as /root and `mktemp -d` are), on a path with spaces.
# The working tree (tracked files and new ones git does not ignore, as the suite sees them) is
# copied to "$(mktemp -d)/home of a user/GPS Location", built there, and the checkout-location
# lane runs in it: the suites that run the built programs as other users (nobody, gpslocd's
# uid, an app's uid), that read the checkout's files from another process, or that make files
# of their own beside it.
#
#   scripts/check-private-clone.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# Suites whose result depends on where the checkout is (a regular expression for --filter).
lane='UnitSandboxTests|BrokerUidTests|LastLocationTests|CLITests|GPXFullDiskTests|PortedDaemonTests|DocsTests|ServiceTests'

base="$(mktemp -d)"
trap 'rm -rf "$base"' EXIT
home="$base/home of a user"
mkdir -m 0700 "$home"
clone="$home/GPS Location"
mkdir "$clone"
# (A file deleted but not yet committed is listed by git and skipped by tar.)
git ls-files -z --cached --others --exclude-standard \
  | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -C "$clone" -xf -
echo "check-private-clone: $(git ls-files --cached --others --exclude-standard | wc -l) files in '$clone' ($(stat -c %a "$home") above it)"
cd "$clone"
swift build --build-tests
swift test --skip-build --parallel --filter "$lane"
