#pragma once
// The edge's listening socket.
#include <string>

namespace anchorage {

// A non-blocking listening TCP socket on host:port (0: a free port), backlog SOMAXCONN. Raises
// the process's soft limit of open files to its hard limit first, so the connection limit fits.
// Throws std::runtime_error naming host:port when it cannot resolve or bind.
int listen_on(const std::string& host, int port);
// The port a bound socket listens on.
int bound_port(int fd);

}  // namespace anchorage
