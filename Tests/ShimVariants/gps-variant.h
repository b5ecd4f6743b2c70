/*
 * A stand-in <gps.h> reproducing, for one libgps API version, only what Sources/CGPS/shim.h
 * touches, with the differences documented in shared/reference/libgps-3.22.md:
 *   API 9  (gpsd 3.20): timespec times, altHAE/altMSL, `status` still in gps_data_t;
 *   API 10 (3.21): `status` moves into gps_fix_t;      API 11 (3.22): as 10 for the shim;
 *   API 12 (3.23.1): STATUS_* names change (the shim passes the integer through);
 *   API 14 (3.24+): gps_stream(gps, watch_t, const char *), MAXCHANNELS 185, gps_fd_t.
 * Compiled by ShimVariantTests with -DVARIANT_API=N. Written for this project's tests.
 */
#ifndef GPS_VARIANT_H
#define GPS_VARIANT_H
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define GPSD_API_MAJOR_VERSION VARIANT_API
#define GPSD_API_MINOR_VERSION 0

#if VARIANT_API >= 14
#define MAXCHANNELS 185
typedef uint32_t watch_t;
typedef int gps_fd_t;
#else
#define MAXCHANNELS 140
#endif
#define GPS_PATH_MAX 128
#define MAXUSERDEVS 4
#define WATCH_ENABLE 0x000001u
#define WATCH_DISABLE 0x000002u
#define WATCH_JSON 0x000010u
#define WATCH_DEVICE 0x000800u

typedef struct timespec timespec_t;
typedef uint64_t gps_mask_t;

struct gps_fix_t {
    timespec_t time;
    int mode;
#if VARIANT_API >= 10
    int status;
#endif
    double ept, latitude, epy, longitude, epx, altitude, altHAE, altMSL, epv;
    double track, epd, speed, eps, climb, epc, eph, magnetic_track, magnetic_var, geoid_sep;
};

struct dop_t { double xdop, ydop, pdop, hdop, vdop, tdop, gdop; };

/* GST: the same in API 9 through 16 (the receiver's pseudorange error statistics). */
struct gst_t {
    timespec_t utctime;
    double rms_deviation, smajor_deviation, sminor_deviation, smajor_orientation;
    double lat_err_deviation, lon_err_deviation, alt_err_deviation;
};

/* ATT: the fields the shim reads (heading) are in API 9 through 16. */
struct attitude_t {
    double heading, pitch, roll, yaw, dip;
};

struct satellite_t {
    double ss;
    bool used;
    short PRN;
    double elevation, azimuth;
    unsigned char gnssid, svid, sigid;
    signed char freqid;
    unsigned char health;
};

struct devconfig_t {
    char path[GPS_PATH_MAX];
    char driver[64];
    timespec_t activated;
    unsigned int baudrate;
    timespec_t cycle;
};

struct gps_data_t {
    gps_mask_t set;
#if VARIANT_API < 10
    int status;
#endif
#if VARIANT_API >= 14
    gps_fd_t gps_fd;
#else
    int gps_fd;
#endif
    struct gps_fix_t fix;
    int satellites_used;
    struct dop_t dop;
    timespec_t skyview_time;
    int satellites_visible;
    struct satellite_t skyview[MAXCHANNELS];
    struct devconfig_t dev;
    struct {
        timespec_t time;
        int ndevices;
        struct devconfig_t list[MAXUSERDEVS];
    } devices;
    union {
        struct gst_t gst;
        struct attitude_t attitude;
    };
};

extern int gps_open(const char *, const char *, struct gps_data_t *);
extern int gps_close(struct gps_data_t *);
extern int gps_send(struct gps_data_t *, const char *, ...);
#if VARIANT_API >= 7
extern int gps_read(struct gps_data_t *, char *message, int message_len);
#else
extern int gps_read(struct gps_data_t *);
#endif
extern int gps_unpack(char *, struct gps_data_t *);
extern bool gps_waiting(const struct gps_data_t *, int);
#if VARIANT_API >= 14
extern int gps_stream(struct gps_data_t *, watch_t, const char *);
#else
extern int gps_stream(struct gps_data_t *, unsigned int, void *);
#endif
extern const char *gps_errstr(const int);
#endif
