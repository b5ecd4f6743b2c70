// gpslocd's GeoClue 2 face: sd-bus's object tables (C macros, so written in C) and the
// trampolines that hand every call to the Swift side. No state lives here.
#ifndef GPSLOCD_GEOCLUE_BUS_H
#define GPSLOCD_GEOCLUE_BUS_H

#include <systemd/sd-bus.h>

/// A method call on any of the three interfaces (the member and path say which).
typedef int (*gcb_method_fn)(sd_bus_message *call, void *userdata, sd_bus_error *error);
/// A property read: append the value to `reply`.
typedef int (*gcb_get_fn)(sd_bus *bus, const char *path, const char *interface, const char *property,
                          sd_bus_message *reply, void *userdata, sd_bus_error *error);
/// A property write: read the value from `value` (the Set call, at the variant's content).
typedef int (*gcb_set_fn)(sd_bus *bus, const char *path, const char *interface, const char *property,
                          sd_bus_message *value, void *userdata, sd_bus_error *error);
/// Whether the object at `path` with `interface` exists for the caller (1) or not (0).
typedef int (*gcb_find_fn)(sd_bus *bus, const char *path, const char *interface, void *userdata,
                           sd_bus_error *error);

/// Sets the Swift side's handlers (once, before `gcb_add_objects`).
void gcb_set_handlers(gcb_method_fn method, gcb_get_fn get, gcb_set_fn set, gcb_find_fn find);

/// Registers the Manager at /org/freedesktop/GeoClue2/Manager and the Client and Location
/// objects under /org/freedesktop/GeoClue2/Client (found through `find`).
int gcb_add_objects(sd_bus *bus, void *userdata);

/// sd_bus_error_set (a macro-free wrapper, so that Swift can call it).
int gcb_error(sd_bus_error *error, const char *name, const char *message);

#endif
