#include "actors/edge.hpp"

#include <httplib.h>

#include <caf/all.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>

#include "actors/admin.hpp"
#include "actors/edge_exchange.hpp"
#include "actors/edge_stream.hpp"
#include "actors/edge_stream_step.hpp"
#include "protocol/error_code.hpp"
#include "runtime/api/anthropic_request.hpp"
#include "runtime/api/anthropic_response.hpp"
#include "runtime/api/anthropic_sse_encoder.hpp"
#include "runtime/api/openai_request.hpp"
#include "runtime/api/openai_response.hpp"
#include "runtime/dashboard/dashboard_page.hpp"
#include "runtime/api/response_store.hpp"
#include "runtime/api/sse_encoder.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/io/uring_env.hpp"
#include "runtime/http/http_front.hpp"
#include "runtime/server/trace.hpp"
#include "runtime/text/template/prompt_render.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {
namespace {

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(json_text(body), "application/json");
}

void send_error(httplib::Response& res, const api_error& e) { send_json(res, e.status, error_body(e)); }

std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A generation request that ends in an error before any byte of its answer went out.
void fail(trace_writer* trace, const httplib::Request& http, httplib::Response& res, const api_error& e) {
  if (trace) trace->record(http.path, http.body, trace_error(e), nullptr);
  send_error(res, e);
}

// A request without "stream": waits for the end and answers one JSON body.
void answer_whole(exchange& ex, trace_writer* trace, request_kind kind, const std::string& id,
                  std::int64_t created, const std::string& model, const httplib::Request& http,
                  httplib::Response& res) {
  for (;;) {
    stream_event ev = ex.next();
    if (ev.what == stream_event::kind::failed) return fail(trace, http, res, ev.error);
    if (ev.what != stream_event::kind::finished) continue;
    if (trace)
      trace->record(http.path, http.body, trace_outcome(kind, ev.finish_reason, ev.output, ev.usage),
                    trace_ledger(ev.ledger));
    if (kind == request_kind::chat)
      return send_json(res, 200,
                       chat_body(id, created, model, ev.output, ev.finish_reason, ev.usage, ev.cache));
    return send_json(
        res, 200,
        completion_body(id, created, model, ev.output.content, ev.finish_reason, ev.usage, ev.cache));
  }
}

// The Anthropic routes' counterparts of send_error and fail: the same status, Anthropic's shape.
bool anthropic_path(const std::string& path) { return path.rfind("/v1/messages", 0) == 0; }

void send_anthropic_error(httplib::Response& res, const api_error& e) {
  res.status = e.status;
  res.set_content(anthropic_json_text(anthropic_error_body(e)), "application/json");
}

void fail_anthropic(trace_writer* trace, const httplib::Request& http, httplib::Response& res,
                    const api_error& e) {
  if (trace) trace->record(http.path, http.body, trace_error(e), nullptr);
  send_anthropic_error(res, e);
}

// A Messages request without "stream": waits for the end and answers one message.
void answer_whole_anthropic(exchange& ex, trace_writer* trace, const std::string& id,
                            const std::string& model, const httplib::Request& http, httplib::Response& res) {
  for (;;) {
    stream_event ev = ex.next();
    if (ev.what == stream_event::kind::failed) return fail_anthropic(trace, http, res, ev.error);
    if (ev.what != stream_event::kind::finished) continue;
    if (trace)
      trace->record(http.path, http.body,
                    trace_outcome(request_kind::chat, ev.finish_reason, ev.output, ev.usage),
                    trace_ledger(ev.ledger));
    res.status = 200;
    res.set_content(anthropic_json_text(anthropic_message_body(id, model, ev.output, ev.finish_reason,
                                                               ev.usage, ev.cache, ev.stop_sequence)),
                    "application/json");
    return;
  }
}

// Operator routes go through the admin actor, which checks the token and the tier; its
// error_codes become their HTTP status and message (protocol/error_code.hpp's describe()).
template <class... Ts>
void ask_admin(caf::actor_system& sys, const admin_actor& admin, httplib::Response& res,
               const char* content_type, Ts... args) {
  caf::scoped_actor self{sys};
  self->request(admin, std::chrono::seconds(10), args...)
      .receive([&](std::string& text) { res.set_content(text, content_type); },
               [&](caf::error& err) {
                 if (err.category() == caf::atom("anchorage")) {
                   const error_code_text t = describe(static_cast<error_code>(err.code()));
                   // A context string says what exactly was wrong (a setting's name and range).
                   const caf::message& ctx = err.context();
                   const bool said = ctx.size() == 1 && ctx.match_element<std::string>(0);
                   return send_error(
                       res, {t.status, t.type, said ? ctx.get_as<std::string>(0) : t.message, t.param});
                 }
                 send_error(res, {503, "server_error", "the server did not answer: " + sys.render(err), ""});
               });
}

// A secret in a URL ends up in access logs and proxies' histories: an operator route refuses a
// query parameter whose name says it holds one (token, key, secret, password, auth), whatever
// its value, and says where the admin token goes. True when it answered.
bool secret_in_url(const httplib::Request& q, httplib::Response& res) {
  for (const auto& [name, value] : q.params) {
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (const char* word : {"token", "key", "secret", "password", "auth"}) {
      if (lower.find(word) == std::string::npos) continue;
      send_error(res,
                 {400, "invalid_request_error",
                  "the query parameter '" + name +
                      "' looks like a secret, and a secret in the URL is kept in logs: send the admin token "
                      "in an Authorization: Bearer or X-Admin-Token header instead",
                  name});
      return true;
    }
  }
  return false;
}

// httplib's own refusals (no route, a body over the limit, a request it could not read).
void unreadable_request(const httplib::Request& q, httplib::Response& res) {
  if (!res.body.empty()) return;
  const auto answer = anthropic_path(q.path) ? send_anthropic_error : send_error;
  if (res.status == 404)
    return answer(res, {404, "not_found_error", "no route " + q.method + " " + q.path, ""});
  if (res.status == 413)
    return answer(res, {413, "invalid_request_error",
                        "the request body is larger than the server accepts (--max-body-mb)", ""});
  answer(res, {res.status, "invalid_request_error",
               "the request could not be read (HTTP " + std::to_string(res.status) +
                   "; a POST needs a body with its Content-Length)",
               ""});
}

void internal_error(const httplib::Request& q, httplib::Response& res, std::exception_ptr ep) {
  std::string what = "internal error";
  try {
    if (ep) std::rethrow_exception(ep);
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  if (anthropic_path(q.path)) return send_anthropic_error(res, {500, "api_error", what, ""});
  send_error(res, {500, "server_error", what, ""});
}

}  // namespace

http_edge::http_edge(caf::actor_system& sys, conductor_actor conductor, const server_config& cfg)
    : sys_(sys),
      conductor_(std::move(conductor)),
      cfg_(cfg),
      server_(std::make_unique<edge_http_server>()),
      stored_responses_(std::make_shared<response_store>()) {
  started_s_ = unix_seconds();
  // The settings file is written through an env of the admin's own (a small ring, no O_DIRECT).
  std::shared_ptr<file_env> settings_env;
  if (!cfg_.cache_dir.empty())
    settings_env = std::make_shared<uring_env>(uring_env_options{2, 1u << 16, false});
  admin_ = sys_.spawn(admin, cfg_.admin_token, conductor_, live_settings(cfg_), std::move(settings_env));
  if (!cfg_.trace_path.empty()) {
    const model_config mc = cfg_.model();
    trace_ = std::make_unique<trace_writer>(cfg_.trace_path,
                                            nlohmann::json{{"trace", 1},
                                                           {"preset", cfg_.engine.preset},
                                                           {"prefix-chunk", mc.grid},
                                                           {"ctx-size", mc.ctx_size},
                                                           {"weights-seed", cfg_.engine.weights_seed},
                                                           {"served-model-name", cfg_.served_model_name}});
  }
  // Each request the conductor holds (running or queued) holds a worker while it streams; with
  // fewer workers than that, requests would wait in the edge rather than hear the queue's 429.
  http_limits limits = cfg_.http;
  limits.threads = std::max(limits.threads, cfg_.cache.parallel + cfg_.max_queue + 4);
  server_->set_payload_max_length(static_cast<std::size_t>(cfg_.max_body_bytes));
  // what httplib's Keep-Alive header advertises; the front enforces both
  server_->set_keep_alive_max_count(static_cast<std::size_t>(limits.keepalive_max));
  server_->set_keep_alive_timeout(static_cast<time_t>(limits.keepalive_timeout_ms / 1000));
  front_ = std::make_unique<http_front>(
      limits, static_cast<std::size_t>(cfg_.max_body_bytes),
      [this](http_wire& wire) { return server_->answer(wire); },
      [](int status, const std::string& message) {
        const char* type = status == 503 ? "server_error" : "invalid_request_error";
        return json_text(error_body({status, type, message, ""}));
      });
  routes();
}

http_edge::~http_edge() { stop(); }

int http_edge::start() {
  const int port = front_->bind(cfg_.host, cfg_.port);
  server_->open(front_->listen_fd());
  front_->start();
  return port;
}

void http_edge::stop() {
  if (server_) server_->close();  // streams in progress end at their next chunk
  if (front_) front_->stop();
  if (admin_) {
    caf::anon_send_exit(admin_, caf::exit_reason::user_shutdown);
    admin_ = nullptr;
  }
}

void http_edge::routes() {
  auto& s = *server_;
  s.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& r) {
    generate(request_kind::completion, q, r);
  });
  s.Post("/v1/chat/completions",
         [this](const httplib::Request& q, httplib::Response& r) { generate(request_kind::chat, q, r); });
  s.Post("/v1/messages", [this](const httplib::Request& q, httplib::Response& r) {
    messages(anthropic_route::create, q, r);
  });
  s.Post("/v1/messages/count_tokens", [this](const httplib::Request& q, httplib::Response& r) {
    messages(anthropic_route::count_tokens, q, r);
  });
  s.Post("/v1/responses", [this](const httplib::Request& q, httplib::Response& r) { responses(q, r); });
  s.Get("/v1/models", [this](const httplib::Request&, httplib::Response& r) { models(r); });
  s.Get("/health", [this](const httplib::Request&, httplib::Response& r) { health(r); });
  s.Get("/", [](const httplib::Request&, httplib::Response& r) { dashboard(r); });
  s.Get("/dashboard", [](const httplib::Request&, httplib::Response& r) { dashboard(r); });
  s.Get("/metrics", [this](const httplib::Request& q, httplib::Response& r) { metrics(q, r); });
  s.Get("/v1/cache/stats", [this](const httplib::Request& q, httplib::Response& r) { cache_stats(q, r); });
  s.Post("/v1/cache/clear", [this](const httplib::Request& q, httplib::Response& r) { cache_clear(q, r); });
  s.Get("/v1/cache/disk/entries",
        [this](const httplib::Request& q, httplib::Response& r) { disk_entries(q, r); });
  s.Get("/v1/cache/holdings", [this](const httplib::Request& q, httplib::Response& r) { holdings(q, r); });
  s.Get("/v1/cache/settings",
        [this](const httplib::Request& q, httplib::Response& r) { cache_settings_get(q, r); });
  s.Post("/v1/cache/settings",
         [this](const httplib::Request& q, httplib::Response& r) { cache_settings_set(q, r); });
  s.set_error_handler(unreadable_request);
  s.set_exception_handler(internal_error);
}

// POST /v1/completions and /v1/chat/completions: parse, check the model and the drain, hand the
// request to the conductor, then answer one body or a stream.
void http_edge::generate(request_kind kind, const httplib::Request& http, httplib::Response& res) {
  const std::int64_t received = steady_ns();
  const std::string& model = cfg_.served_model_name;
  auto parsed = parse_request(http.body, kind, cfg_.model().vocab);
  if (auto* err = std::get_if<api_error>(&parsed)) return fail(trace_.get(), http, res, *err);
  completion_request& body = std::get<completion_request>(parsed);
  // A session id a client sends with every request of one session (headers are case-insensitive).
  for (const char* h : {"X-Session-Id", "X-Session-Affinity"})
    if (body.session_header.empty() && http.has_header(h)) body.session_header = http.get_header_value(h);
  if (http.has_header("User-Agent")) body.user_agent = http.get_header_value("User-Agent");
  auto req = std::make_shared<const completion_request>(std::move(body));
  if (!req->model.empty() && req->model != model)
    return fail(
        trace_.get(), http, res,
        {404, "not_found_error",
         "the model '" + req->model + "' does not exist; this server serves '" + model + "'", "model"});
  if (draining_)
    return fail(trace_.get(), http, res, {503, "server_error", "the server is shutting down", ""});

  const std::string id = (kind == request_kind::chat ? "chatcmpl-" : "cmpl-") + std::to_string(started_s_) +
                         "-" + std::to_string(++next_id_);
  auto ex = std::make_shared<exchange>(sys_, conductor_, id, req, received);
  stream_event first = ex->next();
  if (first.what == stream_event::kind::failed) return fail(trace_.get(), http, res, first.error);
  const std::int64_t created = unix_seconds();
  if (!req->stream) return answer_whole(*ex, trace_.get(), kind, id, created, model, http, res);

  auto st = std::make_shared<stream_state<sse_encoder>>(stream_state<sse_encoder>{
      ex, sse_encoder(kind, id, created, model, req->include_usage, req->return_progress), trace_.get(), kind,
      http.path, http.body, nullptr});
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [st](std::size_t, httplib::DataSink& sink) { return stream_step(*st, sink); });
}

void http_edge::set_prompt_renderer(const render_limits& limits, const tokenizer& tok) {
  render_limits_ = std::make_unique<const render_limits>(limits);
  tok_ = std::make_unique<const tokenizer>(tok);
}

// POST /v1/messages (?beta=true is a query: the route is the path) and its count_tokens: the
// body parsed into the chat route's request, which the conductor serves as a chat; answered in
// Anthropic's shapes. x-api-key, anthropic-version and anthropic-beta are accepted, not required.
void http_edge::messages(anthropic_route route, const httplib::Request& http, httplib::Response& res) {
  const std::int64_t received = steady_ns();
  const std::string& model = cfg_.served_model_name;
  auto parsed = parse_anthropic_request(http.body, route);
  if (auto* err = std::get_if<api_error>(&parsed)) return fail_anthropic(trace_.get(), http, res, *err);
  completion_request& body = std::get<completion_request>(parsed);
  // Claude Code's session header, else the chat route's; either wins over metadata.user_id's.
  for (const char* h : {"X-Claude-Code-Session-Id", "X-Session-Id", "X-Session-Affinity"})
    if (http.has_header(h)) {
      body.session_header = http.get_header_value(h);
      break;
    }
  if (http.has_header("User-Agent")) body.user_agent = http.get_header_value("User-Agent");
  if (!body.model.empty() && body.model != model)
    return fail_anthropic(
        trace_.get(), http, res,
        {404, "not_found_error",
         "the model '" + body.model + "' does not exist; this server serves '" + model + "'", "model"});
  if (route == anthropic_route::count_tokens) {
    if (!render_limits_ || !tok_)
      return send_anthropic_error(res, {503, "overloaded_error", "the server cannot count tokens yet", ""});
    auto rendered = render_request(body, *render_limits_, *tok_, 0);
    if (auto* err = std::get_if<api_error>(&rendered)) return send_anthropic_error(res, *err);
    res.status = 200;
    res.set_content(anthropic_json_text(
                        anthropic_count_body(static_cast<long>(std::get<board_job>(rendered).prompt.size()))),
                    "application/json");
    return;
  }
  if (draining_)
    return fail_anthropic(trace_.get(), http, res, {503, "server_error", "the server is shutting down", ""});

  auto req = std::make_shared<const completion_request>(std::move(body));
  const std::string id = "msg_" + std::to_string(started_s_) + "_" + std::to_string(++next_id_);
  auto ex = std::make_shared<exchange>(sys_, conductor_, id, req, received);
  stream_event first = ex->next();
  if (first.what == stream_event::kind::failed) return fail_anthropic(trace_.get(), http, res, first.error);
  if (!req->stream) return answer_whole_anthropic(*ex, trace_.get(), id, model, http, res);

  auto st = std::make_shared<stream_state<anthropic_sse_encoder>>(stream_state<anthropic_sse_encoder>{
      ex, anthropic_sse_encoder(id, model), trace_.get(), request_kind::chat, http.path, http.body, nullptr});
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [st](std::size_t, httplib::DataSink& sink) { return stream_step(*st, sink); });
}

// GET /v1/models: the one model served.
void http_edge::models(httplib::Response& res) const {
  const long ctx = cfg_.model().ctx_size;
  send_json(res, 200,
            {{"object", "list"},
             {"data", nlohmann::json::array({{{"id", cfg_.served_model_name},
                                              {"object", "model"},
                                              {"created", started_s_},
                                              {"owned_by", "anchorage"},
                                              {"max_model_len", ctx}}})}});
}

// GET /health: 200 while serving, 503 once draining.
void http_edge::health(httplib::Response& res) const {
  if (draining_) return send_json(res, 503, {{"status", "draining"}});
  send_json(res, 200, {{"status", "ok"}});
}

// GET / and GET /dashboard: the operator's page (runtime/dashboard), built into the binary. It
// reads the public stats and metrics routes; nothing in it is a secret.
void http_edge::dashboard(httplib::Response& res) {
  const std::string_view page = dashboard_page();
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_content(page.data(), page.size(), "text/html; charset=utf-8");
}

// GET /metrics: Prometheus text.
void http_edge::metrics(const httplib::Request& http, httplib::Response& res) {
  if (secret_in_url(http, res)) return;
  ask_admin(sys_, admin_, res, "text/plain; version=0.0.4", metrics_atom::value);
}

// GET /v1/cache/stats: the tiers' and the ledger's JSON.
void http_edge::cache_stats(const httplib::Request& http, httplib::Response& res) {
  if (secret_in_url(http, res)) return;
  ask_admin(sys_, admin_, res, "application/json", stats_atom::value);
}

namespace {

// The admin token a request carries: X-Admin-Token, else Authorization: Bearer; empty when none.
std::string admin_token_of(const httplib::Request& http) {
  std::string given = http.get_header_value("X-Admin-Token");
  const std::string auth = http.get_header_value("Authorization");
  if (given.empty() && auth.rfind("Bearer ", 0) == 0) given = auth.substr(7);
  return given;
}

}  // namespace

// POST /v1/cache/clear?tier=NAME (all by default), with the admin token in X-Admin-Token or
// Authorization: Bearer.
void http_edge::cache_clear(const httplib::Request& http, httplib::Response& res) {
  if (secret_in_url(http, res)) return;
  const std::string tier = http.has_param("tier") ? http.get_param_value("tier") : "all";
  ask_admin(sys_, admin_, res, "application/json", clear_atom::value, admin_token_of(http), tier);
}

// GET /v1/cache/disk/entries?limit=N (50 by default, at most 1000): the disk tier's anchors, most
// valuable first, as hashes and numbers (never prompt text); 400 without a disk tier.
void http_edge::disk_entries(const httplib::Request& http, httplib::Response& res) {
  if (secret_in_url(http, res)) return;
  std::size_t limit = 50;
  if (http.has_param("limit")) {
    const std::string v = http.get_param_value("limit");
    char* end = nullptr;
    const long n = std::strtol(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n < 1 || n > 1000)
      return send_error(
          res, {400, "invalid_request_error", "limit must be a whole number from 1 to 1000", "limit"});
    limit = static_cast<std::size_t>(n);
  }
  ask_admin(sys_, admin_, res, "application/json", disk_entries_atom::value, limit);
}

// GET /v1/cache/holdings: the sessions and prefixes this replica holds, as hashes and token
// counts (runtime/server/holdings.hpp), for a balancer or an operator. Public, as the stats are.
void http_edge::holdings(const httplib::Request& http, httplib::Response& res) {
  if (secret_in_url(http, res)) return;
  ask_admin(sys_, admin_, res, "application/json", holdings_atom::value);
}

// GET /v1/cache/settings: the live settings, their flags, which a flag pins, which this server
// has (runtime/server/live_settings.hpp). Public, as the stats are.
void http_edge::cache_settings_get(const httplib::Request& http, httplib::Response& res) {
  if (secret_in_url(http, res)) return;
  ask_admin(sys_, admin_, res, "application/json", settings_atom::value);
}

// POST /v1/cache/settings with a JSON object of settings and the admin token: applied at once
// (a lower limit evicts before the answer), kept in <--cache-dir>/settings.json; the answer is
// GET's with "persisted" (and a "warning" when the file could not be written).
void http_edge::cache_settings_set(const httplib::Request& http, httplib::Response& res) {
  if (secret_in_url(http, res)) return;
  ask_admin(sys_, admin_, res, "application/json", settings_atom::value, admin_token_of(http), http.body);
}

}  // namespace anchorage
