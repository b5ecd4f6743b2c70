#!/usr/bin/env bash
# The installer as a user runs it, into an empty folder: a gpsloc and a gpslocd that run with no
# Swift on PATH and no Swift runtime library loaded, man pages `man -l` renders, a bash completion
# that registers, the udev rule, gpslocd's units (pointing at the installed gpslocd, verified by
# systemd-analyze), an idempotent second run, and a clean uninstall.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="$(mktemp -d)/gpsloc-prefix"
trap 'rm -rf "$(dirname "$prefix")"' EXIT
fail() { echo "check-install: FAIL: $*" >&2; exit 1; }

scripts/install.sh --prefix "$prefix" > "$prefix.log" 2>&1 || { cat "$prefix.log" >&2; fail "install.sh failed"; }
for file in bin/gpsloc share/man/man1/gpsloc.1 share/bash-completion/completions/gpsloc \
  share/zsh/site-functions/_gpsloc share/fish/vendor_completions.d/gpsloc.fish \
  lib/udev/rules.d/61-gpslocation-gnss.rules bin/gpslocd share/man/man8/gpslocd.8 \
  lib/systemd/system/gpslocd.service lib/systemd/system/gpslocd.socket lib/sysusers.d/gpslocd.conf; do
  [ -f "$prefix/$file" ] || fail "$file was not installed"
done
[ "$(stat -c %a "$prefix/bin/gpsloc")" = 755 ] || fail "gpsloc is not mode 755"

# No Swift runtime or Foundation library is loaded: it runs where no Swift is installed.
for program in gpsloc gpslocd; do
  if ldd "$prefix/bin/$program" | grep -E 'libswift|libFoundation|lib_FoundationICU|libdispatch|libBlocksRuntime'; then
    fail "the installed $program loads Swift runtime libraries"
  fi
  # Linked small (scripts/build-static.sh): at most 16 MB, relative relocations packed.
  size="$(stat -c %s "$prefix/bin/$program")"
  [ "$size" -le 16000000 ] || fail "the installed $program is $size bytes, over 16 MB"
  # (Packed where the C library reads them: glibc 2.36 and later.)
  glibc="$(getconf GNU_LIBC_VERSION | sed 's/^glibc //')"
  if printf '2.36\n%s\n' "$glibc" | sort -V -C; then
    readelf -d "$prefix/bin/$program" | grep -q '(RELR)' || fail "the installed $program has no packed relocations (DT_RELR)"
  fi
done
# gpslocd runs, and refuses a wrong invocation with its usage (exit 2).
set +e
env -i PATH=/usr/bin:/bin "$prefix/bin/gpslocd" --no-such-option > /dev/null 2> "$prefix.daemon"
status=$?
set -e
[ "$status" = 2 ] && grep -q "usage: gpslocd" "$prefix.daemon" || fail "gpslocd did not run (exit $status)"
# Its unit runs the installed gpslocd, and systemd accepts both units as written.
grep -q "^ExecStart=$prefix/bin/gpslocd --gpsd" "$prefix/lib/systemd/system/gpslocd.service" \
  || fail "gpslocd.service does not run $prefix/bin/gpslocd"
if command -v systemd-analyze > /dev/null; then
  systemd-analyze verify --man=no "$prefix/lib/systemd/system/gpslocd.socket" \
    "$prefix/lib/systemd/system/gpslocd.service" > "$prefix.verify" 2>&1 \
    || { cat "$prefix.verify" >&2; fail "systemd-analyze verify rejects gpslocd's units"; }
  score="$(systemd-analyze security --offline=true --no-pager "$prefix/lib/systemd/system/gpslocd.service" 2>/dev/null \
    | sed -n 's/.*Overall exposure level for gpslocd.service: \([0-9.]*\).*/\1/p')"
  awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 2.0) }' || fail "gpslocd.service's exposure is '$score', not ≤ 2.0"
fi
out="$(env -i PATH=/usr/bin:/bin HOME="$(dirname "$prefix")" "$prefix/bin/gpsloc" version)" || fail "gpsloc version failed"
case "$out" in "gpsloc "*) ;; *) fail "unexpected version output: $out" ;; esac
lines="$(env -i PATH=/usr/bin:/bin HOME="$(dirname "$prefix")" "$prefix/bin/gpsloc" replay fixtures/loop-1hz-gp.nmea --fast \
  --region east=51.453880,-2.591704,60 | grep -c '"type":"region"')"
[ "$lines" = 7 ] || fail "the installed gpsloc replayed $lines region lines, not 7"

# The man page renders without warnings and documents every command.
MANWIDTH=80 man --warnings=w -l "$prefix/share/man/man8/gpslocd.8" > /dev/null 2> "$prefix.warn8" \
  || fail "man -l gpslocd.8 failed"
[ ! -s "$prefix.warn8" ] || { cat "$prefix.warn8" >&2; fail "man reports warnings for gpslocd.8"; }
rendered="$(MANWIDTH=80 man --warnings=w -l "$prefix/share/man/man1/gpsloc.1" 2>"$prefix.warn")" || fail "man -l failed"
# Within an 80-column terminal: no rendered line wider (characters, not bytes).
wide="$(printf '%s\n' "$rendered" | python3 -c 'import sys; print(sum(1 for l in sys.stdin if len(l.rstrip("\n")) > 80))')"
[ "$wide" = 0 ] || fail "$wide lines of the man page are wider than 80 columns"
[ ! -s "$prefix.warn" ] || { cat "$prefix.warn" >&2; fail "man reports warnings"; }
for command in watch replay auth sky last monitor doctor version completion; do
  grep -q "gpsloc $command" <<<"$rendered" || fail "the man page does not document $command"
done
for section in "EXIT STATUS" FILES ENVIRONMENT EXAMPLES "NDJSON OUTPUT"; do
  grep -q "^$section" <<<"$rendered" || fail "the man page has no $section section"
done

# The zsh and fish completions are valid scripts of their shells.
zsh -n "$prefix/share/zsh/site-functions/_gpsloc" || fail "the zsh completion is not valid zsh"
fish -n "$prefix/share/fish/vendor_completions.d/gpsloc.fish" || fail "the fish completion is not valid fish"
# The completion registers, and completes commands and options.
bash -c "source '$prefix/share/bash-completion/completions/gpsloc' && complete -p gpsloc" | grep -q _gpsloc \
  || fail "the completion does not register"
got="$(bash -c "source '$prefix/share/bash-completion/completions/gpsloc'
  COMP_WORDS=(gpsloc watch --reg); COMP_CWORD=2; _gpsloc; echo \${COMPREPLY[*]}")"
[ "$got" = "--region" ] || fail "completing 'gpsloc watch --reg' gave '$got'"

# --confine-gpsd adds gpsd's and gpslocd's namespace drop-ins, and they go with the rest.
scripts/install.sh --confine-gpsd --prefix "$prefix" > "$prefix.log" 2>&1 || fail "install.sh --confine-gpsd failed"
for file in gpsd.service.d/gpslocd.conf gpsd.socket.d/gpslocd.conf gpslocd.service.d/gpsd-namespace.conf; do
  [ -f "$prefix/lib/systemd/system/$file" ] || fail "--confine-gpsd did not install $file"
done
grep -q "^PrivateNetwork=yes" "$prefix/lib/systemd/system/gpsd.service.d/gpslocd.conf" || fail "gpsd is not confined"
scripts/install.sh --uninstall --prefix "$prefix" > "$prefix.log" 2>&1 || fail "uninstall after --confine-gpsd failed"
[ ! -e "$prefix" ] || fail "uninstall left $(find "$prefix" | head -5)"

# Idempotent, then a clean uninstall: every file and every folder it created.
scripts/install.sh --prefix "$prefix" > "$prefix.log" 2>&1 || fail "a second install.sh failed"
grep -q "^file [0-9a-f]\{64\} $prefix/bin/gpsloc$" "$prefix/share/gpslocation/install-manifest" \
  || fail "the manifest does not list gpsloc with its checksum"
scripts/install.sh --uninstall --prefix "$prefix" > "$prefix.log" 2>&1 || { cat "$prefix.log" >&2; fail "uninstall failed"; }
[ ! -e "$prefix" ] || fail "uninstall left $(find "$prefix" | head -5)"

# Uninstall removes only what still matches the manifest: a file changed since is kept, a link
# planted in a file's place is kept and what it points to is never touched.
scripts/install.sh --prefix "$prefix" > "$prefix.log" 2>&1 || fail "a third install.sh failed"
echo "# edited by the admin" >> "$prefix/share/bash-completion/completions/gpsloc"
outside="$(dirname "$prefix")/outside-file"
echo keep > "$outside"
rm -f "$prefix/share/man/man1/gpsloc.1" && ln -s "$outside" "$prefix/share/man/man1/gpsloc.1"
scripts/install.sh --uninstall --prefix "$prefix" > "$prefix.log" 2>&1 || fail "the second uninstall failed"
[ -f "$prefix/share/bash-completion/completions/gpsloc" ] || fail "uninstall removed a file changed since install"
[ -L "$prefix/share/man/man1/gpsloc.1" ] && [ "$(cat "$outside")" = keep ] || fail "uninstall followed a planted link"
[ ! -e "$prefix/bin/gpsloc" ] || fail "uninstall kept the unchanged gpsloc"
grep -q "kept .*changed since it was installed" "$prefix.log" || fail "uninstall did not say what it kept"
echo "check-install: ok — static gpsloc and gpslocd without Swift libraries, man pages, completion, udev rule," \
  "gpslocd's units (verified, exposure $score), idempotent, manifest uninstall (folders too; changed files and" \
  "planted links kept)"
