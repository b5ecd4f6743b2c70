#!/usr/bin/env bash
# The Debian packages as Debian builds and a user installs them (#48): `dpkg-buildpackage -us -uc
# -b` from debian/, lintian with no error and no warning (overrides carry their reasons), and — as
# root — an install with no network (a network namespace of its own), `gpsloc version` and
# `gpsloc doctor` from /usr/bin, gpslocd's user, units (installed, not enabled), a decision that
# survives an upgrade, and a purge that leaves nothing the packages put on the machine.
#
#   scripts/check-deb.sh               build, lint, and (as root) install, upgrade, purge
#   scripts/check-deb.sh --keep DIR    also leave the .deb files in DIR
#
# The packages are built into the folder above the checkout (dpkg-buildpackage's way); this
# script moves them from there into a temporary folder. A gpsloc or gpslocd package already on
# the machine is never removed outside CI: the install part is skipped with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
keep=""
if [ "${1:-}" = --keep ]; then keep="${2:?--keep needs a folder}"; fi
fail() { echo "check-deb: FAIL: $*" >&2; exit 1; }
say() { echo "check-deb: $*"; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
version="$(dpkg-parsechangelog -S Version)"
arch="$(dpkg --print-architecture)"
swift_version="$(sed -n 's/.*static let version = "\(.*\)".*/\1/p' Sources/GPSDClient/GPSLocationInfo.swift)"
[ "$version" = "$swift_version" ] \
  || fail "debian/changelog says $version, GPSLocationInfo.version says $swift_version: add a changelog entry"

# Build. Its outputs go to the parent folder; each is moved out right after.
outputs=("gpsloc_${version}_$arch.deb" "gpslocd_${version}_$arch.deb" "gpsloc-dbgsym_${version}_$arch.deb"
  "gpslocd-dbgsym_${version}_$arch.deb" "gpslocation_${version}_$arch.buildinfo" "gpslocation_${version}_$arch.changes")
start=$SECONDS
dpkg-buildpackage -us -uc -b > "$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; fail "dpkg-buildpackage failed"; }
for file in "${outputs[@]}"; do
  if [ -f "../$file" ]; then mv "../$file" "$work/"; fi
done
# debian/rules clean leaves the tree as it was: nothing the build made is left in debian/.
debian/rules clean > "$work/clean.log" 2>&1 || { cat "$work/clean.log" >&2; fail "debian/rules clean failed"; }
leftovers="$(git status --porcelain --ignored --untracked-files=all -- debian | grep '^!!' || true)"
[ -z "$leftovers" ] || fail "debian/rules clean left: $leftovers"
for package in gpsloc gpslocd; do
  [ -f "$work/${package}_${version}_$arch.deb" ] || fail "no ${package}_${version}_$arch.deb was built"
done
deb="$work/gpsloc_${version}_$arch.deb"
ddeb="$work/gpslocd_${version}_$arch.deb"
say "built gpsloc $(du -k "$deb" | cut -f1) KiB and gpslocd $(du -k "$ddeb" | cut -f1) KiB in $((SECONDS - start)) s"

# What the packages hold, and what they need.
contents="$(dpkg-deb -c "$deb"; dpkg-deb -c "$ddeb")"
for path in ./usr/bin/gpsloc ./usr/share/man/man1/gpsloc.1.gz ./usr/share/bash-completion/completions/gpsloc \
  ./usr/share/zsh/vendor-completions/_gpsloc ./usr/share/fish/vendor_completions.d/gpsloc.fish \
  ./usr/lib/udev/rules.d/61-gpslocation-gnss.rules ./usr/bin/gpslocd ./usr/share/man/man8/gpslocd.8.gz \
  ./lib/systemd/system/gpslocd.service ./lib/systemd/system/gpslocd.socket \
  ./usr/lib/sysusers.d/gpslocd.conf ./usr/share/doc/gpsloc/copyright ./usr/share/doc/gpslocd/copyright \
  ./usr/share/dbus-1/system.d/gpslocd-geoclue.conf ./usr/share/doc/gpslocd/examples/geoclue.conf; do
  grep -q " $path\$" <<<"$contents" || fail "$path is in neither package"
done
depends="$(dpkg-deb -f "$deb" Depends)"
grep -q 'libgps28' <<<"$depends" || fail "gpsloc's Depends ($depends) do not name libgps (dh_shlibdeps)"
grep -q '^gpsd' <<<"$(dpkg-deb -f "$deb" Recommends)" || fail "gpsloc does not recommend gpsd"
say "gpsloc Depends: $depends; Recommends: $(dpkg-deb -f "$deb" Recommends)"

# lintian: no error, no warning (each override in debian/*.lintian-overrides says why).
lintian --fail-on error,warning --display-level '>=warning' --info "$work/gpslocation_${version}_$arch.changes" \
  > "$work/lintian.log" 2>&1 || { cat "$work/lintian.log" >&2; fail "lintian reports errors or warnings"; }
say "lintian: no error, no warning ($(grep -c . "$work/lintian.log" || true) lines of output)"
if [ -n "$keep" ]; then mkdir -p "$keep" && cp "$work"/*.deb "$keep"/; fi

if [ "$(id -u)" -ne 0 ]; then
  say "install, upgrade and purge skipped: they need root (CI runs them as root)"
  exit 0
fi
for package in gpsloc gpslocd; do
  if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "installed"; then
    if [ "${CI:-}" = true ]; then
      say "$package is installed (an earlier run's?): purging it first"
      dpkg --purge "$package" > /dev/null
    else
      say "install, upgrade and purge skipped: $package is installed on this machine and would be removed"
      exit 0
    fi
  fi
done

# What the machine holds before: after the purge, the same (but dpkg's own bookkeeping).
snapshot() {
  find /etc /usr /var/lib /var/cache -xdev \( -path /var/lib/dpkg -o -path /var/cache/apt -o -path /var/lib/apt \
    -o -path /var/cache/man -o -path /var/cache/debconf -o -path /var/lib/systemd/deb-systemd-helper-masked \) \
    -prune -o -print 2>/dev/null | sort
}
snapshot > "$work/before"

# Installed with no network at all: a network namespace of its own has only a loopback, down.
unshare --net dpkg -i "$deb" "$ddeb" > "$work/install.log" 2>&1 || { cat "$work/install.log" >&2; fail "dpkg -i failed"; }
out="$(env -i PATH=/usr/bin:/bin HOME="$work" /usr/bin/gpsloc version)" || fail "gpsloc version failed"
case "$out" in "gpsloc $version"*) ;; *) fail "gpsloc version said: $out" ;; esac
ldd /usr/bin/gpsloc /usr/bin/gpslocd | grep -E 'libswift|libFoundation|libdispatch' && fail "a packaged binary loads Swift's libraries"
# doctor on a machine with no gpsd at the address it is given: a diagnosis that says what to do.
set +e
doctor="$(env -i PATH=/usr/bin:/bin HOME="$work" /usr/bin/gpsloc doctor 127.0.0.1:9 2>&1)"
status=$?
set -e
grep -qi "gpsd" <<<"$doctor" || fail "gpsloc doctor said nothing about gpsd (exit $status): $doctor"
[ "$status" -lt 64 ] || fail "gpsloc doctor exited $status: $doctor"
say "gpsloc doctor (exit $status): $(grep -i -m 1 gpsd <<<"$doctor")"
MANWIDTH=80 man --warnings=w gpsloc > /dev/null 2> "$work/man.warn" && [ ! -s "$work/man.warn" ] || fail "man gpsloc: $(cat "$work/man.warn")"
MANWIDTH=80 man --warnings=w 8 gpslocd > /dev/null 2> "$work/man8.warn" && [ ! -s "$work/man8.warn" ] \
  || fail "man 8 gpslocd: $(cat "$work/man8.warn")"
getent passwd gpslocd > /dev/null || fail "the gpslocd user was not created (sysusers)"
if command -v systemctl > /dev/null; then
  enabled="$(systemctl is-enabled gpslocd.socket 2>&1 || true)"
  [ "$enabled" = disabled ] || fail "gpslocd.socket is '$enabled' after the install, not disabled"
fi
grep -q "^ExecStart=/usr/bin/gpslocd " /lib/systemd/system/gpslocd.service || fail "the unit does not run /usr/bin/gpslocd"
say "installed: $(dpkg-query -W -f='${Package} ${Version}, ' gpsloc gpslocd)user gpslocd, units not enabled"

# A decision made through the installed gpslocd, as its own user, in its state folder …
install -d -o gpslocd -g gpslocd -m 0700 /var/lib/gpslocd
# (Its socket folder where the gpslocd user can reach it: $work is root's, 0700.)
run="$(mktemp -d /tmp/check-deb-run.XXXXXX)"
chmod 0755 "$run" && chown gpslocd:gpslocd "$run"
# With the unit's one capability (AmbientCapabilities=CAP_SYS_PTRACE): without it gpslocd cannot
# read another uid's /proc/PID/root and refuses programs it cannot place (docs/broker.md).
setpriv --reuid=gpslocd --regid=gpslocd --clear-groups --no-new-privs \
  --inh-caps=-all,+sys_ptrace --ambient-caps=-all,+sys_ptrace --bounding-set=-all,+sys_ptrace \
  /usr/bin/gpslocd --gpsd 127.0.0.1:9 --socket "$run/socket" --state /var/lib/gpslocd 2> "$work/gpslocd.log" &
daemon=$!
for _ in $(seq 200); do [ -S "$run/socket" ] && break; kill -0 "$daemon" 2>/dev/null || break; sleep 0.05; done
[ -S "$run/socket" ] || { kill "$daemon" 2>/dev/null; cat "$work/gpslocd.log" >&2; rm -rf "$run"; fail "the packaged gpslocd did not listen"; }
GPSLOCATION_BROKER="$run/socket" /usr/bin/gpsloc auth grant packaged-app --always > "$work/grant.log" 2>&1 \
  || { kill "$daemon"; cat "$work/gpslocd.log" "$work/grant.log" >&2; rm -rf "$run"; fail "gpsloc auth grant through the packaged gpslocd failed"; }
kill "$daemon"; wait "$daemon" || true

# The installed D-Bus policy, under Debian's own: a private bus with system.conf's default policy
# and the installed file, the packaged gpslocd --geoclue as its user owning GeoClue's name, and
# where-am-i as another uid answered by it (refused: that uid's app has no decision).
if [ -x /usr/libexec/geoclue-2.0/demos/where-am-i ] && command -v dbus-daemon > /dev/null; then
  {
    echo '<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">'
    echo "<busconfig><type>system</type><listen>unix:path=$run/bus</listen><auth>EXTERNAL</auth>"
    sed -n '/<policy context="default">/,/<\/policy>/p' /usr/share/dbus-1/system.conf
    echo "<include>/usr/share/dbus-1/system.d/gpslocd-geoclue.conf</include></busconfig>"
  } > "$run/bus.conf"
  dbus-daemon --config-file="$run/bus.conf" --nofork --nopidfile 2> "$work/dbus.log" &
  bus=$!
  for _ in $(seq 200); do [ -S "$run/bus" ] && break; kill -0 "$bus" 2>/dev/null || break; sleep 0.05; done
  [ -S "$run/bus" ] || { cat "$work/dbus.log" >&2; fail "dbus-daemon did not start with the installed policy (is it well-formed?)"; }
  DBUS_SYSTEM_BUS_ADDRESS="unix:path=$run/bus" setpriv --reuid=gpslocd --regid=gpslocd --clear-groups --no-new-privs \
    --inh-caps=-all,+sys_ptrace --ambient-caps=-all,+sys_ptrace --bounding-set=-all,+sys_ptrace \
    /usr/bin/gpslocd --gpsd 127.0.0.1:9 --socket "$run/socket2" --state /var/lib/gpslocd --geoclue 2> "$work/gpslocd-geoclue.log" &
  daemon=$!
  for _ in $(seq 200); do grep -q "org.freedesktop.GeoClue2" "$work/gpslocd-geoclue.log" && break; kill -0 "$daemon" 2>/dev/null || break; sleep 0.05; done
  answer="$(DBUS_SYSTEM_BUS_ADDRESS="unix:path=$run/bus" setpriv --reuid=65534 --regid=65534 --clear-groups \
    timeout 30 /usr/libexec/geoclue-2.0/demos/where-am-i -t 10 2>&1 || true)"
  kill "$daemon" "$bus" 2>/dev/null || true
  wait "$daemon" "$bus" 2>/dev/null || true
  grep -q "listening on .* and as org.freedesktop.GeoClue2" "$work/gpslocd-geoclue.log" \
    || { cat "$work/gpslocd-geoclue.log" >&2; fail "the packaged gpslocd --geoclue could not own GeoClue's name under the installed policy"; }
  grep -q "gpsloc auth grant geoclue-where-am-i" <<<"$answer" \
    || fail "where-am-i as uid 65534 was not answered by the packaged gpslocd: $answer"
  say "D-Bus: the installed policy lets gpslocd own org.freedesktop.GeoClue2 under Debian's default policy; where-am-i (uid 65534) is answered"
fi
rm -rf "$run"
decisions="$(find /var/lib/gpslocd -type f -name 'authorizations.json' | head -n 1)"
[ -n "$decisions" ] && grep -q packaged-app "$decisions" || fail "no decision was written under /var/lib/gpslocd"
sum="$(sha256sum < "$decisions")"

# … is kept by an upgrade to a newer build (the same packages, version +1, as dpkg sees it).
upgrade_version="$version+upgrade1"
for package in gpsloc gpslocd; do
  rm -rf "$work/repack"
  dpkg-deb -R "$work/${package}_${version}_$arch.deb" "$work/repack"
  sed -i "s/^Version: .*/Version: $upgrade_version/" "$work/repack/DEBIAN/control"
  dpkg-deb -b --root-owner-group "$work/repack" "$work/${package}_upgrade.deb" > /dev/null
done
unshare --net dpkg -i "$work/gpsloc_upgrade.deb" "$work/gpslocd_upgrade.deb" > "$work/upgrade.log" 2>&1 \
  || { cat "$work/upgrade.log" >&2; fail "the upgrade failed"; }
[ "$(dpkg-query -W -f='${Version}' gpslocd)" = "$upgrade_version" ] || fail "gpslocd was not upgraded"
[ -f "$decisions" ] && [ "$(sha256sum < "$decisions")" = "$sum" ] || fail "the upgrade lost or changed $decisions"
say "upgraded to $upgrade_version: the decision in $decisions is kept"

# Purge: every file the packages installed is gone, and gpslocd's state with it.
# (The files: dpkg -L also lists every folder on the way, /lib among them, a link on merged-/usr.)
installed_files="$(dpkg -L gpsloc gpslocd | while IFS= read -r path; do [ -d "$path" ] || echo "$path"; done)"
dpkg --purge gpsloc gpslocd > "$work/purge.log" 2>&1 || { cat "$work/purge.log" >&2; fail "dpkg --purge failed"; }
while IFS= read -r path; do
  if [ -e "$path" ] || [ -L "$path" ]; then fail "$path is still there after the purge"; fi
done <<<"$installed_files"
[ ! -e /var/lib/gpslocd ] || fail "/var/lib/gpslocd is still there after the purge"
snapshot > "$work/after"
# The gpslocd user's entries are Debian's way (system users are kept); nothing else may differ.
left="$(comm -13 "$work/before" "$work/after" | grep -v -E '^/etc/(passwd|group|shadow|gshadow)-?$' || true)"
[ -z "$left" ] || fail "the purge left: $left"
say "purged: $(wc -l <<<"$installed_files") paths removed, nothing left (the gpslocd system user is kept, as Debian does)"
