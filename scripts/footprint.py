#!/usr/bin/env python3
"""How much code a live client runs each epoch, counted as distinct cache lines.

Live, a client sleeps ~100 ms between a 10 Hz receiver's epochs; meanwhile gpsd, the kernel and
everything else on the machine run, so each epoch starts with the client's code out of the CPU's
caches. Its cost then follows how many distinct 64-byte lines of code it runs more than how many
instructions (a tight parser loop is cheap after its first pass; a hundred small functions run
once each are not). This tool counts them, deterministically, where CPU time moves ±10 % a run.

    footprint.py run [--seconds 10] [--rate 10] [--top 30] [--by-type] -- CMD ...
        Runs CMD (a client of a live gpsd: `gpspipe -w localhost:PORT`,
        `gpsloc-bench read --port PORT`, `gpsloc watch --json --port PORT`) under callgrind,
        counts for --seconds after a 6 s start, and prints lines, pages and instructions an
        epoch by object, and the functions with the most lines. Use a release build stripped
        of debug info (`strip --strip-debug -o /tmp/x .build/release/gpsloc`): valgrind 3.19
        cannot read Swift 6.3's DWARF. --by-type adds the program's own lines grouped by Swift
        type (demangled by `swift demangle`), the compiler's copies and thunks apart.
    footprint.py read PROFILE EPOCHS [--top 30] [--by-type]
        The same for a profile written with `--dump-instr=yes`.
    footprint.py calibrate PORT [--seconds 30] [--rounds 2]
        What a cold line costs here: a minimal C client of gpsd at PORT runs 0, 1,000 or 2,000
        one-line functions at each wake-up, side by side with gpspipe; prints CPU a minute.
        Needs a C compiler (clang from the Swift toolchain, or cc).

    footprint.py split [--seconds 30] PID ...
        Where running processes' CPU goes: perf samples them (cpu-clock, 10 kHz) side by side and
        prints milliseconds a minute in the kernel and in each object. Needs perf.

Results and method: BENCHMARKS.md, "Cold code".
"""
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from cpu_time import precise_cpu, runtimes

POSITION = re.compile(r"^(ob|fn|cob|cfn)=\((\d+)\)(?: (.*))?$")


def parse(path):
    """Distinct code lines and pages, and instructions, by object and by function."""
    names = {"ob": {}, "fn": {}}
    obj = fn = None
    lines = collections.defaultdict(set)
    pages = collections.defaultdict(set)
    instructions = collections.Counter()
    by_function = collections.defaultdict(set)
    address = 0
    skip = False  # the cost line after `calls=` is the call's inclusive cost
    for raw in open(path, errors="replace"):
        raw = raw.rstrip("\n")
        if not raw or raw.startswith("#"):
            continue
        match = POSITION.match(raw)
        if match:
            kind, number, name = match.groups()
            table = names["ob" if kind in ("ob", "cob") else "fn"]
            if name:
                table[number] = name
            if kind == "ob":
                obj = table[number]
            elif kind == "fn":
                fn = table[number]
            continue
        if raw.startswith("calls="):
            skip = True
            continue
        head = raw.split()[0] if raw.split() else ""
        if head.startswith("0x"):
            address = int(head, 16)
        elif head.startswith("+"):
            address += int(head[1:], 0)
        elif head.startswith("-"):
            address -= int(head[1:], 0)
        elif head != "*":
            continue
        if skip:
            skip = False
            continue
        fields = raw.split()
        if len(fields) >= 3 and int(fields[2]) > 0:
            lines[obj].add(address >> 6)
            pages[obj].add(address >> 12)
            instructions[obj] += int(fields[2])
            by_function[(obj, fn)].add(address >> 6)
    return lines, pages, instructions, by_function


SWIFT_TYPE = re.compile(r"\b([A-Z][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)")
PLUMBING = ("outlined ", "value witness", "initializeWithCopy", "assignWithCopy", "destroy value", "reabstraction thunk",
            "partial apply forwarder for reabstraction", "protocol witness", "merged ")


def area(demangled):
    """`Module.Type` of a demangled Swift name, marked when the function is the compiler's
    plumbing (copies, destroys, thunks, witnesses) rather than code written in the type."""
    name = demangled
    if name.startswith("generic specialization") and " of " in name:
        name = name.split(" of ", 1)[1]
    match = SWIFT_TYPE.search(name)
    key = f"{match.group(1)}.{match.group(2)}" if match else "(other)"
    if any(marker in demangled for marker in PLUMBING):
        key += " (copies, thunks, witnesses)"
    return key


def by_area(by_function, program):
    """The program's own lines grouped by Swift type (`--by-type`)."""
    names = [fn for (obj, fn) in by_function if obj == program and fn]
    swift = shutil.which("swift")
    demangled = names
    if swift:
        out = subprocess.run([swift, "demangle", "--compact"], input="\n".join(names), capture_output=True,
                             text=True).stdout.splitlines()
        if len(out) == len(names):
            demangled = out
    areas = collections.Counter()
    for fn, readable in zip(names, demangled):
        areas[area(readable)] += len(by_function[(program, fn)])
    print(f"\n{'lines':>6}  {os.path.basename(program)}'s own code by Swift type")
    for key, count in areas.most_common(40):
        print(f"{count:6d}  {key}")


def report(path, epochs, top, types=False):
    lines, pages, instructions, by_function = parse(path)
    print(f"{'lines':>6} {'pages':>5} {'instr./epoch':>12}  object")
    total = [0, 0, 0]
    for obj in sorted(lines, key=lambda o: -len(lines[o])):
        print(f"{len(lines[obj]):6d} {len(pages[obj]):5d} {instructions[obj] / epochs:12.0f}  {os.path.basename(obj)}")
        total[0] += len(lines[obj])
        total[1] += len(pages[obj])
        total[2] += instructions[obj]
    print(f"{total[0]:6d} {total[1]:5d} {total[2] / epochs:12.0f}  all ({epochs:g} epochs)")
    if types and lines:
        program = max((o for o in lines if ".so" not in os.path.basename(o)), key=lambda o: len(lines[o]), default=None)
        if program:
            by_area(by_function, program)
    if top:
        print(f"\n{'lines':>6}  function (object)")
        for (obj, fn), found in sorted(by_function.items(), key=lambda kv: -len(kv[1]))[:top]:
            print(f"{len(found):6d}  {(fn or '?')[:110]} ({os.path.basename(obj or '?')})")


def run(command, seconds, rate, top, types=False):
    if not shutil.which("valgrind"):
        sys.exit("footprint.py: valgrind is not installed (apt-get install valgrind)")
    work = tempfile.mkdtemp(prefix="footprint.")
    out = os.path.join(work, "callgrind.%p")
    child = subprocess.Popen(
        ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--dump-instr=yes",
         f"--callgrind-out-file={out}"] + command,
        stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "valgrind.log"), "w"))
    time.sleep(6)
    if child.poll() is not None:
        sys.exit(f"footprint.py: {command[0]} ended at start; see {work}/valgrind.log")
    subprocess.run(["callgrind_control", "-i", "on", str(child.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    time.sleep(seconds)
    subprocess.run(["callgrind_control", "-i", "off", str(child.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    subprocess.run(["callgrind_control", "-d", str(child.pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    child.send_signal(signal.SIGTERM)
    child.wait()
    dumps = sorted(f for f in os.listdir(work) if re.match(r"callgrind\.\d+\.\d+$", f))
    if not dumps:
        sys.exit(f"footprint.py: no profile was dumped; see {work}/valgrind.log")
    report(os.path.join(work, dumps[-1]), seconds * rate, top, types)


CLIENT = r"""
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
typedef void (*step)(uint64_t);
extern step steps[];
int main(int argc, char **argv) {
    int count = atoi(argv[2]), s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(atoi(argv[1]));
    a.sin_addr.s_addr = htonl(0x7f000001);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0) return 1;
    const char *watch = "?WATCH={\"enable\":true,\"json\":true}\n";
    if (write(s, watch, strlen(watch)) < 0) return 1;
    static char buffer[65536];
    for (uint64_t k = 0;; k++) {
        if (recv(s, buffer, sizeof buffer, 0) <= 0) return 0;
        for (int i = 0; i < count; i++) steps[i](k);
    }
}
"""


def calibrate(port, seconds, rounds):
    compiler = shutil.which("clang") or shutil.which("cc")
    if not compiler:
        sys.exit("footprint.py: no C compiler (clang or cc) on PATH")
    work = tempfile.mkdtemp(prefix="footprint-calibrate.")
    count = 2000
    with open(os.path.join(work, "steps.c"), "w") as f:
        f.write("#include <stdint.h>\nvolatile uint64_t sink;\n")
        for i in range(count):
            # One function a cache line: a few dependent operations, aligned to 64 bytes.
            f.write(f"__attribute__((noinline, aligned(64))) void s{i}(uint64_t x) "
                    f"{{ x = x * {2 * i + 3}u + {i}u; x ^= x >> 7; sink += x; }}\n")
        f.write("typedef void (*step)(uint64_t);\nstep steps[] = {"
                + ",".join(f"s{i}" for i in range(count)) + "};\n")
    with open(os.path.join(work, "client.c"), "w") as f:
        f.write(CLIENT)
    binary = os.path.join(work, "client")
    subprocess.run([compiler, "-O2", "-o", binary, os.path.join(work, "client.c"), os.path.join(work, "steps.c")],
                   check=True)

    def cpu(pid):
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        return total

    programs = [("gpspipe -w", ["gpspipe", "-w", f"localhost:{port}"])]
    programs += [(f"client, {n} lines", [binary, str(port), str(n)]) for n in (0, 1000, 2000)]
    results = collections.defaultdict(list)
    for _ in range(rounds):
        children = [(name, subprocess.Popen(cmd, stdout=subprocess.DEVNULL)) for name, cmd in programs]
        time.sleep(3)
        start = {name: runtimes(child.pid) for name, child in children}
        time.sleep(seconds)
        for name, child in children:
            # None: a thread ended meanwhile, and its time with it (a figure that would be low).
            used = precise_cpu(start[name], runtimes(child.pid))
            results[name].append(None if used is None else used * 1000 * 60 / seconds)
            child.terminate()
            child.wait()
    for name, _ in programs:
        figures = "  ".join("    —" if v is None else f"{v:5.1f}" for v in results[name])
        print(f"{name:22s} {figures}  ms of CPU a minute")


def split(pids, seconds):
    if not shutil.which("perf"):
        sys.exit("footprint.py: perf is not installed (apt-get install linux-perf)")
    for pid in pids:
        if not os.path.isdir(f"/proc/{pid}"):
            sys.exit(f"footprint.py: no process {pid} is running")
    work = tempfile.mkdtemp(prefix="footprint-split.")
    samplers = []
    for pid in pids:
        data = os.path.join(work, f"{pid}.data")
        samplers.append((pid, data, subprocess.Popen(
            ["perf", "record", "-e", "cpu-clock", "-F", "10000", "-p", str(pid), "-o", data, "--", "sleep",
             str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
    for pid, data, sampler in samplers:
        sampler.wait()
        try:
            with open(f"/proc/{pid}/comm") as f:
                name = f.read().strip()
        except FileNotFoundError:
            name = "ended before the sampling did"
        script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,dso"], capture_output=True,
                                text=True).stdout
        objects = collections.Counter(os.path.basename(line.split("(", 1)[1].rstrip(")")) for line in script.splitlines()
                                      if "(" in line)
        # One sample is 0.1 ms of CPU.
        total = sum(objects.values()) * 0.1 * 60 / seconds
        parts = ", ".join(f"{obj} {n * 0.1 * 60 / seconds:.1f}" for obj, n in objects.most_common(5))
        print(f"{name} ({pid}): {total:.1f} ms a minute — {parts}")


def main():
    args = sys.argv[1:]
    if not args or args[0] not in ("run", "read", "calibrate", "split"):
        sys.exit(__doc__)

    def option(name, default, kind=float):
        if name in args:
            i = args.index(name)
            value = kind(args[i + 1])
            del args[i:i + 2]
            return value
        return default

    mode = args.pop(0)
    top = option("--top", 30, int)
    types = "--by-type" in args[: args.index("--")] if "--" in args else "--by-type" in args
    if types:
        args.remove("--by-type")
    if mode == "run":
        seconds = option("--seconds", 10.0)
        rate = option("--rate", 10.0)
        if "--" not in args:
            sys.exit("footprint.py run: give the command after --")
        run(args[args.index("--") + 1:], seconds, rate, top, types)
    elif mode == "read":
        report(args[0], float(args[1]), top, types)
    elif mode == "split":
        seconds = option("--seconds", 30.0)
        split([int(pid) for pid in args], seconds)
    else:
        seconds = option("--seconds", 30.0)
        rounds = option("--rounds", 2, int)
        calibrate(int(args[0]), seconds, rounds)


if __name__ == "__main__":
    main()
