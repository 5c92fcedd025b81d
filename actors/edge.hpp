#pragma once
#include <atomic>
#include <memory>
#include <string>

#include <caf/fwd.hpp>

#include "protocol/interfaces.hpp"
#include "protocol/openai_types.hpp"

#include "runtime/server/server_config.hpp"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace anchorage {

class trace_writer;
class http_front;
class edge_http_server;
class tokenizer;
class response_store;
struct render_limits;
enum class anthropic_route;

// The HTTP edge: an event loop (runtime/http/http_front) holds the connections and reads each
// request whole under the --http-* limits; a worker then answers it with cpp-httplib's routes,
// which parse and validate and talk to the conductor through a short-lived blocking actor per
// request (a caf::scoped_actor in the worker thread). A streaming client that goes away cancels
// its generation at the next step. docs/EDGE.md.
class http_edge {
 public:
  http_edge(caf::actor_system& sys, conductor_actor conductor, const server_config& cfg);
  ~http_edge();

  // Binds and starts serving (the front's loop and workers); returns the bound port (cfg.port 0
  // picks a free one). Throws std::runtime_error when it cannot bind.
  int start();
  // Stop accepting: new requests get 503 while running ones go on.
  void begin_drain() { draining_ = true; }
  bool draining() const { return draining_; }
  void stop();
  // The template, limits and tokenizer the conductor renders with: POST /v1/messages/count_tokens
  // renders a request with them (without them it answers 503).
  void set_prompt_renderer(const render_limits& limits, const tokenizer& tok);

 private:
  // One function per route; routes() registers them.
  void routes();
  void generate(request_kind kind, const httplib::Request& http, httplib::Response& res);
  // POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API), docs/SERVER.md.
  void messages(anthropic_route route, const httplib::Request& http, httplib::Response& res);
  // POST /v1/responses (OpenAI's Responses API), docs/SERVER.md; in edge_responses.cpp.
  void responses(const httplib::Request& http, httplib::Response& res);
  void models(httplib::Response& res) const;
  void health(httplib::Response& res) const;
  static void dashboard(httplib::Response& res);
  void metrics(const httplib::Request& http, httplib::Response& res);
  void cache_stats(const httplib::Request& http, httplib::Response& res);
  void cache_clear(const httplib::Request& http, httplib::Response& res);
  void cache_settings_get(const httplib::Request& http, httplib::Response& res);
  void disk_entries(const httplib::Request& http, httplib::Response& res);
  void holdings(const httplib::Request& http, httplib::Response& res);
  void cache_settings_set(const httplib::Request& http, httplib::Response& res);

  caf::actor_system& sys_;
  conductor_actor conductor_;
  admin_actor admin_;
  server_config cfg_;
  std::unique_ptr<edge_http_server> server_;
  std::unique_ptr<http_front> front_;
  std::unique_ptr<trace_writer> trace_;
  std::unique_ptr<const render_limits> render_limits_;  // set_prompt_renderer's
  std::unique_ptr<const tokenizer> tok_;
  // The stored Responses answers' conversations, for previous_response_id (shared with the
  // streams that add to it after their route returned).
  std::shared_ptr<response_store> stored_responses_;
  std::atomic<bool> draining_{false};
  std::atomic<long> next_id_{0};
  std::int64_t started_s_ = 0;
};

}  // namespace anchorage
