#define _GNU_SOURCE
#include <poll.h>
#include "CBrokerSupport.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/vfs.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif

int gpslocd_peer_credentials(int fd, int *pid, unsigned *uid, unsigned *gid) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *pid = credentials.pid;
    *uid = credentials.uid;
    *gid = credentials.gid;
    return 0;
}

int gpslocd_peer_pidfd(int fd) {
    int pidfd = -1;
    socklen_t length = sizeof pidfd;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &length) != 0) return -1;
    return pidfd;
}

int gpslocd_pidfd_open(int pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

// A pidfd polls readable once its process has exited; that needs no permission over the process
// (signal 0 through pidfd_send_signal would: EPERM for another uid's process when gpslocd runs as
// its own user). 1: alive, 0: exited, -1: the poll failed.
int gpslocd_pidfd_alive(int pidfd) {
    struct pollfd entry = {.fd = pidfd, .events = POLLIN};
    int ready = poll(&entry, 1, 0);
    if (ready < 0) return -1;
    return ready == 0 ? 1 : 0;
}

int gpslocd_accept(int listener) { return accept4(listener, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); }

int gpslocd_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

/* add and modify: events 1 read (and hang-up), 2 write, 4 edge-triggered. */
static int epoll_control(int epoll, int operation, int fd, unsigned events, long long data) {
    struct epoll_event event = {0};
    if (events & 1) event.events |= EPOLLIN | EPOLLRDHUP;
    if (events & 2) event.events |= EPOLLOUT;
    if (events & 4) event.events |= EPOLLET;
    event.data.u64 = (unsigned long long)data;
    return epoll_ctl(epoll, operation, fd, &event);
}

int gpslocd_epoll_add(int epoll, int fd, unsigned events, long long data) {
    return epoll_control(epoll, EPOLL_CTL_ADD, fd, events, data);
}

int gpslocd_epoll_modify(int epoll, int fd, unsigned events, long long data) {
    return epoll_control(epoll, EPOLL_CTL_MOD, fd, events, data);
}

int gpslocd_epoll_remove(int epoll, int fd) { return epoll_ctl(epoll, EPOLL_CTL_DEL, fd, NULL); }

int gpslocd_epoll_wait(int epoll, long long *data, unsigned *events, int maximum, int timeout) {
    struct epoll_event ready[64];
    if (maximum > 64) maximum = 64;
    int count = epoll_wait(epoll, ready, maximum, timeout);
    for (int i = 0; i < count; i++) {
        data[i] = (long long)ready[i].data.u64;
        events[i] = 0;
        if (ready[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) events[i] |= 1;
        if (ready[i].events & EPOLLOUT) events[i] |= 2;
    }
    return count;
}

int gpslocd_open_process_root(int pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/root", pid);
    return open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

int gpslocd_is_fuse(const char *path) {
    struct statfs info;
    return statfs(path, &info) == 0 && info.f_type == 0x65735546 /* FUSE_SUPER_MAGIC */;
}
