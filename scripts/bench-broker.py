#!/usr/bin/env python3
"""gpslocd's cost, beside a direct gpsd client (docs/broker.md, BENCHMARKS.md).

   scripts/bench-broker.py [--clients N] [--seconds S]

Starts gpsfake with the 10 Hz fixture, gpslocd (.build/debug or release) on a temporary socket,
grants one app, and opens one direct gpsd client (?WATCH json) plus N gpslocd clients. For every
fix, the hop's added latency is the arrival at gpslocd client 0 minus the arrival at the direct
client (same fix time, same process, CLOCK_MONOTONIC). gpslocd's CPU is read from /proc over the
run. Prints p50/p90 of the added latency, fixes received per client, and gpslocd's CPU in cores.
"""
import json, os, selectors, socket, subprocess, sys, tempfile, time

from broker_lines import ready_lines

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
clients = int(sys.argv[sys.argv.index("--clients") + 1]) if "--clients" in sys.argv else 100
seconds = float(sys.argv[sys.argv.index("--seconds") + 1]) if "--seconds" in sys.argv else 20
binary = next(p for p in (f"{root}/.build/release/gpslocd", f"{root}/.build/debug/gpslocd") if os.path.exists(p))
folder = tempfile.mkdtemp(prefix="bench-broker-")
port = 40000 + os.getpid() % 20000
fake = subprocess.Popen(["gpsfake", "-q", "-1", "-P", str(port), "-c", "0.01",
                         f"{root}/fixtures/drive-10hz-multi.nmea"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
sock = f"{folder}/socket"
daemon = subprocess.Popen([binary, "--gpsd", f"127.0.0.1:{port}", "--socket", sock, "--state", f"{folder}/state"],
                          stderr=subprocess.DEVNULL)
while not os.path.exists(sock):
    time.sleep(0.05)

def broker(app):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall((json.dumps({"class": "HELLO", "version": 2, "app": app}) + "\n").encode())
    return s

admin = broker("bench")
admin.sendall(b'{"class":"GRANT","id":1,"app":"bench","status":"authorizedAlways","accuracy":"full"}\n')
time.sleep(0.2)
chooser = selectors.DefaultSelector()
for i in range(clients):
    s = broker("bench")
    s.sendall(b'{"class":"WATCH"}\n')
    chooser.register(s, selectors.EVENT_READ, ["broker", i, b""])
while True:
    try:
        direct = socket.create_connection(("127.0.0.1", port))
        break
    except OSError:
        time.sleep(0.1)
direct.sendall(b'?WATCH={"enable":true,"json":true};\n')
chooser.register(direct, selectors.EVENT_READ, ["direct", 0, b""])

arrivals = {"direct": {}, "broker": {}}
counts = [0] * clients
def ticks():
    with open(f"/proc/{daemon.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])
start, cpu0 = time.monotonic(), ticks()
while time.monotonic() - start < seconds:
    for data, line, now in ready_lines(chooser, 1):
        if data[0] == "direct":
            if b'"class":"TPV"' in line:
                report = json.loads(line)
                if "lat" in report and "time" in report:
                    arrivals["direct"].setdefault(report["time"][:23], now)
        elif line.startswith(b'{"class":"FIX"'):
            counts[data[1]] += 1
            if data[1] == 0:
                t = json.loads(line).get("time")
                if t is not None:
                    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03d" % round((t % 1) * 1000)
                    arrivals["broker"].setdefault(stamp[:23], now)
elapsed, cpu = time.monotonic() - start, (ticks() - cpu0) / os.sysconf("SC_CLK_TCK")
delays = sorted((arrivals["broker"][k] - arrivals["direct"][k]) * 1000 for k in arrivals["broker"] if k in arrivals["direct"])
daemon.terminate(); fake.terminate()
if not delays:
    sys.exit("no fix reached both clients")
print(f"gpslocd hop, {clients} clients, {elapsed:.0f} s: added latency p50 {delays[len(delays)//2]:.2f} ms, "
      f"p90 {delays[len(delays)*9//10]:.2f} ms over {len(delays)} fixes; fixes per client min {min(counts)} "
      f"max {max(counts)}; gpslocd CPU {cpu / elapsed:.3f} cores")
