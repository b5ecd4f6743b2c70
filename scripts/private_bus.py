"""A private system bus for GeoClue's clients and gpslocd's GeoClue face, outside the machine's
own: Debian's dbus-daemon with a policy that lets anyone on it own and call anything. Shared by
scripts/bench-live.py (--geoclue) and scripts/function-order.py.

    bus, address = private_bus.start(folder)   # address for DBUS_SYSTEM_BUS_ADDRESS; bus.kill()
"""
import os
import subprocess

DAEMON = "/usr/bin/dbus-daemon"
WHERE_AM_I = "/usr/libexec/geoclue-2.0/demos/where-am-i"


def start(folder):
    """Starts dbus-daemon listening in `folder`; returns (process, address) once it listens."""
    path = os.path.join(folder, "bus")
    configuration = os.path.join(folder, "bus.conf")
    allow = "".join(f'<allow {kind}="*"/>' for kind in ("user", "own")) + "".join(
        f'<allow {kind}="{value}"/>' for kind in ("send_type", "receive_type")
        for value in ("method_call", "signal", "method_return", "error"))
    with open(configuration, "w") as f:
        f.write('<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" '
                '"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">'
                f"<busconfig><type>system</type><listen>unix:path={path}</listen><auth>EXTERNAL</auth>"
                f'<policy context="default">{allow}</policy></busconfig>')
    bus = subprocess.Popen([DAEMON, f"--config-file={configuration}", "--nofork", "--nopidfile", "--print-address=1"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    bus.stdout.readline()  # the address: it listens
    return bus, f"unix:path={path}"
