#!/usr/bin/env python3
"""Writes scripts/function-order.txt: the functions the installed programs run, for the linker to
place side by side (scripts/build-static.sh passes it as lld's --symbol-ordering-file).

Why: the kernel maps a program's code 64 KiB at a time around each page it first runs
(fault-around), and every mapped page counts as resident. Left in link order, the ~0.7 MiB a
live `gpsloc watch` runs is spread over 6.5 MiB of a 9.9 MiB text, all of it then resident;
placed together it maps a few windows. (Measured in BENCHMARKS.md, session 34.) What the
Swift runtime and Foundation keep in one section per object cannot be moved: only functions
in sections of their own are (our modules are compiled with -function-sections).

How: the static programs of scripts/build-static.sh run under valgrind's callgrind, live, on one
simulated 10 Hz receiver behind a real gpsd (`gpsloc-bench serve`): `gpsloc watch --json` for
100 lines, and gpslocd serving a `gpsloc watch` with a full grant then a reduced one; and, sampled
by perf (callgrind cannot run it), gpslocd's GeoClue face serving where-am-i on a private bus. Every
function callgrind saw run that the program defines goes in the list, sorted. A stale list costs
memory, never correctness: names the linker does not find are skipped.

Usage: scripts/function-order.py        (needs valgrind, gpsd, and about three minutes; perf,
                                          dbus-daemon and geoclue-2-demo for the GeoClue face)
"""
import os, re, shutil, signal, subprocess, sys, tempfile, time
import private_bus

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.chdir(root)
for tool in ("valgrind", "gpsd", "objcopy", "nm"):
    if not shutil.which(tool):
        sys.exit(f"function-order: {tool} is not installed (apt-get install valgrind gpsd binutils)")

static = subprocess.run(["scripts/build-static.sh"], check=True, capture_output=True, text=True).stdout.strip()
subprocess.run(["swift", "build", "-c", "release", "--product", "gpsloc-bench"], check=True, stdout=subprocess.DEVNULL)
subprocess.run(["swift", "build", "-c", "release", "--product", "nmea-sim"], check=True, stdout=subprocess.DEVNULL)
tools = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], check=True, capture_output=True,
                       text=True).stdout.strip()
work = tempfile.mkdtemp(prefix="gpslocation-order-")
programs = {}
for name in ("gpsloc", "gpslocd"):
    # Symbols kept, DWARF dropped (valgrind's reader gives up on the toolchain's DWARF for gpslocd).
    programs[name] = os.path.join(work, name)
    subprocess.run(["objcopy", "--strip-debug", os.path.join(static, name), programs[name]], check=True)

recording = os.path.join(work, "live.nmea")
subprocess.run([os.path.join(tools, "nmea-sim"), "--rate", "10", "--duration", "240", "--talkers", "multi",
                "--scenario", "clean", "--output", recording], check=True)
environment = dict(os.environ, XDG_CONFIG_HOME=work, XDG_CACHE_HOME=os.path.join(work, "cache"),
                   XDG_STATE_HOME=os.path.join(work, "state"))
server = subprocess.Popen([os.path.join(tools, "gpsloc-bench"), "serve", recording, "--rate", "10"],
                          stdout=subprocess.PIPE, text=True)
port = server.stdout.readline().split()[1]
server.stdout.readline()


def callgrind(name, out):
    return ["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}", programs[name]]


def lines(command, env, count):
    """Runs a watch until it has printed `count` lines."""
    watch = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    seen = 0
    for _ in watch.stdout:
        seen += 1
        if seen >= count:
            break
    watch.send_signal(signal.SIGINT)
    watch.wait()
    if seen < count:
        sys.exit(f"function-order: `{' '.join(command[-5:])}` printed {seen} lines, not {count}")


def geoclue_face():
    """gpslocd --geoclue on a private system bus serving GeoClue's own client (where-am-i), sampled
    by perf: callgrind cannot run it (valgrind 3.19 has no pidfd_open, so gpslocd cannot pin the
    client and refuses it). Sampling sees what runs for every location, not the start-up
    functions that run once: those are left where the link put them."""
    missing = [tool for tool in (private_bus.WHERE_AM_I, private_bus.DAEMON) if not os.path.exists(tool)]
    missing += [] if shutil.which("perf") else ["perf"]
    if missing:
        print(f"function-order: no {', '.join(missing)}: the GeoClue face is not in the list", file=sys.stderr)
        return
    bus, address = private_bus.start(work)
    daemon = None
    try:
        on_bus = dict(environment, DBUS_SYSTEM_BUS_ADDRESS=address)
        socket = os.path.join(work, "geoclue.socket")
        daemon = subprocess.Popen([programs["gpslocd"], "--gpsd", f"127.0.0.1:{port}", "--socket", socket, "--state",
                                   os.path.join(work, "geoclue-state"), "--policy", os.path.join(work, "policy.json"),
                                   "--geoclue"], env=on_bus, stderr=subprocess.DEVNULL)
        for _ in range(600):
            if os.path.exists(socket):
                break
            time.sleep(0.05)
        brokered = dict(on_bus, GPSLOCATION_BROKER=socket)
        subprocess.run([programs["gpsloc"], "auth", "grant", "geoclue-where-am-i", "--always"], env=brokered,
                       check=True, stdout=subprocess.DEVNULL)
        data = os.path.join(work, "geoclue.data")
        sampler = subprocess.Popen(["perf", "record", "-e", "cpu-clock", "-F", "50000", "-p", str(daemon.pid),
                                    "-o", data, "--", "sleep", "60"], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        # where-am-i prints a block of about ten lines a location: a minute of them at 10 Hz.
        lines(["/usr/bin/stdbuf", "-oL", private_bus.WHERE_AM_I, "-t", "120"], brokered, 5000)
        sampler.wait()
        script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym", "--no-demangle"],
                                capture_output=True, text=True).stdout
        with open(os.path.join(work, "geoclue.sampled"), "w") as f:
            f.write("\n".join(sorted({line.split()[1] for line in script.splitlines() if len(line.split()) > 1})))
    finally:
        if daemon:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait()
        bus.kill()
        bus.wait()


try:
    subprocess.run([programs["gpsloc"], "auth", "grant", "gpsloc", "--always"], env=environment, check=True,
                   stdout=subprocess.DEVNULL)
    lines(callgrind("gpsloc", os.path.join(work, "watch.out")) + ["watch", "--json", "--port", port, "--max-age",
                                                                  "1e9"], environment, 100)
    socket = os.path.join(work, "gpslocd.socket")
    daemon = subprocess.Popen(callgrind("gpslocd", os.path.join(work, "daemon.out")) + [
        "--gpsd", f"127.0.0.1:{port}", "--socket", socket, "--state", os.path.join(work, "daemon-state")],
        stderr=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(socket):
            break
        time.sleep(0.05)
    brokered = dict(environment, GPSLOCATION_BROKER=socket)
    watch = [programs["gpsloc"], "watch", "--json", "--max-age", "1e9"]
    subprocess.run([programs["gpsloc"], "auth", "grant", "gpsloc", "--always"], env=brokered, check=True,
                   stdout=subprocess.DEVNULL)
    lines(watch, brokered, 100)
    subprocess.run([programs["gpsloc"], "auth", "grant", "gpsloc", "--always", "--reduced"], env=brokered,
                   check=True, stdout=subprocess.DEVNULL)
    lines(watch, brokered, 3)
    daemon.send_signal(signal.SIGTERM)
    daemon.wait()
    geoclue_face()
finally:
    server.terminate()
    server.wait()

ran = set()
for out in ("watch.out", "daemon.out"):
    for line in open(os.path.join(work, out), errors="replace"):
        match = re.match(r"c?fn=\(\d+\)\s+(.*)", line)
        if match:
            ran.add(match.group(1).strip())
sampled = os.path.join(work, "geoclue.sampled")
if os.path.exists(sampled):
    ran.update(open(sampled).read().split())
defined = set()
for name in programs.values():
    for line in subprocess.run(["nm", "--defined-only", name], capture_output=True, text=True).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwW":
            defined.add(parts[2])
order = sorted(ran & defined)
with open("scripts/function-order.txt", "w") as f:
    f.write("\n".join(order) + "\n")
shutil.rmtree(work, ignore_errors=True)
print(f"function-order: {len(order)} functions in scripts/function-order.txt")
