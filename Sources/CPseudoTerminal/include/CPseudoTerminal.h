#ifndef CPSEUDOTERMINAL_H
#define CPSEUDOTERMINAL_H
/* The pseudo-terminal helper behind GPSLocationTesting's simulated receivers. Its own target
 * so that CGPS stays libgps only. */
#include <stddef.h>

/* Opens a pseudo-terminal master ready for use (posix_openpt, grantpt, unlockpt); the slave's
 * path goes to `path`. Returns the master descriptor, or -errno. */
int cpty_open(int flags, char *path, size_t length);

#endif
