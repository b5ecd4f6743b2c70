/// Python programs (Debian's python3-gi, GDBus underneath, as GNOME's own components use) for
/// the GeoClue tests, written to the box's folder and run with /usr/bin/python3.
///
/// `agent ANSWER LEVEL`: a GeoClue agent as GNOME Shell is one — it registers with `AddAgent`
/// and answers every `AuthorizeApp(desktop_id, level)` with ANSWER (allow/deny) and LEVEL,
/// printing `ASKED desktop_id level` for each. GNOME Shell itself cannot run headless here, and
/// geoclue's demo agent answers through a desktop notification's buttons.
///
/// `clients N`: one connection creating N clients (`CreateClient`), printing `CLIENT path` or
/// `REFUSED error` for each: what a connection may hold.
///
/// `watch DESKTOP_ID DISTANCE COUNT`: a client at exact level with `DistanceThreshold` DISTANCE,
/// printing `LOCATION lat lon accuracy` for each of COUNT `LocationUpdated` signals, `OLD path`
/// when the signal's old location can still be read, and `KEPT`/`GONE path` for the one before it.
let geoClueTestScript = """
    import sys
    import time
    from gi.repository import Gio, GLib

    AGENT_XML = '''<node><interface name="org.freedesktop.GeoClue2.Agent">
    <method name="AuthorizeApp"><arg name="desktop_id" type="s" direction="in"/>
    <arg name="req_accuracy_level" type="u" direction="in"/><arg name="authorized" type="b" direction="out"/>
    <arg name="allowed_accuracy_level" type="u" direction="out"/></method>
    <property name="MaxAccuracyLevel" type="u" access="read"/></interface></node>'''

    bus = Gio.bus_get_sync(Gio.BusType.SYSTEM, None)

    def manager(method, arguments):
        return bus.call_sync("org.freedesktop.GeoClue2", "/org/freedesktop/GeoClue2/Manager",
                             "org.freedesktop.GeoClue2.Manager", method, arguments, None,
                             Gio.DBusCallFlags.NONE, 10000, None)

    if sys.argv[1] == "agent":
        answer, level = sys.argv[2] == "allow", int(sys.argv[3])

        def call(connection, sender, path, interface, method, parameters, invocation):
            desktop_id, requested = parameters.unpack()
            print("ASKED", desktop_id, requested, flush=True)
            invocation.return_value(GLib.Variant("(bu)", (answer, level)))

        def get(connection, sender, path, interface, name):
            return GLib.Variant("u", level)

        node = Gio.DBusNodeInfo.new_for_xml(AGENT_XML)
        bus.register_object("/org/freedesktop/GeoClue2/Agent", node.interfaces[0], call, get, None)
        manager("AddAgent", GLib.Variant("(s)", ("gnome-shell",)))
        print("READY", flush=True)
        GLib.MainLoop().run()
    elif sys.argv[1] == "clients":
        for _ in range(int(sys.argv[2])):
            try:
                print("CLIENT", manager("CreateClient", None).unpack()[0], flush=True)
            except GLib.Error as error:
                print("REFUSED", error.message, flush=True)
    elif sys.argv[1] == "watch":
        # watch DESKTOP_ID DISTANCE COUNT: a client with DistanceThreshold DISTANCE, printing
        # LOCATION lat lon for each of COUNT locations, and KEPT/GONE for the one before the
        # previous (only the current and the previous stay on the bus).
        desktop, distance, count = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        path = manager("CreateClient", None).unpack()[0]

        def client(method, arguments, interface="org.freedesktop.DBus.Properties"):
            return bus.call_sync("org.freedesktop.GeoClue2", path, interface, method, arguments, None,
                                 Gio.DBusCallFlags.NONE, 10000, None)

        c = "org.freedesktop.GeoClue2.Client"
        client("Set", GLib.Variant("(ssv)", (c, "DesktopId", GLib.Variant("s", desktop))))
        client("Set", GLib.Variant("(ssv)", (c, "RequestedAccuracyLevel", GLib.Variant("u", 8))))
        client("Set", GLib.Variant("(ssv)", (c, "DistanceThreshold", GLib.Variant("u", distance))))
        seen = []
        loop = GLib.MainLoop()

        def updated(connection, sender, object_path, interface, signal, parameters):
            old, new = parameters.unpack()
            values = bus.call_sync("org.freedesktop.GeoClue2", new, "org.freedesktop.DBus.Properties", "GetAll",
                                   GLib.Variant("(s)", ("org.freedesktop.GeoClue2.Location",)), None,
                                   Gio.DBusCallFlags.NONE, 10000, None).unpack()[0]
            if not seen:
                print("FIRST", round(time.monotonic() - started[0], 4), flush=True)
            print("LOCATION", values["Latitude"], values["Longitude"], values["Accuracy"], flush=True)
            if len(seen) >= 2:
                try:
                    bus.call_sync("org.freedesktop.GeoClue2", seen[-2], "org.freedesktop.DBus.Properties", "GetAll",
                                  GLib.Variant("(s)", ("org.freedesktop.GeoClue2.Location",)), None,
                                  Gio.DBusCallFlags.NONE, 10000, None)
                    print("KEPT", seen[-2], flush=True)
                except GLib.Error:
                    print("GONE", seen[-2], flush=True)
            if old != "/":
                bus.call_sync("org.freedesktop.GeoClue2", old, "org.freedesktop.DBus.Properties", "GetAll",
                              GLib.Variant("(s)", ("org.freedesktop.GeoClue2.Location",)), None,
                              Gio.DBusCallFlags.NONE, 10000, None)
                print("OLD", old, flush=True)
            seen.append(new)
            if len(seen) >= count:
                loop.quit()

        bus.signal_subscribe("org.freedesktop.GeoClue2", c, "LocationUpdated", path, None,
                             Gio.DBusSignalFlags.NONE, updated)
        started = [time.monotonic()]
        client("Start", None, c)
        loop.run()
    """
