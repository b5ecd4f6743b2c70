#!/usr/bin/env python3
"""Time from a GeoClue client's Start to its first LocationUpdated, and the Accuracy it is
given: Debian 12's GeoClue 2.6 (fed NMEA on its --nmea-socket) beside gpslocd --geoclue (fed the
same recording through gpsd, as gpsfake replays it), on private system buses, at 1 Hz, after
each service has had the feed for a few seconds (gpsd "has a fix"). BENCHMARKS.md has the method
and the figures. Needs root (GeoClue owns its name as root here), dbus-daemon, geoclue-2.0,
gpsd-clients, python3-gi; run from the checkout after `swift build -c release`.

usage: sudo /usr/bin/python3 scripts/bench-geoclue.py [TRIALS]
"""
import os, socket, statistics, subprocess, sys, tempfile, threading, time
from gi.repository import Gio, GLib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "fixtures", "drive-1hz-gp.nmea")
TRIALS = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 10
GPSLOCD = next(p for p in (os.path.join(ROOT, ".build/release/gpslocd"), os.path.join(ROOT, ".build/debug/gpslocd"))
               if os.path.exists(p))
BUS_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>system</type><listen>unix:path=%s</listen><auth>EXTERNAL</auth>
<policy context="default"><allow user="*"/><allow own="*"/><allow send_type="method_call"/>
<allow send_type="signal"/><allow send_type="method_return"/><allow send_type="error"/>
<allow receive_type="method_call"/><allow receive_type="signal"/><allow receive_type="method_return"/>
<allow receive_type="error"/></policy></busconfig>"""
AGENT_XML = """<node><interface name="org.freedesktop.GeoClue2.Agent">
<method name="AuthorizeApp"><arg type="s" direction="in"/><arg type="u" direction="in"/>
<arg type="b" direction="out"/><arg type="u" direction="out"/></method>
<property name="MaxAccuracyLevel" type="u" access="read"/></interface></node>"""


def epochs():
    """The recording's epochs (each a list of sentences, starting at an RMC), for ever."""
    with open(FIXTURE) as f:
        lines = [l.strip() for l in f if l.startswith("$")]
    groups, current = [], []
    for line in lines:
        if line[3:6] == "RMC" and current:
            groups.append(current)
            current = []
        current.append(line)
    groups.append(current)
    while True:
        yield from groups


def nmea_server(path):
    """A Unix socket that writes the recording at 1 Hz to whoever connects (GeoClue's source)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    clients = []
    lock = threading.Lock()

    def accept():
        while True:
            connection, _ = server.accept()
            with lock:
                clients.append(connection)

    def feed():
        for epoch in epochs():
            data = ("\r\n".join(epoch) + "\r\n").encode()
            with lock:
                for c in list(clients):
                    try:
                        c.sendall(data)
                    except OSError:
                        clients.remove(c)
            time.sleep(1.0)

    threading.Thread(target=accept, daemon=True).start()
    threading.Thread(target=feed, daemon=True).start()


def bus(folder):
    path = os.path.join(folder, "bus")
    conf = os.path.join(folder, "bus.conf")
    with open(conf, "w") as f:
        f.write(BUS_CONF % path)
    daemon = subprocess.Popen(["dbus-daemon", "--config-file=" + conf, "--nofork", "--nopidfile"])
    children.append(daemon)
    while not os.path.exists(path):
        time.sleep(0.01)
    return daemon, "unix:path=" + path


def trials(address, desktop_id, count):
    """Each trial a new client: Start, then the first LocationUpdated (seconds, Accuracy)."""
    connection = Gio.DBusConnection.new_for_address_sync(
        address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
        None, None)

    def call(path, interface, method, arguments):
        return connection.call_sync("org.freedesktop.GeoClue2", path, interface, method, arguments, None,
                                    Gio.DBusCallFlags.NONE, 60000, None)

    # The uid's agent, in a process of its own (it must answer GeoClue while this one waits).
    agent = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--agent", address])
    children.append(agent)
    time.sleep(3)
    results = []
    for _ in range(count):
        path = call("/org/freedesktop/GeoClue2/Manager", "org.freedesktop.GeoClue2.Manager", "CreateClient",
                    None).unpack()[0]
        props = "org.freedesktop.DBus.Properties"
        client = "org.freedesktop.GeoClue2.Client"
        call(path, props, "Set", GLib.Variant("(ssv)", (client, "DesktopId", GLib.Variant("s", desktop_id))))
        call(path, props, "Set", GLib.Variant("(ssv)", (client, "RequestedAccuracyLevel", GLib.Variant("u", 8))))
        got = []
        loop = GLib.MainLoop()

        def updated(c, sender, p, i, s, parameters):
            if not got:
                got.append(time.monotonic())
                new = parameters.unpack()[1]
                accuracy = call(new, props, "Get", GLib.Variant("(ss)", ("org.freedesktop.GeoClue2.Location",
                                                                          "Accuracy"))).unpack()[0]
                got.append(accuracy)
                loop.quit()

        subscription = connection.signal_subscribe(None, client, "LocationUpdated", path, None,
                                                   Gio.DBusSignalFlags.NONE, updated)
        GLib.timeout_add(20000, loop.quit)
        start = time.monotonic()
        call(path, client, "Start", None)
        loop.run()
        connection.signal_unsubscribe(subscription)
        call(path, client, "Stop", None)
        call("/org/freedesktop/GeoClue2/Manager", "org.freedesktop.GeoClue2.Manager", "DeleteClient",
             GLib.Variant("(o)", (path,)))
        results.append((got[0] - start, got[1]) if got else (None, None))
        print(f"  {desktop_id}: {results[-1]}", file=sys.stderr, flush=True)
        time.sleep(0.37)  # a different phase of the 1 Hz feed each time
    return results


def summary(name, results):
    if isinstance(results, str):
        return f"{name}: refused: {results}"
    times = [t for t, _ in results if t is not None]
    accuracies = sorted({round(a, 1) for _, a in results if a is not None})
    missing = sum(1 for t, _ in results if t is None)
    if not times:
        return f"{name}: no location in {len(results)} trials"
    return (f"{name}: first location after Start: median {statistics.median(times) * 1000:.0f} ms, "
            f"max {max(times) * 1000:.0f} ms ({len(times)} trials{f', {missing} without' if missing else ''}); "
            f"Accuracy reported: {accuracies} m")


def main():
    with tempfile.TemporaryDirectory() as folder:
        os.chmod(folder, 0o755)
        # GeoClue 2.6 on its NMEA socket.
        nmea = os.path.join(folder, "nmea.sock")
        nmea_server(nmea)
        daemon, address = bus(folder)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)
        geoclue = subprocess.Popen(["/usr/libexec/geoclue", "-t", "0", "-u", nmea], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        children.append(geoclue)
        time.sleep(5)
        try:
            geoclue_results = trials(address, "geoclue-bench", TRIALS)
        except GLib.Error as error:
            geoclue_results = error.message
        geoclue.kill()
        daemon.kill()
        os.unlink(os.path.join(folder, "bus"))
        # gpslocd on gpsd (gpsfake at 1 Hz: the recording's 9 sentences an epoch, 0.111 s apart).
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])  # a free port (a gpsd left on a fixed one would be read)
        probe.close()
        gpsfake = subprocess.Popen(["gpsfake", "-q", "-P", port, "-c", "0.111", FIXTURE],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        children.append(gpsfake)
        time.sleep(2)
        daemon, address = bus(folder)
        env = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address, GPSLOCATION_BROKER=os.path.join(folder, "socket"))
        gpslocd = subprocess.Popen([GPSLOCD, "--gpsd", "127.0.0.1:" + port, "--socket", os.path.join(folder, "socket"),
                                    "--state", os.path.join(folder, "state"), "--geoclue"], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        children.append(gpslocd)
        time.sleep(1)
        subprocess.run([os.path.join(os.path.dirname(GPSLOCD), "gpsloc"), "auth", "grant", "geoclue-bench",
                        "--always"], env=env, check=True, stdout=subprocess.DEVNULL)
        # Its gpsd connection starts with the first client: one warm-up, as GeoClue had 5 s.
        trials(address, "geoclue-bench", 1)
        time.sleep(3)
        gpslocd_results = trials(address, "geoclue-bench", TRIALS)
        gpslocd.kill()
        stop(gpsfake)
        daemon.kill()
        print(summary("GeoClue 2.6 (NMEA socket)", geoclue_results))
        print(summary("gpslocd --geoclue (gpsd)", gpslocd_results))


def run_agent(address):
    """A GeoClue agent as GNOME Shell is one: every app allowed, at the exact level."""
    connection = Gio.DBusConnection.new_for_address_sync(
        address, Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION,
        None, None)
    node = Gio.DBusNodeInfo.new_for_xml(AGENT_XML)
    connection.register_object(
        "/org/freedesktop/GeoClue2/Agent", node.interfaces[0],
        lambda c, s, p, i, m, params, invocation: invocation.return_value(GLib.Variant("(bu)", (True, 8))),
        lambda c, s, p, i, name: GLib.Variant("u", 8), None)
    # Asynchronously: GeoClue reads the agent's MaxAccuracyLevel before it answers AddAgent, and
    # an agent blocked in its own call cannot answer (GeoClue then takes the level as 0).
    connection.call("org.freedesktop.GeoClue2", "/org/freedesktop/GeoClue2/Manager",
                    "org.freedesktop.GeoClue2.Manager", "AddAgent", GLib.Variant("(s)", ("gnome-shell",)),
                    None, Gio.DBusCallFlags.NONE, 10000, None, None)
    GLib.MainLoop().run()


children = []


def stop(child):
    """Ends a child and its own children (gpsfake's gpsd)."""
    try:
        os.killpg(child.pid, 9)
    except (ProcessLookupError, PermissionError):
        child.kill()


try:
    if len(sys.argv) > 2 and sys.argv[1] == "--agent":
        run_agent(sys.argv[2])
    else:
        main()
finally:
    for child in children:
        stop(child)
