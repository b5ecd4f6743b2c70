/*
 * shim.h — the only C surface of GPSLocation.
 *
 * Every libgps quirk lives here as a `static inline cgps_*` wrapper so that the Swift layer
 * never needs a version `#if`:
 *   - gps_send is variadic (Swift cannot call it);
 *   - gps_stream takes `unsigned int, void *` up to API 13 and `watch_t, const char *` from 14;
 *   - the fix status lives in gps_data_t up to API 9 and in gps_fix_t from API 10;
 *   - STATUS_* names changed in API 12 (we only pass the integer through);
 *   - satellites, DOPs and devices are copied into small plain structs declared below.
 * Supported: GPSD_API_MAJOR_VERSION 9 (gpsd 3.20) and newer.
 */
#ifndef CGPS_SHIM_H
#define CGPS_SHIM_H

#include <gps.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(GPSD_API_MAJOR_VERSION)
#error "GPSLocation: <gps.h> does not define GPSD_API_MAJOR_VERSION; install libgps-dev from gpsd 3.20 or newer"
#elif GPSD_API_MAJOR_VERSION < 9
#error "GPSLocation needs libgps API 9 or newer (gpsd 3.20+): older libgps uses double timestamps. Install a newer libgps-dev."
#endif

/* ---------------------------------------------------------------- lifecycle */

/// Allocates one zeroed gps_data_t on the heap (it is about 24 KB: never copy it by value).
static inline struct gps_data_t *cgps_alloc(void) {
    return (struct gps_data_t *)calloc(1, sizeof(struct gps_data_t));
}

static inline void cgps_free(struct gps_data_t *data) { free(data); }

/// gps_open; on failure returns the negative NL_* code libgps left in errno (never 0).
static inline int cgps_open(const char *host, const char *port, struct gps_data_t *data) {
    errno = 0;
    if (gps_open(host, port, data) == 0) {
        return 0;
    }
    return errno != 0 ? errno : -1;
}

static inline int cgps_close(struct gps_data_t *data) { return gps_close(data); }

static inline int cgps_fd(const struct gps_data_t *data) { return (int)data->gps_fd; }

static inline const char *cgps_errstr(int code) { return gps_errstr(code); }

/* ---------------------------------------------------------------- watching */

enum {
    CGPS_WATCH_ENABLE = WATCH_ENABLE,
    CGPS_WATCH_DISABLE = WATCH_DISABLE,
    CGPS_WATCH_JSON = WATCH_JSON,
    CGPS_WATCH_DEVICE = WATCH_DEVICE,
};

/// gps_stream with an optional device path (NULL for every device).
static inline int cgps_stream(struct gps_data_t *data, unsigned int flags, const char *device) {
#if GPSD_API_MAJOR_VERSION >= 14
    return gps_stream(data, (watch_t)flags, device);
#else
    return gps_stream(data, flags, (void *)device);
#endif
}

/// gps_send without varargs: sends `text` verbatim.
static inline int cgps_send(struct gps_data_t *data, const char *text) {
    return gps_send(data, "%s", text);
}

/// Clears the report mask, then reads one JSON object (see libgps-3.22 notes: `set` is partly
/// cumulative). Returns -1 on error or disconnect, 0 when only a partial line is buffered,
/// else the length of the consumed line, which is copied into `message`.
static inline int cgps_read(struct gps_data_t *data, char *message, int length) {
    data->set = 0;
    return gps_read(data, message, length);
}

static inline bool cgps_waiting(const struct gps_data_t *data, int timeout_us) {
    return gps_waiting(data, timeout_us);
}

/// Decodes one JSON object without a socket (for unit tests). Clears `set` first.
static inline int cgps_unpack(char *json, struct gps_data_t *data) {
    data->set = 0;
    return gps_unpack(json, data);
}

static inline uint64_t cgps_set_mask(const struct gps_data_t *data) { return (uint64_t)data->set; }

/* ---------------------------------------------------------------- attitude */

/// The heading of the ATT report just unpacked (degrees; NaN when it had none). gpsd 3.22 makes
/// an ATT of NMEA HDT (true heading) and of compass and dual-antenna receivers' binary reports.
static inline double cgps_attitude_heading(const struct gps_data_t *data) { return data->attitude.heading; }

/* ---------------------------------------------------------------- fixes */

/// A gps_fix_t flattened into fields that exist in every supported API version. NaN = unknown.
typedef struct {
    int mode;
    int status;
    int64_t time_seconds;
    long time_nanoseconds;
    double latitude, longitude;
    double alt_hae, alt_msl, geoid_sep;
    double ept, epx, epy, epv, eps, epd, epc, eph;
    double speed, track, climb, magnetic_track, magnetic_var;
} cgps_fix;

static inline void cgps_copy_fix(const struct gps_data_t *data, cgps_fix *out) {
    const struct gps_fix_t *fix = &data->fix;
    out->mode = fix->mode;
#if GPSD_API_MAJOR_VERSION >= 10
    out->status = fix->status;
#else
    out->status = data->status;
#endif
    out->time_seconds = (int64_t)fix->time.tv_sec;
    out->time_nanoseconds = (long)fix->time.tv_nsec;
    out->latitude = fix->latitude;
    out->longitude = fix->longitude;
    out->alt_hae = fix->altHAE;
    out->alt_msl = fix->altMSL;
    out->geoid_sep = fix->geoid_sep;
    out->ept = fix->ept;
    out->epx = fix->epx;
    out->epy = fix->epy;
    out->epv = fix->epv;
    out->eps = fix->eps;
    out->epd = fix->epd;
    out->epc = fix->epc;
    out->eph = fix->eph;
    out->speed = fix->speed;
    out->track = fix->track;
    out->climb = fix->climb;
    out->magnetic_track = fix->magnetic_track;
    out->magnetic_var = fix->magnetic_var;
}

/* ---------------------------------------------------------------- gst */

/// A receiver's pseudorange error statistics (GST report): 1-sigma metres, NaN = unknown.
typedef struct {
    int64_t time_seconds;
    long time_nanoseconds;
    double latitude, longitude, altitude;
} cgps_gst;

static inline void cgps_copy_gst(const struct gps_data_t *data, cgps_gst *out) {
    out->time_seconds = (int64_t)data->gst.utctime.tv_sec;
    out->time_nanoseconds = (long)data->gst.utctime.tv_nsec;
    out->latitude = data->gst.lat_err_deviation;
    out->longitude = data->gst.lon_err_deviation;
    out->altitude = data->gst.alt_err_deviation;
}

/* ---------------------------------------------------------------- sky */

typedef struct {
    double xdop, ydop, pdop, hdop, vdop, tdop, gdop;
    int64_t time_seconds;
    long time_nanoseconds;
    int visible;
    int used;
} cgps_sky;

typedef struct {
    short prn;
    int gnssid, svid, sigid, health;
    double ss, elevation, azimuth;
    bool used;
} cgps_satellite;

static inline void cgps_copy_sky(const struct gps_data_t *data, cgps_sky *out) {
    out->xdop = data->dop.xdop;
    out->ydop = data->dop.ydop;
    out->pdop = data->dop.pdop;
    out->hdop = data->dop.hdop;
    out->vdop = data->dop.vdop;
    out->tdop = data->dop.tdop;
    out->gdop = data->dop.gdop;
    out->time_seconds = (int64_t)data->skyview_time.tv_sec;
    out->time_nanoseconds = (long)data->skyview_time.tv_nsec;
    out->visible = data->satellites_visible;
    out->used = data->satellites_used;
}

/// Copies satellite `index` (0 ..< visible); returns false when out of range.
static inline bool cgps_copy_satellite(const struct gps_data_t *data, int index, cgps_satellite *out) {
    if (index < 0 || index >= data->satellites_visible || index >= MAXCHANNELS) {
        return false;
    }
    const struct satellite_t *sat = &data->skyview[index];
    out->prn = sat->PRN;
    out->gnssid = sat->gnssid;
    out->svid = sat->svid;
    out->sigid = sat->sigid;
    out->health = sat->health;
    out->ss = sat->ss;
    out->elevation = sat->elevation;
    out->azimuth = sat->azimuth;
    out->used = sat->used;
    return true;
}

/* ---------------------------------------------------------------- devices */

typedef struct {
    char path[GPS_PATH_MAX];
    char driver[64];
    int64_t activated_seconds;
    long activated_nanoseconds;
    unsigned int baudrate;
    double cycle_seconds;
} cgps_device;

static inline void cgps_copy_devconfig(const struct devconfig_t *dev, cgps_device *out) {
    memset(out, 0, sizeof(*out));
    strncpy(out->path, dev->path, sizeof(out->path) - 1);
    strncpy(out->driver, dev->driver, sizeof(out->driver) - 1);
    out->activated_seconds = (int64_t)dev->activated.tv_sec;
    out->activated_nanoseconds = (long)dev->activated.tv_nsec;
    out->baudrate = dev->baudrate;
    out->cycle_seconds = (double)dev->cycle.tv_sec + (double)dev->cycle.tv_nsec / 1e9;
}

/* The device of the last DEVICE report. */
static inline void cgps_copy_device(const struct gps_data_t *data, cgps_device *out) {
    cgps_copy_devconfig(&data->dev, out);
}

/* Entry `index` of the last DEVICES report (gpsd's list of active devices, sent on WATCH);
 * false past its end. */
static inline bool cgps_copy_listed_device(const struct gps_data_t *data, int index, cgps_device *out) {
    if (index < 0 || index >= data->devices.ndevices || index >= MAXUSERDEVS) return false;
    cgps_copy_devconfig(&data->devices.list[index], out);
    return true;
}

static inline int cgps_api_major(void) { return GPSD_API_MAJOR_VERSION; }
static inline int cgps_api_minor(void) { return GPSD_API_MINOR_VERSION; }

#endif /* CGPS_SHIM_H */
