#!/usr/bin/env bash
# The installer as a user runs it, into an empty folder: a gpsloc that runs with no Swift on
# PATH and no Swift runtime library loaded, a man page `man -l` renders, a bash completion
# that registers, the udev rule, an idempotent second run, and a clean uninstall.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="$(mktemp -d)/gpsloc-prefix"
trap 'rm -rf "$(dirname "$prefix")"' EXIT
fail() { echo "check-install: FAIL: $*" >&2; exit 1; }

scripts/install.sh --prefix "$prefix" > "$prefix.log" 2>&1 || { cat "$prefix.log" >&2; fail "install.sh failed"; }
for file in bin/gpsloc share/man/man1/gpsloc.1 share/bash-completion/completions/gpsloc \
  share/zsh/site-functions/_gpsloc share/fish/vendor_completions.d/gpsloc.fish \
  lib/udev/rules.d/61-gpslocation-gnss.rules; do
  [ -f "$prefix/$file" ] || fail "$file was not installed"
done
[ "$(stat -c %a "$prefix/bin/gpsloc")" = 755 ] || fail "gpsloc is not mode 755"

# No Swift runtime or Foundation library is loaded: it runs where no Swift is installed.
if ldd "$prefix/bin/gpsloc" | grep -E 'libswift|libFoundation|lib_FoundationICU|libdispatch|libBlocksRuntime'; then
  fail "the installed gpsloc loads Swift runtime libraries"
fi
out="$(env -i PATH=/usr/bin:/bin HOME="$(dirname "$prefix")" "$prefix/bin/gpsloc" version)" || fail "gpsloc version failed"
case "$out" in "gpsloc "*) ;; *) fail "unexpected version output: $out" ;; esac
lines="$(env -i PATH=/usr/bin:/bin HOME="$(dirname "$prefix")" "$prefix/bin/gpsloc" replay fixtures/loop-1hz-gp.nmea --fast \
  --region east=51.453880,-2.591704,60 | grep -c '"type":"region"')"
[ "$lines" = 7 ] || fail "the installed gpsloc replayed $lines region lines, not 7"

# The man page renders without warnings and documents every command.
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
echo "check-install: ok — static gpsloc without Swift libraries, man page, completion, udev rule, idempotent," \
  "manifest uninstall (folders too; changed files and planted links kept)"
