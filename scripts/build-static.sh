#!/usr/bin/env bash
# The release build that is installed: gpsloc and gpslocd with the Swift runtime linked in
# (--static-swift-stdlib: they run where no Swift is installed, needing only libgps and the C
# libraries), hardened as Debian builds C programs (PIE, the toolchain's default, and full RELRO),
# in a build folder of their own (.build/static) so the ordinary release build stays as it is.
# Used by scripts/install.sh and debian/rules, so both ship the same programs and either reuses
# the other's build. Prints the folder that holds the two programs.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift > /dev/null || { echo "build-static: swift is not on PATH: install the Swift 6.3 toolchain (swift.org) and put its usr/bin on PATH" >&2; exit 1; }
build=(swift build -c release --static-swift-stdlib --scratch-path .build/static
  -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now)
"${build[@]}" --product gpsloc >&2
"${build[@]}" --product gpslocd >&2
"${build[@]}" --show-bin-path
