#include "serve_http.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct {
    struct MHD_Daemon *(*start)(unsigned int, uint16_t, MHD_AcceptPolicyCallback, void *, MHD_AccessHandlerCallback,
                                void *, ...);
    void (*stop)(struct MHD_Daemon *);
    const union MHD_ConnectionInfo *(*info)(struct MHD_Connection *, enum MHD_ConnectionInfoType, ...);
    int (*values)(struct MHD_Connection *, enum MHD_ValueKind, MHD_KeyValueIterator, void *);
    struct MHD_Response *(*from_buffer)(size_t, void *, enum MHD_ResponseMemoryMode);
    struct MHD_Response *(*from_callback)(uint64_t, size_t, MHD_ContentReaderCallback, void *,
                                          MHD_ContentReaderFreeCallback);
    enum MHD_Result (*add_header)(struct MHD_Response *, const char *, const char *);
    enum MHD_Result (*queue)(struct MHD_Connection *, unsigned int, struct MHD_Response *);
    void (*destroy)(struct MHD_Response *);
} mhd;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char problem[512];

static void load(void) {
    void *library = dlopen("libmicrohttpd.so.12", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(problem, sizeof problem, "%s", dlerror());
        return;
    }
#define FIND(field, symbol)                                                                      \
    *(void **)(&mhd.field) = dlsym(library, symbol);                                            \
    if (mhd.field == NULL) {                                                                     \
        snprintf(problem, sizeof problem, "libmicrohttpd.so.12 has no %s", symbol);              \
        return;                                                                                  \
    }
    FIND(start, "MHD_start_daemon")
    FIND(stop, "MHD_stop_daemon")
    FIND(info, "MHD_get_connection_info")
    FIND(values, "MHD_get_connection_values")
    FIND(from_buffer, "MHD_create_response_from_buffer")
    FIND(from_callback, "MHD_create_response_from_callback")
    FIND(add_header, "MHD_add_response_header")
    FIND(queue, "MHD_queue_response")
    FIND(destroy, "MHD_destroy_response")
#undef FIND
}

const char *gpsloc_http_load(void) {
    pthread_once(&once, load);
    return problem[0] ? problem : NULL;
}

int gpsloc_http_listen(const char *host, int port, int *bound_port) {
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo *found = NULL;
    if (getaddrinfo(host, service, &hints, &found) != 0 || found == NULL) {
        errno = EINVAL;
        return -1;
    }
    int fd = socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        freeaddrinfo(found);
        return -1;
    }
    int on = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (found->ai_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    if (bind(fd, found->ai_addr, found->ai_addrlen) != 0 || listen(fd, 64) != 0) {
        int saved = errno;
        close(fd);
        freeaddrinfo(found);
        errno = saved;
        return -1;
    }
    freeaddrinfo(found);
    struct sockaddr_storage bound;
    socklen_t length = sizeof bound;
    if (getsockname(fd, (struct sockaddr *)&bound, &length) == 0) {
        if (bound.ss_family == AF_INET6) *bound_port = ntohs(((struct sockaddr_in6 *)&bound)->sin6_port);
        else *bound_port = ntohs(((struct sockaddr_in *)&bound)->sin_port);
    }
    return fd;
}

struct MHD_Daemon *gpsloc_http_start(
    int listen_fd, int ipv6, unsigned connection_limit, unsigned per_ip_limit, unsigned timeout,
    MHD_AccessHandlerCallback handler, void *context) {
    if (gpsloc_http_load() != NULL) return NULL;
    unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (ipv6) flags |= MHD_USE_IPv6;
    return mhd.start(
        flags, 0, NULL, NULL, handler, context,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
        MHD_OPTION_END);
}

void gpsloc_http_stop(struct MHD_Daemon *daemon) { mhd.stop(daemon); }

void gpsloc_http_peer(struct MHD_Connection *connection, char *buffer, size_t size) {
    buffer[0] = 0;
    const union MHD_ConnectionInfo *info = mhd.info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, buffer, (socklen_t)size);
    else if (address->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, buffer, (socklen_t)size);
}

void gpsloc_http_values(
    struct MHD_Connection *connection, enum MHD_ValueKind kind, MHD_KeyValueIterator iterator, void *context) {
    mhd.values(connection, kind, iterator, context);
}

struct MHD_Response *gpsloc_http_copied_response(size_t size, const void *bytes) {
    return mhd.from_buffer(size, (void *)bytes, MHD_RESPMEM_MUST_COPY);
}

struct MHD_Response *gpsloc_http_stream_response(
    size_t block_size, MHD_ContentReaderCallback reader, void *context, MHD_ContentReaderFreeCallback done) {
    return mhd.from_callback(MHD_SIZE_UNKNOWN, block_size, reader, context, done);
}

void gpsloc_http_add_header(struct MHD_Response *response, const char *name, const char *value) {
    mhd.add_header(response, name, value);
}

enum MHD_Result gpsloc_http_queue(struct MHD_Connection *connection, unsigned status, struct MHD_Response *response) {
    enum MHD_Result result = mhd.queue(connection, status, response);
    mhd.destroy(response);
    return result;
}

void gpsloc_http_destroy(struct MHD_Response *response) { mhd.destroy(response); }
