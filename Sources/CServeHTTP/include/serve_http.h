#ifndef GPSLOC_SERVE_HTTP_H
#define GPSLOC_SERVE_HTTP_H

// libmicrohttpd (Debian's libmicrohttpd-dev) for `gpsloc serve`: its header wants these first.
#include <stdarg.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <microhttpd.h>

// libmicrohttpd is opened when `gpsloc serve` starts (dlopen), not linked: it brings GnuTLS and
// p11-kit, whose start-up every other gpsloc command would pay for in memory.

/// Opens libmicrohttpd.so.12; NULL when it is ready, else why not (dlerror's words).
const char *gpsloc_http_load(void);

/// Binds and listens on a numeric IPv4 or IPv6 address (`host`) and `port` (0: any free one).
/// Returns the socket, or -1 with errno set; `bound_port` receives the port listened on.
int gpsloc_http_listen(const char *host, int port, int *bound_port);

/// Starts libmicrohttpd on `listen_fd` (a thread per connection, so a slow reader blocks only
/// its own), at most `connection_limit` connections, `per_ip_limit` per address, and a
/// connection closed after `timeout` seconds without progress. NULL when it cannot start.
struct MHD_Daemon *gpsloc_http_start(
    int listen_fd, int ipv6, unsigned connection_limit, unsigned per_ip_limit, unsigned timeout,
    MHD_AccessHandlerCallback handler, void *context);

/// Stops the daemon and waits for its connections' threads.
void gpsloc_http_stop(struct MHD_Daemon *daemon);

/// The connection's peer address as text (numeric), into `buffer`; "" when unknown.
void gpsloc_http_peer(struct MHD_Connection *connection, char *buffer, size_t size);

/// Calls `iterator` for each value of `kind` (headers, query arguments, cookies).
void gpsloc_http_values(
    struct MHD_Connection *connection, enum MHD_ValueKind kind, MHD_KeyValueIterator iterator, void *context);

/// A response of `size` bytes copied from `bytes` (libmicrohttpd keeps its own copy).
struct MHD_Response *gpsloc_http_copied_response(size_t size, const void *bytes);

/// A response of unknown size whose body `reader` produces (`done` frees `context`).
struct MHD_Response *gpsloc_http_stream_response(
    size_t block_size, MHD_ContentReaderCallback reader, void *context, MHD_ContentReaderFreeCallback done);

void gpsloc_http_add_header(struct MHD_Response *response, const char *name, const char *value);

/// Queues `response` with `status`, then releases this side's reference to it.
enum MHD_Result gpsloc_http_queue(struct MHD_Connection *connection, unsigned status, struct MHD_Response *response);

/// Releases a response that was not queued.
void gpsloc_http_destroy(struct MHD_Response *response);

#endif
