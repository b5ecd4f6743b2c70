#!/usr/bin/env bash
# Fetches gpsd 3.22's own regression corpus — every log of test/daemon/ with the .chk gpsd
# 3.22 produces for it — from Debian's source archive: bookworm's gpsd 3.22-4.1+deb12u1, the
# upstream tarball with Debian's patches applied (one of them edits logs and .chk files: the
# week-rollover fix), both checked by SHA-256. The NMEA logs (text whose lines are sentences)
# are kept in a cache folder, not in the repository.
#
#   scripts/fetch-gpsd-corpus.sh [FOLDER]   (default .build/gpsd-corpus; GPSLOCATION_GPSD_CORPUS)
#
# The conformance test (NMEADebianCorpusTests) and scripts/bench.sh read that folder; without
# it they say how to fetch it. Running it again with the folder in place does nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
folder="${1:-${GPSLOCATION_GPSD_CORPUS:-.build/gpsd-corpus}}"
pool=http://deb.debian.org/debian/pool/main/g/gpsd
files=(
  "gpsd_3.22.orig.tar.xz 68d2a04e237a02ce42158ceda462a24afe11eeaa2b13482e94ac7ef66693f3a0"
  "gpsd_3.22-4.1%2Bdeb12u1.debian.tar.xz ae4e649eed92f65a349dc341e07a04e605b50420cd93a114a041025dd8c4a896"
)
if [ -f "$folder/.complete" ]; then
  echo "fetch-gpsd-corpus: $folder is in place ($(ls "$folder"/*.log | wc -l) NMEA logs)"
  exit 0
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for entry in "${files[@]}"; do
  name="${entry%% *}"; sum="${entry#* }"
  echo "fetch-gpsd-corpus: downloading $pool/$name" >&2
  curl -fsS --retry 3 -o "$work/$name" "$pool/$name" \
    || { echo "fetch-gpsd-corpus: cannot download $pool/$name (is deb.debian.org reachable?)" >&2; exit 1; }
  echo "$sum  $work/$name" | sha256sum -c --quiet - \
    || { echo "fetch-gpsd-corpus: $pool/$name is not the file this script knows (SHA-256 differs)" >&2; exit 1; }
done
tar xJf "$work/gpsd_3.22.orig.tar.xz" -C "$work"
tar xJf "$work/gpsd_3.22-4.1%2Bdeb12u1.debian.tar.xz" -C "$work/gpsd-3.22"
while IFS= read -r patch; do
  case "$patch" in ''|'#'*) continue ;; esac
  patch -d "$work/gpsd-3.22" -p1 --quiet --forward < "$work/gpsd-3.22/debian/patches/$patch" > /dev/null \
    || { echo "fetch-gpsd-corpus: Debian's patch $patch does not apply" >&2; exit 1; }
done < "$work/gpsd-3.22/debian/patches/series"
mkdir -p "$folder"
# NMEA: no NUL byte, and at least 80 % of the non-comment lines are sentences ($ or !). One
# Python for all 154 logs; it copies the NMEA ones with their .chk and lists the others.
python3 - "$work/gpsd-3.22/test/daemon" "$folder" <<'PY'
import os, shutil, sys
source, target = sys.argv[1], sys.argv[2]
kept, skipped = 0, []
for name in sorted(os.listdir(source)):
    log = os.path.join(source, name)
    if not name.endswith(".log") or not os.path.exists(log + ".chk"):
        continue
    data = open(log, "rb").read()
    lines = [l for l in data.split(b"\n") if l.strip() and not l.startswith(b"#")]
    if b"\0" not in data and lines and sum(l.lstrip()[:1] in (b"$", b"!") for l in lines) >= 0.8 * len(lines):
        shutil.copy(log, target)
        shutil.copy(log + ".chk", target)
        kept += 1
    else:
        skipped.append(name)
open(os.path.join(target, "binary-logs.txt"), "w").write("".join(n + "\n" for n in skipped))
print(f"fetch-gpsd-corpus: {kept} NMEA logs with gpsd 3.22's .chk in {target} "
      f"({len(skipped)} binary-protocol logs left out: {target}/binary-logs.txt)")
PY
touch "$folder/.complete"
