#pragma once
// cpp-httplib behind the edge's event loop (runtime/http/http_front.hpp): the loop reads a
// request whole under its limits, then a worker hands its bytes to httplib's request processing
// (routing, parsing, the chunked writer of streams) through a Stream over the http_wire.
#include <httplib.h>

#include "runtime/http/http_front.hpp"

namespace anchorage {

class edge_http_server : public httplib::Server {
 public:
  // Answers the one request on `wire` with the routes registered; whether the connection may
  // carry another (httplib's answer went out and neither side asked to close).
  bool answer(http_wire& wire);
  // httplib ends a streamed answer when its server is "shutting down", which it reads from its
  // own listening socket; the listener here is the front's, so open() marks it serving and
  // close() makes every stream in progress end at its next chunk.
  void open(int listen_fd) { svr_sock_ = listen_fd; }
  void close() { svr_sock_ = INVALID_SOCKET; }
};

}  // namespace anchorage
