#!/usr/bin/env python3
"""The live client benchmark (BENCHMARKS.md): one simulated 10 Hz receiver on a pseudo-terminal
(`gpsloc-bench serve`), one real gpsd reading it, and two clients of that gpsd side by side —
`gpsloc watch --json` and `gpspipe -w` — both writing into pipes this script reads.

- CPU: utime + stime of every thread of each client (/proc/PID/stat) over the measured minute;
- latency: for every fix both print, when gpsloc's line arrived here minus when gpspipe's line
  for the same fix (matched by its time) arrived — what gpsloc adds over gpsd's own client —
  as percentiles.

- memory: resident set (VmRSS at the end of the minute, VmHWM its peak) of each client;
- with --installed DIR (the static, stripped programs scripts/install.sh installs): those
  programs' `gpsloc watch --json`, and gpslocd serving a second one, measured the same way;
- every program measured starts with its file out of the page cache (`evict`);
- with --geoclue as well: a second installed gpslocd with its GeoClue face on a private system
  bus (dbus-daemon), serving GeoClue's own client (geoclue-2-demo's where-am-i, granted Always),
  measured the same way.

- with --rounds N as well: then N more rounds of the installed `gpsloc watch --json` and gpspipe
  alone on the same gpsd, each pair started afresh (--round-seconds each, 20 by default), each
  round's ratio and their median. One run's ratio moves ±15 % with where each process happens to
  land beside the others at each wake-up (BENCHMARKS.md, session 38); fresh rounds sample that.

Usage: scripts/bench-live.py BIN_DIR [--seconds S] [--rate HZ] [--installed DIR [--geoclue] [--rounds N]]
"""
import argparse, json, os, subprocess, sys, tempfile, threading, time
import private_bus
from cpu_time import precise_cpu, runtimes

parser = argparse.ArgumentParser()
parser.add_argument("bin")
parser.add_argument("--seconds", type=float, default=60)
parser.add_argument("--rate", type=float, default=10)
parser.add_argument("--installed")
parser.add_argument("--geoclue", action="store_true")
parser.add_argument("--rounds", type=int, default=0)
parser.add_argument("--round-seconds", type=float, default=20)
options = parser.parse_args()
TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def switches(pid):
    """Voluntary + involuntary context switches of all the process's threads so far."""
    total = 0
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def memory(pid):
    """(VmRSS, VmHWM) in MB."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS", "VmHWM")):
                values[line.split(":")[0]] = int(line.split()[1]) / 1024
    return values.get("VmRSS", 0), values.get("VmHWM", 0)


def reader(stream, key, arrivals, counts, name):
    for line in stream:
        now = time.monotonic()
        counts[name] = counts.get(name, 0) + 1
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        stamp = obj.get(key)
        if stamp and obj.get("class", obj.get("type")) in ("TPV", "location"):
            arrivals.setdefault(stamp[:23], now)


def geoclue_clients(work, environment, port):
    """gpslocd --geoclue on a private system bus, and where-am-i as its GeoClue client."""
    if not (os.path.exists(private_bus.WHERE_AM_I) and os.path.exists(private_bus.DAEMON)):
        sys.exit("--geoclue needs dbus-daemon and geoclue-2-demo (scripts/setup.sh installs them)")
    bus, address = private_bus.start(work)
    on_bus = dict(environment, DBUS_SYSTEM_BUS_ADDRESS=address)
    socket_path = os.path.join(work, "geoclue.socket")
    daemon = subprocess.Popen(
        [os.path.join(options.installed, "gpslocd"), "--gpsd", f"127.0.0.1:{port}", "--socket", socket_path,
         "--state", os.path.join(work, "geoclue-state"), "--policy", os.path.join(work, "policy.json"), "--geoclue"],
        env=on_bus, stderr=subprocess.DEVNULL)
    for _ in range(100):
        if os.path.exists(socket_path):
            break
        time.sleep(0.05)
    brokered = dict(on_bus, GPSLOCATION_BROKER=socket_path)
    subprocess.run([os.path.join(options.installed, "gpsloc"), "auth", "grant", "geoclue-where-am-i", "--always"],
                   env=brokered, check=True, stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    client = subprocess.Popen(["/usr/bin/stdbuf", "-oL", private_bus.WHERE_AM_I, "-t", str(int(options.seconds + 60))],
                              env=brokered, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    return {"gpslocd --geoclue (serving where-am-i)": (daemon, "none"),
            "where-am-i (GeoClue's client)": (client, "none"),
            "dbus-daemon (the private system bus)": (bus, "none")}


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def evict(paths):
    """Drops each program's pages from the page cache, so every client starts as after a reboot.
    A file written just now (scripts/bench.sh strips the installed programs into a new file) sits
    in the page cache in large folios on kernels from 6.16 (ext4's large folios), and a fault
    maps a whole folio: the same program measured 0.7 MB more resident than after
    `echo 3 > /proc/sys/vm/drop_caches` (BENCHMARKS.md, session 36) — and than on Debian
    bookworm's 6.1 kernel. gpsd's clients, read from disk long ago, get the same treatment."""
    os.sync()
    for path in paths:
        try:
            descriptor = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(descriptor)


def main():
    work = tempfile.mkdtemp(prefix="gpslocation-live-")
    programs = [os.path.join(options.bin, "gpsloc"), os.path.join(options.bin, "gpsloc-bench"), "/usr/bin/gpspipe",
                "/usr/bin/gpxlogger"]
    if options.installed:
        programs += [os.path.join(options.installed, name) for name in ("gpsloc", "gpslocd")]
    evict(programs)
    recording = os.path.join(work, "live.nmea")
    # The recording outlasts the measured minute and every round after it.
    seconds = int(options.seconds + 30 + options.rounds * (options.round_seconds + 10))
    subprocess.run([os.path.join(options.bin, "nmea-sim"), "--rate", str(int(options.rate)), "--duration", str(seconds),
                    "--talkers", "multi", "--scenario", "clean", "--output", recording], check=True)
    environment = dict(os.environ, XDG_CONFIG_HOME=work, XDG_CACHE_HOME=os.path.join(work, "cache"),
                       XDG_STATE_HOME=os.path.join(work, "state"))
    gpsloc = os.path.join(options.bin, "gpsloc")
    subprocess.run([gpsloc, "auth", "grant", "gpsloc", "--always"], env=environment, check=True,
                   stdout=subprocess.DEVNULL)
    server = subprocess.Popen([os.path.join(options.bin, "gpsloc-bench"), "serve", recording, "--rate", str(options.rate)],
                              stdout=subprocess.PIPE, text=True)
    port = server.stdout.readline().split()[1]
    server.stdout.readline()
    clients = {
        "gpsloc watch --json": (subprocess.Popen(
            [gpsloc, "watch", "--json", "--port", port, "--max-age", "1e9"], env=environment,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True), "timestamp"),
        "gpspipe -w": (subprocess.Popen(["gpspipe", "-w", f"127.0.0.1:{port}"], stdout=subprocess.PIPE, text=True), "time"),
        # gpsd's own client that decodes what it reads with libgps (gps_read), as gpsloc does, and
        # writes a GPX track: the fair comparison for a library client; gpspipe passes lines through.
        "gpxlogger": (subprocess.Popen(["gpxlogger", "-e", "sockets", f"127.0.0.1:{port}"], stdout=subprocess.PIPE,
                                       stderr=subprocess.DEVNULL, text=True), "none"),
        # The floor: GPSDConnection alone (reading and decoding what watch --json decodes; no engine, no output).
        "GPSDConnection alone": (subprocess.Popen([os.path.join(options.bin, "gpsloc-bench"), "read", "--port", port],
                                              stdout=subprocess.PIPE, text=True), "none"),
    }
    if options.installed:
        installed = os.path.join(options.installed, "gpsloc")
        clients["installed gpsloc watch --json"] = (subprocess.Popen(
            [installed, "watch", "--json", "--port", port, "--max-age", "1e9"], env=environment,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True), "timestamp")
        socket_path = os.path.join(work, "gpslocd.socket")
        daemon = subprocess.Popen(
            [os.path.join(options.installed, "gpslocd"), "--gpsd", f"127.0.0.1:{port}", "--socket", socket_path,
             "--state", os.path.join(work, "gpslocd-state")], stderr=subprocess.DEVNULL)
        for _ in range(100):
            if os.path.exists(socket_path):
                break
            time.sleep(0.05)
        brokered = dict(environment, GPSLOCATION_BROKER=socket_path)
        subprocess.run([installed, "auth", "grant", "gpsloc", "--always"], env=brokered, check=True,
                       stdout=subprocess.DEVNULL)
        clients["gpslocd (serving one gpsloc watch)"] = (daemon, "none")
        clients["gpsloc watch --json through gpslocd"] = (subprocess.Popen(
            [installed, "watch", "--json", "--max-age", "1e9"], env=brokered,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True), "timestamp")
    if options.installed and options.geoclue:
        clients.update(geoclue_clients(work, environment, port))
    arrivals = {name: {} for name in clients}
    counts = {}
    for name, (process, key) in clients.items():
        if process.stdout is None:
            continue
        threading.Thread(target=reader, args=(process.stdout, key, arrivals[name], counts, name), daemon=True).start()
    time.sleep(5)  # start-up is not what is measured
    start = {name: cpu_seconds(p.pid) for name, (p, _) in clients.items()}
    woke = {name: switches(p.pid) for name, (p, _) in clients.items()}
    ran = {name: runtimes(p.pid) for name, (p, _) in clients.items()}
    began = time.monotonic()
    time.sleep(options.seconds)
    elapsed = time.monotonic() - began
    end = {name: cpu_seconds(p.pid) for name, (p, _) in clients.items()}
    woke = {name: switches(p.pid) - woke[name] for name, (p, _) in clients.items()}
    exact = {name: precise_cpu(ran[name], runtimes(p.pid)) for name, (p, _) in clients.items()}
    resident = {name: memory(p.pid) for name, (p, _) in clients.items()}
    for process, _ in clients.values():
        process.terminate()
    rounds = paired_rounds(port, environment) if options.installed and options.rounds > 0 else []
    server.send_signal(2)
    server.wait(timeout=10)

    print(f"== live: a {options.rate:g} Hz multi-GNSS receiver through a real gpsd, {elapsed:.0f} s measured")
    ticks = {name: end[name] - start[name] for name in clients}
    # The exact figure when every thread lived through the minute; else the tick count.
    cpu = {name: exact[name] if exact[name] is not None else ticks[name] for name in clients}
    for name in clients:
        print(f"{name}: CPU {cpu[name]:.4f} s ({cpu[name] / elapsed * 60:.4f} s a minute, "
              f"{'exact' if exact[name] is not None else 'in 10 ms ticks'}; ticks say {ticks[name]:.2f} s, "
              f"{cpu[name] / elapsed * 100:.3f} % of a core), {woke[name] / elapsed:.1f} context switches a second, "
              f"{counts.get(name, 0)} lines; resident {resident[name][0]:.1f} MB (peak {resident[name][1]:.1f} MB)")
    ratio = cpu["gpsloc watch --json"] / max(cpu["gpspipe -w"], 1e-9)
    print(f"gpsloc / gpspipe CPU: {ratio:.2f}×")
    print(f"gpsloc / gpxlogger CPU: {cpu['gpsloc watch --json'] / max(cpu['gpxlogger'], 1e-9):.2f}×")
    if "installed gpsloc watch --json" in cpu:
        installed = cpu["installed gpsloc watch --json"]
        print(f"installed gpsloc / gpspipe CPU: {installed / max(cpu['gpspipe -w'], 1e-9):.2f}×, "
              f"/ gpxlogger {installed / max(cpu['gpxlogger'], 1e-9):.2f}×")
    ours, theirs = arrivals["gpsloc watch --json"], arrivals["gpspipe -w"]
    # The measured minute apart from the warm-up: while the epoch stage learns how many reports
    # a receiver sends an epoch, each epoch of the first second goes when the next begins (one
    # cycle late, by design); in a percentile of the whole run those read as a p99 of 100 ms.
    added = [(ours[k] - theirs[k]) * 1000 for k in ours if k in theirs and theirs[k] >= began]
    warm = [(ours[k] - theirs[k]) * 1000 for k in ours if k in theirs and theirs[k] < began]
    if added:
        print(f"latency gpsloc adds over gpspipe, the {len(added)} fixes of the measured time: "
              f"p50 {percentile(added, 50):.2f} ms, p95 {percentile(added, 95):.2f} ms, "
              f"p99 {percentile(added, 99):.2f} ms, max {max(added):.2f} ms")
    if warm:
        print(f"  (the {len(warm)} fixes of the warm-up before it: {sum(1 for a in warm if a > 50)} a cycle late "
              f"while the epoch stage learnt the receiver's cycle; max {max(warm):.2f} ms)")
    if rounds:
        for index, (ours_cpu, theirs_cpu) in enumerate(rounds, 1):
            print(f"round {index} of {len(rounds)}, the pair alone: installed gpsloc watch --json "
                  f"{ours_cpu * 60:.4f} s a minute, gpspipe -w {theirs_cpu * 60:.4f} s: "
                  f"{ours_cpu / max(theirs_cpu, 1e-9):.2f}×")
        ratios = sorted(ours_cpu / max(theirs_cpu, 1e-9) for ours_cpu, theirs_cpu in rounds)
        print(f"installed gpsloc / gpspipe CPU over {len(rounds)} fresh rounds: median "
              f"{percentile(ratios, 50):.2f}× (from {ratios[0]:.2f}× to {ratios[-1]:.2f}×)")


def paired_rounds(port, environment):
    """The installed gpsloc watch --json and gpspipe -w alone on the gpsd at `port`, started
    afresh each round: each one's CPU a second of the measured time, per round."""
    installed = os.path.join(options.installed, "gpsloc")
    results = []
    for _ in range(options.rounds):
        pair = [
            subprocess.Popen([installed, "watch", "--json", "--port", port, "--max-age", "1e9"], env=environment,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True),
            subprocess.Popen(["gpspipe", "-w", f"127.0.0.1:{port}"], stdout=subprocess.PIPE, text=True),
        ]
        for process in pair:
            threading.Thread(target=lambda stream: [None for _ in stream], args=(process.stdout,), daemon=True).start()
        time.sleep(3)
        before = [runtimes(process.pid) for process in pair]
        began = time.monotonic()
        time.sleep(options.round_seconds)
        elapsed = time.monotonic() - began
        after = [runtimes(process.pid) for process in pair]
        for process in pair:
            process.terminate()
            process.wait(timeout=10)
        cpu = [precise_cpu(b, a) for b, a in zip(before, after)]
        if None not in cpu:
            results.append((cpu[0] / elapsed, cpu[1] / elapsed))
    return results


main()
