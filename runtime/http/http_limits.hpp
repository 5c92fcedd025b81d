#pragma once
#include <cstddef>

namespace anchorage {

// The edge's limits on its client connections (the --http-* flags; docs/EDGE.md says why each
// default). Every limit is enforced by the event loop of runtime/http/http_front.hpp before a
// worker sees the request, so no client can hold a worker by sending slowly.
struct http_limits {
  int threads = 64;                         // --http-threads: workers for POST requests (generations)
  int quick_threads = 4;                    // workers for the other routes (/health, /metrics, ...)
  int max_connections = 1024;               // --http-max-connections: beyond, 503 + Retry-After
  std::size_t max_header_bytes = 16 << 10;  // --http-max-header-kb: request line + headers; 431
  long header_timeout_ms = 10'000;          // --http-header-timeout-s: first byte to the blank line; 408
  long body_timeout_ms = 60'000;            // --http-body-timeout-s: end of the headers to the body's end
  long write_timeout_ms = 30'000;           // --http-write-timeout-s: an answer blocked on a full socket
  long keepalive_timeout_ms = 5'000;        // --http-keepalive-s: an idle connection between requests
  int keepalive_max = 100;                  // --http-keepalive-max: requests on one connection
  long linger_ms = 2'000;  // after an error answer: read and drop what the client still sends
};

}  // namespace anchorage
