#!/usr/bin/env bash
# The release build that is installed: gpsloc and gpslocd with the Swift runtime linked in
# (--static-swift-stdlib: they run where no Swift is installed, needing only libgps and the C
# libraries), hardened as Debian builds C programs (PIE, the toolchain's default, and full RELRO),
# in a build folder of their own (.build/static) so the ordinary release build stays as it is.
# Linked small for memory (#50; BENCHMARKS.md, session 34): with the toolchain's lld, relative
# relocations packed (DT_RELR, glibc >= 2.36: 7 KiB instead of 0.9 MiB read at every start), and
# the functions the programs run placed side by side (every function in a section of its own,
# ordered by scripts/function-order.txt, which scripts/function-order.py writes).
# Used by scripts/install.sh and debian/rules, so both ship the same programs and either reuses
# the other's build. Prints the folder that holds the two programs.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift > /dev/null || { echo "build-static: swift is not on PATH: install the Swift 6.3 toolchain (swift.org) and put its usr/bin on PATH" >&2; exit 1; }
build=(swift build -c release --static-swift-stdlib --scratch-path .build/static
  -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now
  -Xswiftc -use-ld=lld -Xswiftc -Xfrontend -Xswiftc -function-sections -Xlinker -z -Xlinker pack-relative-relocs
  -Xlinker --symbol-ordering-file="$PWD/scripts/function-order.txt" -Xlinker --no-warn-symbol-ordering)
# SwiftPM does not rebuild when only flags like these change: a build made with other flags is
# removed first.
stamp=".build/static/flags"
if [ -d .build/static ] && [ "$(cat "$stamp" 2>/dev/null)" != "${build[*]}" ]; then rm -rf .build/static; fi
"${build[@]}" --product gpsloc >&2
"${build[@]}" --product gpslocd >&2
printf '%s' "${build[*]}" > "$stamp"
"${build[@]}" --show-bin-path
