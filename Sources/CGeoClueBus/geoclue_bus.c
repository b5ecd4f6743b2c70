#include "geoclue_bus.h"

#include <errno.h>
#include <stddef.h>

static gcb_method_fn method_handler;
static gcb_get_fn get_handler;
static gcb_set_fn set_handler;
static gcb_find_fn find_handler;

void gcb_set_handlers(gcb_method_fn method, gcb_get_fn get, gcb_set_fn set, gcb_find_fn find) {
    method_handler = method;
    get_handler = get;
    set_handler = set;
    find_handler = find;
}

static int on_method(sd_bus_message *call, void *userdata, sd_bus_error *error) {
    return method_handler(call, userdata, error);
}

static int on_get(sd_bus *bus, const char *path, const char *interface, const char *property,
                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    return get_handler(bus, path, interface, property, reply, userdata, error);
}

static int on_set(sd_bus *bus, const char *path, const char *interface, const char *property,
                  sd_bus_message *value, void *userdata, sd_bus_error *error) {
    return set_handler(bus, path, interface, property, value, userdata, error);
}

static int on_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                   sd_bus_error *error) {
    int r = find_handler(bus, path, interface, userdata, error);
    if (r > 0) *found = userdata;
    return r;
}

#define CHANGES SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE
#define CONST SD_BUS_VTABLE_PROPERTY_CONST

// org.freedesktop.GeoClue2.Manager, as Debian's geoclue-2.0 defines it
// (/usr/share/dbus-1/interfaces/org.freedesktop.GeoClue2.Manager.xml).
static const sd_bus_vtable manager_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD_WITH_NAMES("GetClient", "", , "o", SD_BUS_PARAM(client), on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("CreateClient", "", , "o", SD_BUS_PARAM(client), on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("DeleteClient", "o", SD_BUS_PARAM(client), "", , on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD_WITH_NAMES("AddAgent", "s", SD_BUS_PARAM(id), "", , on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_PROPERTY("InUse", "b", on_get, 0, CHANGES),
    SD_BUS_PROPERTY("AvailableAccuracyLevel", "u", on_get, 0, CHANGES),
    SD_BUS_VTABLE_END,
};

// org.freedesktop.GeoClue2.Client.
static const sd_bus_vtable client_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("Start", "", "", on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("Stop", "", "", on_method, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_PROPERTY("Location", "o", on_get, 0, CHANGES),
    SD_BUS_WRITABLE_PROPERTY("DistanceThreshold", "u", on_get, on_set, 0, CHANGES | SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_WRITABLE_PROPERTY("TimeThreshold", "u", on_get, on_set, 0, CHANGES | SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_WRITABLE_PROPERTY("DesktopId", "s", on_get, on_set, 0, CHANGES | SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_WRITABLE_PROPERTY("RequestedAccuracyLevel", "u", on_get, on_set, 0, CHANGES | SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_PROPERTY("Active", "b", on_get, 0, CHANGES),
    SD_BUS_SIGNAL_WITH_NAMES("LocationUpdated", "oo", SD_BUS_PARAM(old) SD_BUS_PARAM(new), 0),
    SD_BUS_VTABLE_END,
};

// org.freedesktop.GeoClue2.Location: a location never changes once on the bus.
static const sd_bus_vtable location_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Latitude", "d", on_get, 0, CONST),
    SD_BUS_PROPERTY("Longitude", "d", on_get, 0, CONST),
    SD_BUS_PROPERTY("Accuracy", "d", on_get, 0, CONST),
    SD_BUS_PROPERTY("Altitude", "d", on_get, 0, CONST),
    SD_BUS_PROPERTY("Speed", "d", on_get, 0, CONST),
    SD_BUS_PROPERTY("Heading", "d", on_get, 0, CONST),
    SD_BUS_PROPERTY("Description", "s", on_get, 0, CONST),
    SD_BUS_PROPERTY("Timestamp", "(tt)", on_get, 0, CONST),
    SD_BUS_VTABLE_END,
};

int gcb_add_objects(sd_bus *bus, void *userdata) {
    int r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/GeoClue2/Manager",
                                     "org.freedesktop.GeoClue2.Manager", manager_vtable, userdata);
    if (r < 0) return r;
    r = sd_bus_add_fallback_vtable(bus, NULL, "/org/freedesktop/GeoClue2/Client", "org.freedesktop.GeoClue2.Client",
                                   client_vtable, on_find, userdata);
    if (r < 0) return r;
    return sd_bus_add_fallback_vtable(bus, NULL, "/org/freedesktop/GeoClue2/Client",
                                      "org.freedesktop.GeoClue2.Location", location_vtable, on_find, userdata);
}

int gcb_error(sd_bus_error *error, const char *name, const char *message) {
    return sd_bus_error_set(error, name, message);
}
