#!/usr/bin/env bash
# Installs the Debian packages GPSLocation builds, runs and tests with. Idempotent: installs
# only what is missing, and runs `apt-get update` once, only when something must be installed.
set -euo pipefail

packages=(
  libgps-dev           # libgps headers + pkg-config (the CGPS module)
  libsystemd-dev       # sd-bus: gpslocd's GeoClue face (the CGeoClueBus module)
  dbus-daemon          # a private system bus for the GeoClue tests
  geoclue-2-demo       # where-am-i: GeoClue's own client, against gpslocd --geoclue
  gammastep            # a GeoClue client people run (city level), in the GeoClue tests
  firefox-esr          # navigator.geolocation through GeoClue, headless, in the GeoClue tests
  python3-gi           # GDBus from Python: the tests' GeoClue agent (GNOME Shell's part)
  libmicrohttpd-dev    # gpsloc serve's HTTP server (the CServeHTTP module)
  libjs-leaflet        # the map on gpsloc serve's page, served by gpsloc from the installed files
  chromium             # gpsloc serve's page in a real browser, headless, in the tests
  chromium-driver      # WebDriver for that browser
  python3-selenium     # drives it (scripts/serve-browser.py)
  gpsd                 # the daemon
  gpsd-clients         # gpsfake, gpspipe, gpsdecode (tests, replay --via gpsd, benchmark)
  geographiclib-tools  # GeodSolve: the geodesic reference in the tests
  jq                   # NDJSON checks in the shell tests
  libxml2-utils        # xmllint (GPX checks)
  gpsbabel             # reads GPX tracks back in the tests
  tmux                 # terminal tests
  faketime             # a wrong system clock for gpsloc (libfaketime), in the receiver-clock tests
  python3-gps          # gpsfake's own Python module (a dependency of gpsd-clients; named for clarity)
  python3-venv         # scripts/bench.sh installs pynmea2 into a private venv
  systemd              # systemd-analyze verify: the daemon example's unit file
  strace               # the syscalls the daemon example makes, checked against its unit's SystemCallFilter
  man-db               # man -l: the installed man page renders
  mosquitto            # the fleet recipe's test broker
  mosquitto-clients    # mosquitto_pub / mosquitto_sub (the recipe itself)
  libgeonames0         # CLGeocoder's offline place names (GeoNames' towns, CC BY 4.0), opened at run time
  zsh                  # checks gpsloc's zsh completion (check-install.sh)
  fish                 # checks gpsloc's fish completion (check-install.sh)
  debhelper            # dpkg-buildpackage with debian/ (check-deb.sh): the Debian packages
  lintian              # checks those packages (check-deb.sh)
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}" >&2
  # One update; bounded, because an apt http method was seen stalled for ten minutes on a fresh
  # machine with the mirror answering at once (the retry then took a second). Retries inside apt
  # cover a dropped download; a stall ends after 300 s, said, and is tried once more.
  update=(timeout 300 $sudo apt-get update -qq -o Acquire::http::Timeout=30 -o Acquire::Retries=3)
  if ! "${update[@]}"; then
    echo "setup: apt-get update failed or stalled for 300 s; trying once more" >&2
    "${update[@]}"
  fi
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v swift >/dev/null || { echo "setup: Swift 6.3 is not on PATH — install the toolchain from swift.org first" >&2; exit 1; }

# Firefox ESR drives gpsloc serve's page in the tests through Marionette, its own remote protocol
# (bookworm has no geckodriver): Mozilla's marionette_driver from PyPI, pinned, in a private
# virtual environment in .build. Under CI a failure stops the run; elsewhere it says which test
# is skipped.
venv="$(cd "$(dirname "$0")/.." && pwd)/.build/marionette"
if ! "$venv/bin/python" -c "import marionette_driver" 2>/dev/null; then
  echo "setup: installing marionette_driver 3.7.1 (PyPI) into .build/marionette" >&2
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q --disable-pip-version-check marionette_driver==3.7.1; } >/dev/null 2>&1; then
    rm -rf "$venv"
    if [ -n "${CI:-}" ]; then echo "setup: could not install marionette_driver from PyPI" >&2; exit 1; fi
    echo "setup: could not install marionette_driver from PyPI: gpsloc serve's Firefox test is skipped" >&2
  fi
fi
