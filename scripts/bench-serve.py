#!/usr/bin/python3
"""gpsloc serve beside gpspipe and gpsloc watch on one gpsd: how long after gpsd reports a fix each
one has it.

usage: python3 scripts/bench-serve.py [SECONDS] [--gpsloc PATH]   (default 60 s, .build/release/gpsloc)

One gpsfake replays fixtures/drive-1hz-gp.nmea at 1 Hz on a free port. Read side by side:
- `gpspipe -w` (what a person would otherwise pipe over ssh): the arrival of each TPV;
- `gpsloc watch --json HOST:PORT`: the engine's locations, as an app receives them;
- `gpsloc serve HOST:PORT --batch 0`: an SSE client on /api/events, the arrival of each location;
all keyed by the fix's time. Prints, for the fixes all saw, how much later watch had it than
gpspipe (the engine's rule: a fix waits for the rest of its epoch) and the page than watch (what
serve itself adds: the hub, the stream, HTTP), and the programs' resident memory and CPU.
"""
import json, os, select, signal, socket, subprocess, sys, tempfile, time

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
seconds = float(sys.argv[1]) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else 60
gpsloc = sys.argv[sys.argv.index("--gpsloc") + 1] if "--gpsloc" in sys.argv else os.path.join(root, ".build/release/gpsloc")
fixture = os.path.join(root, "fixtures/drive-1hz-gp.nmea")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


port = free_port()
home = tempfile.mkdtemp(prefix="bench-serve-")
env = dict(os.environ, XDG_CONFIG_HOME=home, XDG_CACHE_HOME=home + "/cache", XDG_STATE_HOME=home + "/state",
           GPSLOCATION_BROKER="none")
# 9 sentences an epoch in this recording: 1 Hz.
gpsfake = subprocess.Popen(["gpsfake", "-P", str(port), "-1", "-q", "-c", "0.111", fixture],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
time.sleep(2)
subprocess.run([gpsloc, "auth", "grant", "gpsloc", "--always"], env=env, check=True, stdout=subprocess.DEVNULL)
serve = subprocess.Popen([gpsloc, "serve", f"127.0.0.1:{port}", "--listen", "127.0.0.1:0", "--batch", "0"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
url = serve.stdout.readline().split()[2]
serve_port = int(url.split(":")[2].split("/")[0])
pipe = subprocess.Popen(["gpspipe", "-w", f"127.0.0.1:{port}"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
watch = subprocess.Popen([gpsloc, "watch", "--json", f"127.0.0.1:{port}"], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
events = socket.create_connection(("127.0.0.1", serve_port))
events.sendall(f"GET /api/events HTTP/1.0\r\nHost: 127.0.0.1:{serve_port}\r\n\r\n".encode())

seen_pipe, seen_watch, seen_page = {}, {}, {}
buffers = {pipe.stdout.fileno(): b"", watch.stdout.fileno(): b"", events.fileno(): b""}
start_cpu = (cpu_seconds(serve.pid), cpu_seconds(pipe.pid), cpu_seconds(watch.pid))
end = time.monotonic() + seconds
peak = [0, 0, 0]
while time.monotonic() < end:
    ready, _, _ = select.select(list(buffers), [], [], 1)
    now = time.monotonic()
    for fd in ready:
        chunk = os.read(fd, 65536)
        if not chunk:
            continue
        buffers[fd] += chunk
        *lines, buffers[fd] = buffers[fd].split(b"\n")
        for line in lines:
            if fd == pipe.stdout.fileno():
                if b'"class":"TPV"' in line:
                    tpv = json.loads(line)
                    if "time" in tpv and "lat" in tpv:
                        seen_pipe.setdefault(tpv["time"][:19], now)
            elif fd == watch.stdout.fileno():
                if line.startswith(b'{"type":"location"'):
                    seen_watch.setdefault(json.loads(line)["timestamp"][:19], now)
            elif line.startswith(b"data: ["):
                for location in json.loads(line[6:]):
                    seen_page.setdefault(location["timestamp"][:19], now)
    peak = [max(peak[0], rss_kb(serve.pid)), max(peak[1], rss_kb(pipe.pid)), max(peak[2], rss_kb(watch.pid))]
cpu = [cpu_seconds(p.pid) - start for p, start in zip((serve, pipe, watch), start_cpu)]
for process in (serve, pipe, watch):
    process.kill()
os.killpg(gpsfake.pid, signal.SIGKILL)
both = sorted(set(seen_pipe) & set(seen_page) & set(seen_watch))
if not both:
    sys.exit("no fix was seen by all three: is gpsd installed?")


def summary(later, earlier):
    lags = sorted((later[t] - earlier[t]) * 1000 for t in both)
    pick = lambda p: lags[min(len(lags) - 1, int(p * len(lags)))]
    return f"median {pick(0.5):.1f} ms, p90 {pick(0.9):.1f} ms, max {lags[-1]:.1f} ms"


print(f"fixes seen by all: {len(both)} (gpspipe {len(seen_pipe)}, watch {len(seen_watch)}, page {len(seen_page)}) over {seconds:.0f} s")
print("watch later than gpspipe (the engine's whole epoch):", summary(seen_watch, seen_pipe))
print("page later than watch (what serve adds):           ", summary(seen_page, seen_watch))
print(f"resident: gpsloc serve {peak[0] / 1024:.1f} MB, gpsloc watch {peak[2] / 1024:.1f} MB, gpspipe {peak[1] / 1024:.1f} MB")
print(f"CPU over the run: gpsloc serve {cpu[0] * 1000:.0f} ms, gpsloc watch {cpu[2] * 1000:.0f} ms, gpspipe {cpu[1] * 1000:.0f} ms")
