#!/usr/bin/env bash
# The release build that is installed: gpsloc and gpslocd with the Swift runtime linked in
# (--static-swift-stdlib: they run where no Swift is installed, needing only libgps and the C
# libraries), hardened as Debian builds C programs (PIE, the toolchain's default, and full RELRO),
# in a build folder of their own (.build/static) so the ordinary release build stays as it is.
# Linked small for memory (#50; BENCHMARKS.md, session 34): with the toolchain's lld, relative
# relocations packed (DT_RELR: 7 KiB instead of 0.9 MiB read at every start; only where the C
# library reads them, glibc >= 2.36 — a program packed so would not start on an older one), and
# the functions the programs run placed side by side (every function in a section of its own,
# ordered by scripts/function-order.txt, which scripts/function-order.py writes). A toolchain
# without lld links as before, and says so.
# Used by scripts/install.sh and debian/rules, so both ship the same programs and either reuses
# the other's build. Prints the folder that holds the two programs.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift > /dev/null || { echo "build-static: swift is not on PATH: install the Swift 6.3 toolchain (swift.org) and put its usr/bin on PATH" >&2; exit 1; }
build=(swift build -c release --static-swift-stdlib --scratch-path .build/static
  -Xlinker -z -Xlinker relro -Xlinker -z -Xlinker now)
if [ -x "$(dirname "$(readlink -f "$(command -v swift)")")/ld.lld" ]; then
  build+=(-Xswiftc -use-ld=lld -Xswiftc -Xfrontend -Xswiftc -function-sections
    -Xlinker --symbol-ordering-file="$PWD/scripts/function-order.txt" -Xlinker --no-warn-symbol-ordering)
  glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null || true)"
  glibc="${glibc#glibc }"
  major="${glibc%%.*}" minor="${glibc#*.}"
  minor="${minor%%.*}"
  if [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]] && ((major > 2 || (major == 2 && minor >= 36))); then
    build+=(-Xlinker -z -Xlinker pack-relative-relocs)
  else
    echo "build-static: glibc ${glibc:-unknown} reads no packed relocations (DT_RELR, 2.36 and later): linked without them" >&2
  fi
else
  echo "build-static: this Swift toolchain has no ld.lld: linked in the default order (more memory resident)" >&2
fi
# SwiftPM does not rebuild when only flags like these change: a build made with other flags is
# removed first. Nor does it link again when only the order file changed (scripts/function-order.py
# rewrote it): then the two programs are removed, and linked anew.
stamp=".build/static/flags"
if [ -d .build/static ] && [ "$(cat "$stamp" 2>/dev/null)" != "${build[*]}" ]; then rm -rf .build/static; fi
order_stamp=".build/static/function-order.sum"
order_sum="$(sha256sum scripts/function-order.txt | cut -d' ' -f1)"
if [ -d .build/static ] && [ "$(cat "$order_stamp" 2>/dev/null)" != "$order_sum" ]; then
  rm -f .build/static/*/release/gpsloc .build/static/*/release/gpslocd
fi
"${build[@]}" --product gpsloc >&2
"${build[@]}" --product gpslocd >&2
printf '%s' "${build[*]}" > "$stamp"
printf '%s' "$order_sum" > "$order_stamp"
"${build[@]}" --show-bin-path
