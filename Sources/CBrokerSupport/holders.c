#define _GNU_SOURCE
#include "CBrokerSupport.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

// The inode of the socket at the other end of the connected Unix socket `fd`, from the
// kernel's socket diagnostics (NETLINK_SOCK_DIAG, UDIAG_SHOW_PEER — what `ss -xp` reads; no
// privilege needed). 0 when it cannot be known.
unsigned long gpslocd_unix_peer_inode(int fd) {
    struct stat own;
    if (fstat(fd, &own) != 0) return 0;
    int diag = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (diag < 0) return 0;
    struct {
        struct nlmsghdr header;
        struct unix_diag_req request;
    } message;
    memset(&message, 0, sizeof message);
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST;
    message.request.sdiag_family = AF_UNIX;
    message.request.udiag_states = ~0U;
    message.request.udiag_ino = (unsigned)own.st_ino;
    message.request.udiag_show = UDIAG_SHOW_PEER;
    message.request.udiag_cookie[0] = ~0U;
    message.request.udiag_cookie[1] = ~0U;
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(diag, &message, sizeof message, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        close(diag);
        return 0;
    }
    // Bounded: one answer for one socket; a reply that never comes ends at the timeout.
    struct timeval wait = {.tv_sec = 1, .tv_usec = 0};
    setsockopt(diag, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof wait);
    long buffer[1024];
    ssize_t length = recv(diag, buffer, sizeof buffer, 0);
    close(diag);
    unsigned long peer = 0;
    for (struct nlmsghdr *header = (struct nlmsghdr *)buffer; length > 0 && NLMSG_OK(header, (size_t)length);
         header = NLMSG_NEXT(header, length)) {
        if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY) break;
        struct unix_diag_msg *answer = NLMSG_DATA(header);
        if (answer->udiag_ino != own.st_ino) continue;
        int left = (int)(header->nlmsg_len - NLMSG_LENGTH(sizeof *answer));
        for (struct rtattr *attribute = (struct rtattr *)(answer + 1); RTA_OK(attribute, left);
             attribute = RTA_NEXT(attribute, left)) {
            if (attribute->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(attribute) >= sizeof(unsigned)) {
                peer = *(unsigned *)RTA_DATA(attribute);
            }
        }
    }
    return peer;
}

static int all_digits(const char *text) {
    if (!*text) return 0;
    for (; *text; text++) {
        if (*text < '0' || *text > '9') return 0;
    }
    return 1;
}

// What /proc/PID/fdinfo/FD says of one descriptor: its mount (`mnt_id:`), inode (`ino:`) and,
// for the master side of a pseudo-terminal, the pty it is master of (`tty-index:`, else -1).
// fdinfo, not the fd links: it needs only CAP_SYS_PTRACE of a process that is not root (the fd
// folder is mode 0500 and would need CAP_DAC_READ_SEARCH as well, which reads every file).
static int read_fdinfo(const char *path, long *mount, unsigned long *inode, int *pty) {
    int file = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (file < 0) return -1;
    char text[1024];
    ssize_t length = read(file, text, sizeof text - 1);
    close(file);
    if (length <= 0) return -1;
    text[length] = 0;
    *mount = -1;
    *inode = 0;
    *pty = -1;
    for (char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "mnt_id:", 7) == 0) *mount = strtol(line + 7, NULL, 10);
        else if (strncmp(line, "ino:", 4) == 0) *inode = strtoul(line + 4, NULL, 10);
        else if (strncmp(line, "tty-index:", 10) == 0) *pty = (int)strtol(line + 10, NULL, 10);
    }
    return 0;
}

// The mount sockets live on (sockfs), from a socket of our own.
static long socket_mount(void) {
    int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe < 0) return -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fdinfo/%d", probe);
    long mount = -1;
    unsigned long inode = 0;
    int pty = -1;
    read_fdinfo(path, &mount, &inode, &pty);
    close(probe);
    return mount;
}

int gpslocd_scan_holders(unsigned uid, const unsigned long *inodes, int inode_count, struct gpslocd_holding *out,
                         int maximum, int *unreadable) {
    *unreadable = 0;
    long sockets = socket_mount();
    DIR *proc = opendir("/proc");
    if (!proc || sockets < 0) {
        if (proc) closedir(proc);
        return -1;
    }
    int found = 0;
    struct dirent *entry;
    while ((entry = readdir(proc)) != NULL) {
        if (!all_digits(entry->d_name)) continue;
        int pid = atoi(entry->d_name);
        struct stat owner;
        char path[96];
        snprintf(path, sizeof path, "/proc/%s", entry->d_name);
        if (stat(path, &owner) != 0 || owner.st_uid != uid) continue;
        snprintf(path, sizeof path, "/proc/%s/fdinfo", entry->d_name);
        DIR *fds = opendir(path);
        if (!fds) {
            if (errno == EACCES || errno == EPERM) (*unreadable)++;
            continue;
        }
        struct dirent *fd;
        while ((fd = readdir(fds)) != NULL) {
            if (fd->d_name[0] == '.') continue;
            snprintf(path, sizeof path, "/proc/%d/fdinfo/%s", pid, fd->d_name);
            long mount;
            unsigned long inode;
            int pty;
            if (read_fdinfo(path, &mount, &inode, &pty) != 0) continue;
            if (pty >= 0) {
                if (found < maximum) out[found++] = (struct gpslocd_holding){.pid = pid, .inode = 0, .pty = pty};
            } else if (mount == sockets) {
                for (int i = 0; i < inode_count; i++) {
                    if (inodes[i] == inode && found < maximum) {
                        out[found++] = (struct gpslocd_holding){.pid = pid, .inode = inode, .pty = -1};
                    }
                }
            }
        }
        closedir(fds);
    }
    closedir(proc);
    return found;
}
