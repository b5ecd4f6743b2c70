/* posix_openpt() and ptsname_r() are declared only with _GNU_SOURCE (or _XOPEN_SOURCE). */
#define _GNU_SOURCE
#include "CPseudoTerminal.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int cpty_open(int flags, char *path, size_t length) {
    int master = posix_openpt(flags);
    if (master < 0) return -errno;
    if (grantpt(master) != 0 || unlockpt(master) != 0 || ptsname_r(master, path, length) != 0) {
        int saved = errno;
        close(master);
        return -saved;
    }
    return master;
}
