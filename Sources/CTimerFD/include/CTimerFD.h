/*
 * CTimerFD.h — a monotonic timer file descriptor (timerfd(2)), for the engines' timer thread.
 * Swift's Glibc module does not include <sys/timerfd.h>.
 */
#ifndef CTIMERFD_H
#define CTIMERFD_H

#include <stdint.h>

/* A CLOCK_MONOTONIC timerfd (close-on-exec, blocking), or -errno. */
int ctimerfd_create(void);

/* Arms `fd` to expire at `deadline` nanoseconds of CLOCK_MONOTONIC (one already past expires
   at once; armed as the time left, see the .c file), or disarms it when `deadline` is
   UINT64_MAX. 0 or -errno. */
int ctimerfd_arm(int fd, uint64_t deadline);

/* CLOCK_MONOTONIC in nanoseconds (the clock `ctimerfd_arm` counts in). */
uint64_t ctimerfd_now(void);

#endif
