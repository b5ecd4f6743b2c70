#include "serve_http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <netdb.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

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
    unsigned int flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL;
    if (ipv6) flags |= MHD_USE_IPv6;
    return MHD_start_daemon(
        flags, 0, NULL, NULL, handler, context,
        MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
        MHD_OPTION_CONNECTION_LIMIT, connection_limit,
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
        MHD_OPTION_CONNECTION_TIMEOUT, timeout,
        MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768,
        MHD_OPTION_END);
}

void gpsloc_http_peer(struct MHD_Connection *connection, char *buffer, size_t size) {
    buffer[0] = 0;
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)address)->sin6_addr, buffer, (socklen_t)size);
    else if (address->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)address)->sin_addr, buffer, (socklen_t)size);
}

struct MHD_Response *gpsloc_http_copied_response(size_t size, const void *bytes) {
    return MHD_create_response_from_buffer(size, (void *)bytes, MHD_RESPMEM_MUST_COPY);
}
