#!/usr/bin/env python3
"""The soak benchmark (BENCHMARKS.md): a simulated 10 Hz receiver read by a real gpsd, with
three clients side by side on that gpsd — GPSLocation's CLLocationManager (a delegate that
sleeps in every callback), gpspipe -w, and a client on gpsd's own Python module — measured
from outside through /proc:

- RSS (VmRSS) every few seconds: it must stay flat;
- CPU (utime + stime) over the active phase, as % of one core;
- context switches of all threads (voluntary + involuntary), per second while data flows,
  and in total during an idle phase in which the receiver sends nothing and gpsd stays up
  (after the clients' one-off "no fix"/"no data" reports): a polling loop shows up here.

Usage: scripts/soak.py BIN_DIR [--minutes M] [--rate HZ] [--sleep S] [--idle S]
(scripts/soak.sh builds the release binaries and runs this with the defaults).
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

parser = argparse.ArgumentParser()
parser.add_argument("bin")
parser.add_argument("--minutes", type=float, default=10)
parser.add_argument("--rate", type=float, default=10)
parser.add_argument("--sleep", type=float, default=0.5, help="seconds the delegate sleeps per callback")
parser.add_argument("--idle", type=float, default=60, help="seconds of silence after the active phase")
parser.add_argument("--interval", type=float, default=5, help="seconds between samples")
options = parser.parse_args()

TICKS = os.sysconf("SC_CLK_TCK")
PYTHON_CLIENT = """
import gps, sys
session = gps.gps(host="127.0.0.1", port=sys.argv[1], mode=gps.WATCH_ENABLE | gps.WATCH_JSON)
tpv = 0
for report in session:
    if report.get("class") == "TPV":
        tpv += 1
"""


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def switches(pid):
    """Voluntary + involuntary context switches so far, per live thread."""
    counts = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                counts[task] = sum(int(line.split()[1]) for line in f
                                   if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")))
        except FileNotFoundError:
            pass
    return counts


def switched(before, after):
    """Switches between two `switches` samples: each thread's growth, new threads whole. A thread
    that ended in between (libdispatch retires idle workers) takes its last switches with it, so
    this is a lower bound then; the second value says how many ended."""
    return sum(count - before.get(task, 0) for task, count in after.items()), sum(task not in after for task in before)


def main():
    work = tempfile.mkdtemp(prefix="gpslocation-soak-")
    recording = os.path.join(work, "soak.nmea")
    seconds = int(options.minutes * 60 + options.idle + 60)
    subprocess.run([os.path.join(options.bin, "nmea-sim"), "--rate", str(int(options.rate)), "--duration", str(seconds),
                    "--talkers", "multi", "--scenario", "clean", "--output", recording], check=True)
    server = subprocess.Popen([os.path.join(options.bin, "gpsloc-bench"), "serve", recording, "--rate", str(options.rate)],
                              stdout=subprocess.PIPE, text=True)
    port = server.stdout.readline().split()[1]
    device = server.stdout.readline().split()[1]
    print(f"gpsd on 127.0.0.1:{port} reading {device}, a simulated {options.rate:g} Hz multi-GNSS receiver")

    clients = {
        "GPSLocation CLLocationManager (delegate sleeps %gs)" % options.sleep: subprocess.Popen(
            [os.path.join(options.bin, "gpsloc-bench"), "consume", "--port", port, "--sleep", str(options.sleep)],
            stdout=subprocess.PIPE, text=True),
        "gpspipe -w > /dev/null": subprocess.Popen(["gpspipe", "-w", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL),
        "gpsd Python client (gps.gps, counts TPVs)": subprocess.Popen(
            ["/usr/bin/python3", "-c", PYTHON_CLIENT, port], stdout=subprocess.DEVNULL),
        "baseline: a Swift process that used Dispatch once, then waits": subprocess.Popen(
            [os.path.join(options.bin, "gpsloc-bench"), "baseline"], stdout=subprocess.DEVNULL),
    }
    time.sleep(5)  # start-up is not what is measured
    start = {name: (cpu_seconds(p.pid), switches(p.pid)) for name, p in clients.items()}
    rss = {name: [rss_kb(p.pid)] for name, p in clients.items()}
    began = time.monotonic()
    active = options.minutes * 60
    while time.monotonic() - began < active:
        time.sleep(min(options.interval, max(0.0, active - (time.monotonic() - began))))
        for name, p in clients.items():
            rss[name].append(rss_kb(p.pid))
    elapsed = time.monotonic() - began
    end = {name: (cpu_seconds(p.pid), switches(p.pid)) for name, p in clients.items()}

    # Idle: the receiver goes silent; gpsd stays up. Skip the first 10 s (one-off reports).
    server.send_signal(signal.SIGUSR1)
    time.sleep(10)
    idle_start = {name: switches(p.pid) for name, p in clients.items()}
    idle_cpu_start = {name: cpu_seconds(p.pid) for name, p in clients.items()}
    time.sleep(max(0.0, options.idle - 10))
    idle_end = {name: switches(p.pid) for name, p in clients.items()}
    idle_cpu_end = {name: cpu_seconds(p.pid) for name, p in clients.items()}

    outputs = {}
    for name, p in clients.items():
        p.send_signal(signal.SIGTERM)
        out, _ = p.communicate(timeout=30)
        outputs[name] = (out or "").strip()
    server.send_signal(signal.SIGTERM)
    served, _ = server.communicate(timeout=30)

    print(f"active phase: {elapsed:.0f} s at {options.rate:g} Hz; idle phase: {options.idle - 10:.0f} s measured")
    print()
    print("| client | CPU, % of one core | RSS first → last (max), MB | wakeups/s while data flows | wakeups in the idle phase |")
    print("|---|---|---|---|---|")
    for name in clients:
        cpu = 100 * (end[name][0] - start[name][0]) / elapsed
        flowing, ended_flowing = switched(start[name][1], end[name][1])
        wakeups = flowing / elapsed
        idle, ended_idle = switched(idle_start[name], idle_end[name])
        idle_cpu = idle_cpu_end[name] - idle_cpu_start[name]
        series = rss[name]
        print(f"| {name} | {cpu:.2f} | {series[0] / 1024:.1f} → {series[-1] / 1024:.1f} ({max(series) / 1024:.1f}) "
              f"| {wakeups:.1f}{'' if not ended_flowing else f' ({ended_flowing} threads ended)'} "
              f"| {idle}{'' if not ended_idle else f' ({ended_idle} threads ended)'} ({idle_cpu:.2f} s CPU) |")
    print()
    for name, out in outputs.items():
        if out:
            print(f"{name}: {out}")
    print(f"receiver: {served.strip().splitlines()[-1] if served.strip() else 'no summary'}")
    ours = rss[next(iter(clients))]
    print("GPSLocation RSS samples (MB): " + " ".join(f"{kb / 1024:.1f}" for kb in ours[:: max(1, len(ours) // 12)]))
    os.system(f"rm -rf {work}")


if __name__ == "__main__":
    main()
