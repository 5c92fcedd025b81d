#pragma once
// The edge's event loop: one thread accepts every client connection and reads each request
// whole (head and body) under the limits of http_limits before a worker sees it; workers only
// answer complete requests. A client that sends slowly, or not at all, holds a file descriptor
// and a few bytes, never a worker. docs/EDGE.md says why this design and what it measured.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "runtime/http/http_limits.hpp"

namespace anchorage {

// One complete request handed to a worker, and the connection to answer it on. Used by one
// worker thread at a time; the connection stays the front's (the wire never closes it).
class http_wire {
 public:
  http_wire(int fd, std::string request, bool last, std::string peer_ip, int peer_port,
            long write_timeout_ms);
  // The request's bytes as the client sent them (head and body), less an `Expect: 100-continue`
  // line: the front already answered it.
  const std::string& request() const { return request_; }
  // Writes all `n` bytes; false when the client went away or did not read for the write timeout.
  bool write(const char* data, std::size_t n);
  // True when a write can go within the write timeout; false when it cannot or the client hung up
  // (closed or half-closed its side).
  bool writable() const;
  // The connection closes after this answer: the client asked, half-closed, reached the
  // keep-alive maximum, or the front is stopping.
  bool last() const { return last_; }
  const std::string& peer_ip() const { return peer_ip_; }
  int peer_port() const { return peer_port_; }

 private:
  int fd_;
  std::string request_;
  bool last_;
  std::string peer_ip_;
  int peer_port_;
  int write_timeout_ms_;
};

// What the front did with connections, for tests, metrics and the load tool.
struct http_front_counts {
  std::int64_t open = 0;         // connections open now
  std::int64_t accepted = 0;     // connections accepted since start
  std::int64_t refused = 0;      // answered 503 at --http-max-connections
  std::int64_t timed_out = 0;    // answered 408 (headers or body too slow)
  std::int64_t too_large = 0;    // answered 431 or 413
  std::int64_t malformed = 0;    // answered 400 or 501
  std::int64_t idle_closed = 0;  // closed idle (keep-alive over, or silent since connect)
  std::int64_t dispatched = 0;   // requests handed to a worker
};

class http_front {
 public:
  // Answers the request on `wire` on a worker thread; returns whether the connection may carry
  // another request. Must not throw (an exception closes the connection).
  using handler = std::function<bool(http_wire& wire)>;
  // The JSON body of an error the front answers itself (400, 408, 413, 431, 501, 503).
  using error_body = std::function<std::string(int status, const std::string& message)>;

  http_front(const http_limits& limits, std::size_t max_body_bytes, handler answer, error_body errors);
  ~http_front();
  http_front(const http_front&) = delete;
  http_front& operator=(const http_front&) = delete;

  // Binds host:port (0: a free port) and returns the port; throws std::runtime_error when it
  // cannot. Raises the soft limit of open files to the hard one, so --http-max-connections fits.
  int bind(const std::string& host, int port);
  // The listening socket (valid after bind, until stop).
  int listen_fd() const;
  // Starts the loop and the workers.
  void start();
  // Stops accepting, closes the connections not being answered, and waits for the workers'
  // answers to end (a handler that streams must notice the stop by itself). Idempotent.
  void stop();
  http_front_counts counts() const;

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace anchorage
