#ifndef GPSLOC_SERVE_HTTP_H
#define GPSLOC_SERVE_HTTP_H

// libmicrohttpd (Debian's libmicrohttpd-dev) for `gpsloc serve`: its header wants these first.
#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>

/// Binds and listens on a numeric IPv4 or IPv6 address (`host`) and `port` (0: any free one).
/// Returns the socket, or -1 with errno set; `bound_port` receives the port listened on.
int gpsloc_http_listen(const char *host, int port, int *bound_port);

/// Starts libmicrohttpd on `listen_fd` (a thread per connection, so a slow reader blocks only
/// its own), at most `connection_limit` connections, `per_ip_limit` per address, and a
/// connection closed after `timeout` seconds without progress. NULL when it cannot start.
struct MHD_Daemon *gpsloc_http_start(
    int listen_fd, int ipv6, unsigned connection_limit, unsigned per_ip_limit, unsigned timeout,
    MHD_AccessHandlerCallback handler, void *context);

/// The connection's peer address as text (numeric), into `buffer`; "" when unknown.
void gpsloc_http_peer(struct MHD_Connection *connection, char *buffer, size_t size);

/// A response of `size` bytes copied from `bytes` (libmicrohttpd keeps its own copy).
struct MHD_Response *gpsloc_http_copied_response(size_t size, const void *bytes);

#endif
