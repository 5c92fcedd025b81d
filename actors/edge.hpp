#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include <caf/fwd.hpp>

#include "protocol/interfaces.hpp"
#include "protocol/openai_types.hpp"

#include "runtime/server/server_config.hpp"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace anchorage {

class trace_writer;

// The HTTP edge (cpp-httplib): parses and validates, then talks to the conductor through a
// short-lived blocking actor per request (a caf::scoped_actor in the HTTP worker thread).
// A streaming client that goes away cancels its generation at the next step.
class http_edge {
 public:
  http_edge(caf::actor_system& sys, conductor_actor conductor, const server_config& cfg);
  ~http_edge();

  // Binds and starts serving in a thread of its own; returns the bound port (cfg.port 0 picks
  // a free one). Throws std::runtime_error when it cannot bind.
  int start();
  // Stop accepting: new requests get 503 while running ones go on.
  void begin_drain() { draining_ = true; }
  bool draining() const { return draining_; }
  void stop();

 private:
  // One function per route; routes() registers them.
  void routes();
  void generate(request_kind kind, const httplib::Request& http, httplib::Response& res);
  void models(httplib::Response& res) const;
  void health(httplib::Response& res) const;
  void metrics(httplib::Response& res);
  void cache_stats(httplib::Response& res);
  void cache_clear(const httplib::Request& http, httplib::Response& res);

  caf::actor_system& sys_;
  conductor_actor conductor_;
  admin_actor admin_;
  server_config cfg_;
  std::unique_ptr<httplib::Server> server_;
  std::unique_ptr<trace_writer> trace_;
  std::thread thread_;
  std::atomic<bool> draining_{false};
  std::atomic<long> next_id_{0};
  std::int64_t started_s_ = 0;
};

}  // namespace anchorage
