#ifndef GPSLOCATION_CBROKERSUPPORT_H
#define GPSLOCATION_CBROKERSUPPORT_H

// What gpslocd needs from Linux that Swift's Glibc module does not carry: the peer's
// credentials, pidfds, and epoll (whose event struct is packed on x86-64).

/// SO_PEERCRED of a connected Unix socket: 0, or -1 with errno.
int gpslocd_peer_credentials(int fd, int *pid, unsigned *uid, unsigned *gid);
/// SO_PEERPIDFD (Linux 6.5+): a pidfd for the very process that connected, or -1.
int gpslocd_peer_pidfd(int fd);
/// pidfd_open(pid): -1 with errno when the process is gone.
int gpslocd_pidfd_open(int pid);
/// 1 when the process a pidfd pins is still alive (the pidfd does not poll readable), 0 when it
/// exited, -1 on error; needs no permission over the process.
int gpslocd_pidfd_alive(int pidfd);

/// open(/proc/PID/root, O_PATH | O_DIRECTORY): the process's root folder, or -1 with errno.
int gpslocd_open_process_root(int pid);
/// 1 when `path` is on a FUSE file system (statfs), else 0.
int gpslocd_is_fuse(const char *path);

/// accept4 with SOCK_NONBLOCK | SOCK_CLOEXEC.
int gpslocd_accept(int listener);

int gpslocd_epoll_create(void);
/// Adds fd with events: 1 read, 2 write, 4 edge-triggered; `data` comes back from wait.
int gpslocd_epoll_add(int epoll, int fd, unsigned events, long long data);
/// Changes the events fd is watched for (the same flags as add).
int gpslocd_epoll_modify(int epoll, int fd, unsigned events, long long data);
int gpslocd_epoll_remove(int epoll, int fd);
/// Waits; fills data[i] and events[i] (1 readable or hung up, 2 writable); returns the count.
int gpslocd_epoll_wait(int epoll, long long *data, unsigned *events, int maximum, int timeout);

/// The inode of the socket at the other end of a connected Unix socket (sock_diag's
/// UDIAG_SHOW_PEER), or 0 when it cannot be known.
unsigned long gpslocd_unix_peer_inode(int fd);

/// One descriptor found by `gpslocd_scan_holders`: a socket of interest (`inode`, `pty` -1) or
/// the master side of a pseudo-terminal (`pty` its index, `inode` 0).
struct gpslocd_holding {
    int pid;
    unsigned long inode;
    int pty;
};

/// Every process whose /proc entry belongs to `uid`: each descriptor that is one of the
/// `inodes` sockets, and each /dev/ptmx descriptor with the pty it is master of. Returns how
/// many were written to `out` (at most `maximum`), or -1; `unreadable`: the processes of `uid`
/// whose descriptors could not be read (`/proc/PID/fdinfo`: gpslocd needs root or CAP_SYS_PTRACE).
int gpslocd_scan_holders(unsigned uid, const unsigned long *inodes, int inode_count, struct gpslocd_holding *out,
                         int maximum, int *unreadable);

#endif
