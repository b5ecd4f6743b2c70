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
        /* An it_value of zero disarms: a deadline of 0 is long past, so 1 ns means "now". */
        if (deadline == 0) deadline = 1;
        value.it_value.tv_sec = (time_t)(deadline / 1000000000u);
        value.it_value.tv_nsec = (long)(deadline % 1000000000u);
    }
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &value, NULL) == 0 ? 0 : -errno;
}

uint64_t ctimerfd_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
}
