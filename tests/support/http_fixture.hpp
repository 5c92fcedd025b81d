#pragma once
// Helpers for the end-to-end HTTP tests: one whole server (actors/server.hpp) per test case on a
// loopback port picked by the kernel, plain httplib clients, an SSE reader, and the checks every
// OpenAI-shaped reply must pass.
#include <httplib.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "actors/server.hpp"
#include "runtime/server/server_config.hpp"

namespace anchorage::testing {

using json = nlohmann::json;

// One HTTP exchange as the client saw it.
struct http_reply {
  int status = -1;  // -1: no response came back (see error)
  httplib::Error error = httplib::Error::Success;
  std::string body;
  httplib::Headers headers;

  std::string header(const std::string& key) const {
    const auto it = headers.find(key);
    return it == headers.end() ? std::string() : it->second;
  }
  // The body as JSON; a test failure (not an exception escaping) when it is not JSON.
  json body_json() const {
    const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
    INFO("status " << status << ", body: " << body.substr(0, 400));
    REQUIRE_FALSE(j.is_discarded());
    return j;
  }
};

// One server-sent event: a `data: <json>` line, `data: [DONE]`, or a `: comment` line.
struct sse_event {
  enum class kind { data, done, comment } what = kind::data;
  json data;         // kind::data
  std::string text;  // the raw line
};

// A streamed response, read incrementally as the bytes arrive.
struct sse_stream {
  int status = -1;
  std::string content_type;
  httplib::Error error = httplib::Error::Success;
  std::string raw;                     // every byte received
  std::vector<sse_event> events;       // complete events, in order
  std::vector<std::string> malformed;  // lines that are neither JSON data, [DONE] nor comments
  std::size_t events_after_done = 0;   // anything after data: [DONE] (there must be nothing)
  bool aborted = false;                // the reader returned false and the client hung up
  std::string pending_;                // bytes of an event not yet terminated by a blank line

  bool done() const {
    return std::any_of(events.begin(), events.end(),
                       [](const sse_event& e) { return e.what == sse_event::kind::done; });
  }
  std::vector<json> chunks() const {
    std::vector<json> out;
    for (const auto& e : events)
      if (e.what == sse_event::kind::data) out.push_back(e.data);
    return out;
  }
  std::size_t comments() const {
    return static_cast<std::size_t>(std::count_if(
        events.begin(), events.end(), [](const sse_event& e) { return e.what == sse_event::kind::comment; }));
  }

  // Splits the bytes received so far into events (an event ends with a blank line; the server
  // writes one line per event).
  void feed(const char* data, std::size_t n) {
    raw.append(data, n);
    pending_.append(data, n);
    for (std::size_t end; (end = pending_.find("\n\n")) != std::string::npos;) {
      const std::string block = pending_.substr(0, end);
      pending_.erase(0, end + 2);
      std::size_t start = 0;
      while (start <= block.size()) {
        std::size_t nl = block.find('\n', start);
        if (nl == std::string::npos) nl = block.size();
        std::string line = block.substr(start, nl - start);
        start = nl + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        sse_event ev;
        ev.text = line;
        if (line[0] == ':') {
          ev.what = sse_event::kind::comment;
        } else if (line == "data: [DONE]") {
          ev.what = sse_event::kind::done;
        } else if (line.rfind("data: ", 0) == 0) {
          ev.data = json::parse(line.substr(6), nullptr, /*allow_exceptions=*/false);
          if (ev.data.is_discarded()) {
            malformed.push_back(line);
            continue;
          }
        } else {
          malformed.push_back(line);
          continue;
        }
        if (done()) ++events_after_done;
        events.push_back(std::move(ev));
      }
    }
  }
};

// A server on 127.0.0.1 and a port the kernel picks, built from `--preset tiny --port 0` and the
// given flags; stopped in the destructor. One slot unless the flags say --parallel: the tests of
// the resident prefix (a second session parks the first) are about one slot's rows.
class http_server {
 public:
  explicit http_server(const std::vector<std::string>& flags = {}) {
    // The suffix store is off unless the test turns it on (and then gives a --cache-dir): a
    // test never writes to the user's cache directory.
    std::vector<std::string> args = {"--preset", "tiny",       "--host", "127.0.0.1",      "--port",
                                     "0",        "--parallel", "1",      "--suffix-store", "off"};
    args.insert(args.end(), flags.begin(), flags.end());
    cfg_ = parse_server_args(args);
    // ANCHORAGE_ADMIN_TOKEN from the environment must not turn admin routes on behind a test's
    // back: only an explicit --admin-token does here.
    if (std::find(flags.begin(), flags.end(), "--admin-token") == flags.end()) cfg_.admin_token.clear();
    if (cfg_.cache_dir.empty()) cfg_.suffix.enabled = false;  // never the user's cache directory
    start();
  }
  // A server from a configuration built by the test (e.g. with model_override); host and port
  // are set to 127.0.0.1 and a port the kernel picks.
  struct from_config {};
  http_server(from_config, server_config cfg) : cfg_(std::move(cfg)) {
    cfg_.host = "127.0.0.1";
    cfg_.port = 0;
    if (cfg_.cache_dir.empty()) cfg_.suffix.enabled = false;  // never the user's cache directory
    start();
  }
  ~http_server() {
    if (server_) server_->stop();
  }
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  const server_config& config() const { return cfg_; }
  server& srv() { return *server_; }
  int port() const { return port_; }

  // A fresh client per call (a fresh connection: tests never depend on keep-alive). The read
  // timeout is generous: a non-streaming request's reply only comes after its whole prefill.
  std::unique_ptr<httplib::Client> client(int read_timeout_s = 120) const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_connection_timeout(5, 0);
    c->set_read_timeout(read_timeout_s, 0);
    c->set_write_timeout(30, 0);
    c->set_keep_alive(false);
    return c;
  }

  http_reply get(const std::string& path, const httplib::Headers& headers = {}) const {
    auto c = client();
    return to_reply(c->Get(path.c_str(), headers));
  }
  http_reply post(const std::string& path, const std::string& body, const httplib::Headers& headers = {},
                  const std::string& content_type = "application/json") const {
    auto c = client();
    return to_reply(c->Post(path.c_str(), headers, body, content_type.c_str()));
  }
  http_reply post_json(const std::string& path, const json& body,
                       const httplib::Headers& headers = {}) const {
    return post(path, body.dump(), headers);
  }

  // POSTs `body` and reads the response as a stream of server-sent events. After each complete
  // event `keep_reading(stream)` decides whether to go on; returning false makes httplib abort
  // the connection (the client going away mid-stream). A non-2xx reply's body lands in `raw`.
  sse_stream stream(const std::string& path, const json& body,
                    const std::function<bool(const sse_stream&)>& keep_reading = {},
                    const httplib::Headers& headers = {}) const {
    sse_stream s;
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.body = body.dump();
    for (const auto& [k, v] : headers) req.set_header(k, v);
    req.set_header("Content-Type", "application/json");
    req.set_header("Accept", "text/event-stream");
    req.response_handler = [&s](const httplib::Response& r) {
      s.status = r.status;
      s.content_type = r.get_header_value("Content-Type");
      return true;
    };
    req.content_receiver = [&s, &keep_reading](const char* data, std::size_t n, std::uint64_t,
                                               std::uint64_t) {
      const std::size_t before = s.events.size();
      s.feed(data, n);
      if (keep_reading && s.events.size() > before && !keep_reading(s)) {
        s.aborted = true;
        return false;
      }
      return true;
    };
    auto c = client();
    auto res = c->send(req);
    s.error = res.error();
    return s;
  }

  // The request ledger's recent entries, from GET /v1/cache/stats.
  json ledger() const {
    const http_reply r = get("/v1/cache/stats");
    REQUIRE(r.status == 200);
    const json j = r.body_json();
    REQUIRE(j.contains("ledger"));
    REQUIRE(j["ledger"].is_array());
    return j["ledger"];
  }
  // Waits until nothing runs or waits and every write (disk, spill, suffix store) is committed,
  // the stats routes showing it (server::quiesce); whether that came within `within`.
  bool quiesce(std::chrono::milliseconds within = std::chrono::seconds(30)) const {
    return server_->quiesce(within);
  }

  // Waits until at least `n` requests run on the board at once (server::wait_running); whether
  // that came within `within`.
  bool wait_running(std::size_t n, std::chrono::milliseconds within = std::chrono::seconds(10)) const {
    return server_->wait_running(n, within);
  }

  // Waits until the stats show at least `n` idle runs of the compaction worker finished
  // (server::wait_idle_runs); whether that came within `within`.
  bool wait_idle_runs(long n, std::chrono::milliseconds within = std::chrono::seconds(60)) const {
    return server_->wait_idle_runs(n, within);
  }

  // The ledger entry of request `id` once the server is quiet (the entry is written when the
  // board reports the request done, which for a cancelled stream comes after the client left).
  std::optional<json> ledger_entry_of(const std::string& id,
                                      std::chrono::milliseconds within = std::chrono::seconds(10)) const {
    if (!quiesce(within)) return std::nullopt;
    for (const json& e : ledger())
      if (e.value("id", "") == id) return e;
    return std::nullopt;
  }

 private:
  static http_reply to_reply(const httplib::Result& res) {
    http_reply r;
    r.error = res.error();
    if (res) {
      r.status = res->status;
      r.body = res->body;
      r.headers = res->headers;
    }
    return r;
  }

  void start() {
    server_ = std::make_unique<server>(cfg_);
    port_ = server_->start();
    REQUIRE(port_ > 0);
    wait_ready();
  }

  // start() returns once the socket is bound and listening (httplib's bind_to_any_port calls
  // listen()), so connections queue in the backlog even before the accept loop runs. Still,
  // probe /health a few times with a short backoff rather than trusting that detail of the
  // library: the first request may race the listener thread. This also makes sure the accept
  // loop is running before the destructor's stop() (httplib's Server::stop() does nothing until
  // the listener thread has started).
  void wait_ready() {
    auto backoff = std::chrono::milliseconds(2);
    for (int attempt = 0; attempt < 12; ++attempt) {
      auto c = client(5);
      auto res = c->Get("/health");
      if (res && res->status == 200) return;
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(250));
    }
    FAIL("the server on port " << port_ << " did not answer GET /health");
  }

  server_config cfg_;
  std::unique_ptr<server> server_;
  int port_ = 0;
};

// {"error": {"message": non-empty string, "type": string, "param": string or null, "code"}}.
inline void check_error_body(const http_reply& r, int status, const std::string& type = {},
                             const std::optional<std::string>& param = std::nullopt) {
  INFO("reply " << r.status << ": " << r.body.substr(0, 400));
  REQUIRE(r.status == status);
  CHECK(r.header("Content-Type").find("application/json") == 0);
  const json j = r.body_json();
  REQUIRE(j.is_object());
  REQUIRE(j.size() == 1);
  REQUIRE(j.contains("error"));
  const json& e = j["error"];
  REQUIRE(e.is_object());
  CHECK(e.size() == 4);
  REQUIRE(e.contains("message"));
  CHECK(e["message"].is_string());
  CHECK_FALSE(e["message"].get<std::string>().empty());
  REQUIRE(e.contains("type"));
  CHECK(e["type"].is_string());
  REQUIRE(e.contains("param"));
  CHECK((e["param"].is_string() || e["param"].is_null()));
  REQUIRE(e.contains("code"));
  CHECK((e["code"].is_string() || e["code"].is_null()));
  if (!type.empty()) CHECK(e["type"] == type);
  if (param) {
    if (param->empty())
      CHECK(e["param"].is_null());
    else
      CHECK(e["param"] == *param);
  }
}

// usage {prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details.cached_tokens}
// and x_cache {source, resumed_at, prefilled_tokens, restore_ms, ttft_ms}, as a cold request
// (no cache tier exists yet) reports them.
inline void check_usage_and_cache(const json& body) {
  INFO(body.dump().substr(0, 600));
  REQUIRE(body.contains("usage"));
  const json& u = body["usage"];
  REQUIRE(u.is_object());
  REQUIRE(u.contains("prompt_tokens"));
  REQUIRE(u.contains("completion_tokens"));
  REQUIRE(u.contains("total_tokens"));
  REQUIRE(u["prompt_tokens"].is_number_integer());
  REQUIRE(u["completion_tokens"].is_number_integer());
  CHECK(u["prompt_tokens"].get<long>() > 0);
  CHECK(u["completion_tokens"].get<long>() >= 0);
  CHECK(u["total_tokens"].get<long>() == u["prompt_tokens"].get<long>() + u["completion_tokens"].get<long>());
  REQUIRE(u.contains("prompt_tokens_details"));
  REQUIRE(u["prompt_tokens_details"].contains("cached_tokens"));
  REQUIRE(u["prompt_tokens_details"]["cached_tokens"].is_number_integer());
  const long cached = u["prompt_tokens_details"]["cached_tokens"].get<long>();
  CHECK(cached >= 0);

  REQUIRE(body.contains("x_cache"));
  const json& x = body["x_cache"];
  REQUIRE(x.is_object());
  for (const char* k : {"source", "resumed_at", "prefilled_tokens", "restore_ms", "ttft_ms"}) {
    INFO("x_cache." << k);
    REQUIRE(x.contains(k));
  }
  REQUIRE(x["source"].is_string());
  REQUIRE(x["resumed_at"].is_number_integer());
  REQUIRE(x["prefilled_tokens"].is_number_integer());
  REQUIRE(x["restore_ms"].is_number());
  REQUIRE(x["ttft_ms"].is_number());
  const long prompt = u["prompt_tokens"].get<long>();
  // Cold from position 0, or resumed: the restored state covers [0, resumed_at), the rest is
  // prefilled.
  const std::string source = x["source"];
  // (response: the response cache's answer, nothing prefilled: resumed_at is the whole prompt)
  CHECK((source == "cold" || source == "resident" || source == "end" || source == "store" ||
         source == "response"));
  if (source == "cold")
    CHECK(x["resumed_at"] == 0);
  else
    CHECK(x["resumed_at"].get<long>() > 0);
  CHECK(x["prefilled_tokens"].get<long>() == prompt - x["resumed_at"].get<long>());
  CHECK(cached == prompt - x["prefilled_tokens"].get<long>());
  CHECK(x["restore_ms"].get<double>() >= 0);
  CHECK(x["ttft_ms"].get<double>() >= 0);
}

}  // namespace anchorage::testing
