"""Lines from the sockets of a selector, with when each arrived (scripts/bench-broker.py and
scripts/soak-broker.py read gpsd's and gpslocd's clients this way). Each key's data is a list
whose third item holds the bytes of its unfinished line."""
import time


def ready_lines(chooser, timeout):
    """Yields (key.data, line, CLOCK_MONOTONIC arrival) for each whole line ready within
    `timeout` seconds; a socket that has closed is unregistered."""
    for key, _ in chooser.select(timeout=timeout):
        data = key.fileobj.recv(1 << 20)
        now = time.monotonic()
        if not data:
            chooser.unregister(key.fileobj)
            continue
        key.data[2] += data
        while b"\n" in key.data[2]:
            line, key.data[2] = key.data[2].split(b"\n", 1)
            yield key.data, line, now
