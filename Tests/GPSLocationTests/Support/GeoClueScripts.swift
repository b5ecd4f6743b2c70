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
let geoClueTestScript = """
    import sys
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
    """
