#include "CTimerFD.h"
#include <errno.h>
#include <sys/timerfd.h>
#include <time.h>

int ctimerfd_create(void) {
    int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int ctimerfd_arm(int fd, uint64_t deadline) {
    struct itimerspec value = {0};
    if (deadline != UINT64_MAX) {
        /* Armed relative to now, never with TFD_TIMER_ABSTIME: a clock shim preloaded into the
           program (libfaketime, which the tests use for a wrong system clock) shifts absolute
           deadlines by its offset, even with the monotonic clock left alone — an offset of
           +2 h on a machine up less than 2 h made the deadline negative (EINVAL), -3 d put it
           three days late. `now` is read before arming, so the expiry never comes early. An
           it_value of zero disarms: a deadline already past waits 1 ns. */
        uint64_t now = ctimerfd_now();
        uint64_t remaining = deadline > now ? deadline - now : 1;
        value.it_value.tv_sec = (time_t)(remaining / 1000000000u);
        value.it_value.tv_nsec = (long)(remaining % 1000000000u);
    }
    return timerfd_settime(fd, 0, &value, NULL) == 0 ? 0 : -errno;
}

uint64_t ctimerfd_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}
