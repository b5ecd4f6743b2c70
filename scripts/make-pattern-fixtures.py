#!/usr/bin/env python3
"""Writes the hand-made pattern recordings of fixtures/ (fixtures/README.md).

Each is a 1 Hz $GP receiver (RMC + GGA [+ GSA] [+ ZDA]) moving north-east from Bristol at 5 m/s,
shaped to show one pattern seen in real receivers' logs. The matching .gpsd.json is gpsd's own
output for the file: the TPV and SKY lines of `gpsfake -1 -p -q -s 38400 FILE`, device paths
removed (fixtures/README.md).

    python3 scripts/make-pattern-fixtures.py [OUTPUT_FOLDER]   (default: fixtures)
"""
import sys
from pathlib import Path

START_LAT = 5127.2310  # ddmm.mmmm
START_LON = 235.8482


def checksum(body: str) -> str:
    value = 0
    for ch in body:
        value ^= ord(ch)
    return f"{value:02X}"


def sentence(body: str) -> str:
    return f"${body}*{checksum(body)}\r\n"


def hms(seconds: int) -> str:
    seconds %= 86400
    return f"{seconds // 3600:02d}{seconds // 60 % 60:02d}{seconds % 60:02d}.00"


def position(step: int):
    return f"{START_LAT + 0.0012 * step:.7f}", f"{START_LON - 0.0018 * step:09.7f}"


def rmc(t: int, step: int, valid=True, date="150626"):
    lat, lon = position(step)
    if not valid:
        return sentence(f"GPRMC,{hms(t)},V,,,,,,,{date},,,N")
    return sentence(f"GPRMC,{hms(t)},A,{lat},N,{lon},W,5.0,45.00,{date},,,A")


def gga(t: int, step: int, valid=True):
    lat, lon = position(step)
    if not valid:
        return sentence(f"GPGGA,{hms(t)},,,,,0,00,99.99,,,,,,")
    return sentence(f"GPGGA,{hms(t)},{lat},N,{lon},W,1,08,0.90,45.5,M,48.2,M,,")


def gsa(valid=True):
    if not valid:
        return sentence("GPGSA,A,1,,,,,,,,,,,,,99.99,99.99,99.99")
    return sentence("GPGSA,A,3,02,05,07,13,15,20,24,30,,,,,1.60,0.90,1.30")


def zda(t: int):
    return sentence(f"GPZDA,{hms(t)},15,06,2026,00,00")


def header(text: str) -> str:
    return f"# GPSLocation: {text}; hand-made by scripts/make-pattern-fixtures.py (fixtures/README.md)\r\n"


NOON = 12 * 3600


def clock_restart() -> str:
    """Pattern 1: before its first fix the receiver's clock runs from 12:01:20, then restarts
    80 s back (12:00:00) and the fixes begin."""
    out = [header("the clock restarts 80 s back before the first fix (no fix 12:01:20-12:01:39, fixes from 12:00:00)")]
    for i in range(20):
        t = NOON + 80 + i
        out += [rmc(t, 0, valid=False), gga(t, 0, valid=False), gsa(valid=False)]
    for i in range(100):
        t = NOON + i
        out += [rmc(t, i), gga(t, i), gsa()]
    return "".join(out)


def cut_before_gap() -> str:
    """Pattern 3: a complete RMC + GGA, then the cycle's GSA cut off mid-sentence (no ZDA), then
    a 300 s gap in the capture."""
    out = [header("a complete RMC + GGA, a GSA cut off mid-sentence, then a 300 s capture gap (at 12:00:59)")]
    for i in range(60):
        t = NOON + i
        out += [rmc(t, i), gga(t, i), gsa()]
        if i == 59:
            out.append("$GPGSA,A,3,02,05,0\r\n")
        else:
            out.append(zda(t))
    for i in range(360, 420):
        t = NOON + i
        out += [rmc(t, i), gga(t, i), gsa(), zda(t)]
    return "".join(out)


def zda_behind() -> str:
    """Pattern 4: the receiver opens each cycle with ZDA, and the first cycle's ZDA carries the
    previous second (12:00:00 ahead of a 12:00:01 RMC + GGA); the next cycles are in step."""
    out = [header("ZDA opens each cycle; the first one is a second behind its RMC + GGA (12:00:00 for 12:00:01)")]
    out += [zda(NOON), rmc(NOON + 1, 1), gga(NOON + 1, 1), gsa()]
    for i in range(2, 60):
        t = NOON + i
        out += [zda(t), rmc(t, i), gga(t, i), gsa()]
    return "".join(out)


def hdt(heading: float):
    return sentence(f"GPHDT,{heading:.1f},T")


def heading_receiver() -> str:
    """A dual-antenna receiver: each cycle's RMC + GGA + GSA is followed by an HDT whose heading
    swings from 30.0 degrees by 7.3 a second (past north at 12:00:46), while the receiver moves
    north-east; one cycle (12:00:20) has an empty HDT (no heading), as receivers send while
    the baseline is not solved."""
    out = [header("HDT each cycle, the heading 7.3 degrees a second from 30.0 (past north), one empty at 12:00:20")]
    for i in range(60):
        t = NOON + i
        out += [rmc(t, i), gga(t, i), gsa()]
        out.append(sentence("GPHDT,,T") if i == 20 else hdt((30.0 + 7.3 * i) % 360))
    return "".join(out)


PATTERNS = {
    "clock-restart-1hz-gp.nmea": clock_restart,
    "cut-before-gap-1hz-gp.nmea": cut_before_gap,
    "zda-behind-1hz-gp.nmea": zda_behind,
    "heading-1hz-gp.nmea": heading_receiver,
}

if __name__ == "__main__":
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "fixtures")
    for name, make in PATTERNS.items():
        (folder / name).write_bytes(make().encode("ascii"))
        print(folder / name)
