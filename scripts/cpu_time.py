"""CPU time of a running process, exact: the per-thread run time the scheduler keeps
(/proc/PID/task/TID/schedstat, nanoseconds), where utime + stime count 10 ms ticks — a live client
at 10 Hz spends a few ticks a minute. Shared by bench-live.py and footprint.py."""
import os


def runtimes(pid):
    """Nanoseconds on a CPU so far, per live thread."""
    times = {}
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                times[task] = int(f.read().split()[0])
        except OSError:
            pass
    return times


def precise_cpu(before, after):
    """CPU seconds between two `runtimes` samples; None when a thread ended in between (its time
    would be lost: then only the tick count is right)."""
    if any(task not in after for task in before):
        return None
    return sum(after[task] - before.get(task, 0) for task in after) / 1e9
