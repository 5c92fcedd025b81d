#include "actors/edge.hpp"

#include <httplib.h>

#include <caf/all.hpp>

#include <chrono>

#include "actors/admin.hpp"
#include "actors/edge_exchange.hpp"
#include "protocol/error_code.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/api/openai_request.hpp"
#include "runtime/api/openai_response.hpp"
#include "runtime/server/trace.hpp"

namespace anchorage {
namespace {

void send_json(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  res.set_content(json_text(body), "application/json");
}

void send_error(httplib::Response& res, const api_error& e) { send_json(res, e.status, error_body(e)); }

std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// What a request is called in traces, from its path.
std::string route_name(request_kind k) { return k == request_kind::chat ? "chat" : "completions"; }

struct stream_state {
  std::shared_ptr<exchange> ex;
  std::shared_ptr<const completion_request> req;
  std::string id, model, path, body;
  std::int64_t created = 0;
  bool started = false;
};

}  // namespace

http_edge::http_edge(caf::actor_system& sys, conductor_actor conductor, const server_config& cfg)
    : sys_(sys), conductor_(std::move(conductor)), cfg_(cfg), server_(std::make_unique<httplib::Server>()) {
  started_s_ = unix_seconds();
  admin_ = sys_.spawn(admin, cfg_.admin_token, conductor_);
  if (!cfg_.trace_path.empty()) {
    const model_config mc = cfg_.engine.config();
    trace_ = std::make_unique<trace_writer>(
        cfg_.trace_path, nlohmann::json{{"trace", 1},
                                        {"preset", cfg_.engine.preset},
                                        {"prefix-chunk", mc.grid},
                                        {"ctx-size", mc.ctx_size},
                                        {"weights-seed", cfg_.engine.weights_seed},
                                        {"served-model-name", cfg_.served_model_name}});
  }
  const int threads = cfg_.http_threads;
  server_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<std::size_t>(threads)); };
  server_->set_payload_max_length(static_cast<std::size_t>(cfg_.max_body_bytes));
  routes();
}

http_edge::~http_edge() { stop(); }

int http_edge::start() {
  int port = cfg_.port;
  if (port == 0) {
    port = server_->bind_to_any_port(cfg_.host);
    if (port < 0) throw std::runtime_error("cannot bind " + cfg_.host);
  } else if (!server_->bind_to_port(cfg_.host, port)) {
    throw std::runtime_error("cannot bind " + cfg_.host + ":" + std::to_string(port) + " (in use?)");
  }
  thread_ = std::thread([this] { server_->listen_after_bind(); });
  // httplib's stop() does nothing before the listener runs; wait for it, so a stop() right
  // after start() cannot leave the listener running and its thread unjoinable.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!server_->is_running() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!server_->is_running()) throw std::runtime_error("the HTTP listener did not start");
  return port;
}

void http_edge::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  if (admin_) {
    caf::anon_send_exit(admin_, caf::exit_reason::user_shutdown);
    admin_ = nullptr;
  }
}

void http_edge::routes() {
  auto& s = *server_;
  const std::string model = cfg_.served_model_name;

  auto generate = [this, model](request_kind kind, const httplib::Request& http, httplib::Response& res) {
    const std::int64_t received = steady_ns();
    const std::string route = route_name(kind);
    auto fail = [&](const api_error& e) {
      if (trace_) trace_->record(http.path, http.body, trace_error(e), nullptr);
      send_error(res, e);
    };
    auto parsed = parse_request(http.body, kind);
    if (auto* err = std::get_if<api_error>(&parsed)) return fail(*err);
    auto req = std::make_shared<const completion_request>(std::move(std::get<completion_request>(parsed)));
    if (!req->model.empty() && req->model != model)
      return fail({404, "not_found_error", "the model '" + req->model + "' does not exist; this server serves '" + model + "'", "model"});
    if (draining_) return fail({503, "server_error", "the server is shutting down", ""});

    const std::string id = (kind == request_kind::chat ? "chatcmpl-" : "cmpl-") + std::to_string(started_s_) + "-" +
                           std::to_string(++next_id_);
    auto ex = std::make_shared<exchange>(sys_, conductor_, id, req, received);
    stream_event first = ex->next();
    if (first.what == stream_event::kind::failed) return fail(first.error);
    const std::int64_t created = unix_seconds();

    if (!req->stream) {
      for (;;) {
        stream_event ev = ex->next();
        if (ev.what == stream_event::kind::failed) return fail(ev.error);
        if (ev.what != stream_event::kind::finished) continue;
        if (trace_) trace_->record(http.path, http.body, trace_outcome(route, ev.finish_reason, ev.output, ev.usage), trace_ledger(ev.ledger));
        if (kind == request_kind::chat)
          return send_json(res, 200, chat_body(id, created, model, ev.output, ev.finish_reason, ev.usage, ev.cache));
        return send_json(res, 200, completion_body(id, created, model, ev.output.content, ev.finish_reason, ev.usage, ev.cache));
      }
    }

    auto st = std::make_shared<stream_state>();
    st->ex = ex;
    st->req = req;
    st->id = id;
    st->model = model;
    st->path = http.path;
    st->body = http.body;
    st->created = created;
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider("text/event-stream", [this, st, kind, route](std::size_t, httplib::DataSink& sink) {
      auto write = [&](const std::string& text) { return sink.write(text.data(), text.size()); };
      // A client that left is recorded too (a replay skips it: it cannot leave the same way).
      auto record_cancel = [&](const stream_event& end) {
        if (!trace_) return;
        trace_->record(st->path, st->body, nlohmann::json{{"cancelled", true}},
                       end.what == stream_event::kind::finished ? trace_ledger(end.ledger) : nlohmann::json());
      };
      const bool chat = kind == request_kind::chat;
      if (!st->started) {
        st->started = true;
        if (chat && !write(sse_data(chat_chunk_role(st->id, st->created, st->model)))) {
          record_cancel(st->ex->cancel());
          return false;
        }
        return true;
      }
      stream_event ev = st->ex->next();
      bool ok = true;
      switch (ev.what) {
        case stream_event::kind::accepted:
          break;
        case stream_event::kind::progress:
          // an SSE comment: shows progress and finds a client that went away during a prefill
          ok = write(": prefill " + std::to_string(ev.done_tokens) + "/" + std::to_string(ev.prompt_tokens) + "\n\n");
          break;
        case stream_event::kind::delta:
          for (const auto& d : ev.deltas) {
            if (!ok) break;
            ok = chat ? write(sse_data(chat_chunk_delta(st->id, st->created, st->model, d)))
                      : write(sse_data(completion_chunk(st->id, st->created, st->model, d.text)));
          }
          break;
        case stream_event::kind::finished: {
          if (trace_) trace_->record(st->path, st->body, trace_outcome(route, ev.finish_reason, ev.output, ev.usage), trace_ledger(ev.ledger));
          if (chat) {
            ok = write(sse_data(chat_chunk_finish(st->id, st->created, st->model, chat_finish_reason(ev.output, ev.finish_reason))));
            if (ok && st->req->include_usage) ok = write(sse_data(chat_chunk_usage(st->id, st->created, st->model, ev.usage, ev.cache)));
          } else {
            ok = write(sse_data(completion_chunk_finish(st->id, st->created, st->model, ev.finish_reason)));
            if (ok && st->req->include_usage) ok = write(sse_data(completion_chunk_usage(st->id, st->created, st->model, ev.usage, ev.cache)));
          }
          if (ok) ok = write(sse_done());
          sink.done();
          return ok;
        }
        case stream_event::kind::failed:
          if (trace_) trace_->record(st->path, st->body, trace_error(ev.error), nullptr);
          write(sse_data(error_body(ev.error)));
          write(sse_done());
          sink.done();
          return true;
      }
      if (!ok) {
        record_cancel(st->ex->cancel());  // the client went away: stop the generation at its next step
        return false;
      }
      return true;
    });
  };

  s.Post("/v1/completions", [generate](const httplib::Request& q, httplib::Response& r) { generate(request_kind::completion, q, r); });
  s.Post("/v1/chat/completions", [generate](const httplib::Request& q, httplib::Response& r) { generate(request_kind::chat, q, r); });

  s.Get("/v1/models", [this, model](const httplib::Request&, httplib::Response& res) {
    const long ctx = cfg_.engine.config().ctx_size;
    send_json(res, 200, {{"object", "list"},
                         {"data", nlohmann::json::array({{{"id", model}, {"object", "model"}, {"created", started_s_},
                                                          {"owned_by", "anchorage"}, {"max_model_len", ctx}}})}});
  });
  s.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    if (draining_) return send_json(res, 503, {{"status", "draining"}});
    send_json(res, 200, {{"status", "ok"}});
  });

  // Operator routes go through the admin actor, which checks the token and the tier.
  auto ask = [this](httplib::Response& res, const char* content_type, auto... args) {
    caf::scoped_actor self{sys_};
    self->request(admin_, std::chrono::seconds(10), args...)
        .receive([&](std::string& text) { res.set_content(text, content_type); },
                 [&](caf::error& err) {
                   if (err.category() == caf::atom("anchorage")) {
                     const auto code = static_cast<error_code>(err.code());
                     static const char* messages[] = {
                         "", "admin routes are off: start the server with --admin-token or ANCHORAGE_ADMIN_TOKEN",
                         "this route needs the admin token (Authorization: Bearer TOKEN)",
                         "unknown tier (all, resident, store, disk, spill, suffix, response)"};
                     static const char* types[] = {"", "permission_error", "authentication_error", "invalid_request_error"};
                     const auto i = static_cast<std::size_t>(code);
                     return send_error(res, {http_status(code), types[i], messages[i], code == error_code::unknown_tier ? "tier" : ""});
                   }
                   send_error(res, {503, "server_error", "the server did not answer: " + sys_.render(err), ""});
                 });
  };
  s.Get("/metrics", [ask](const httplib::Request&, httplib::Response& res) {
    ask(res, "text/plain; version=0.0.4", metrics_atom::value);
  });
  s.Get("/v1/cache/stats", [ask](const httplib::Request&, httplib::Response& res) {
    ask(res, "application/json", stats_atom::value);
  });
  s.Post("/v1/cache/clear", [ask](const httplib::Request& q, httplib::Response& res) {
    std::string given = q.get_header_value("X-Admin-Token");
    const std::string auth = q.get_header_value("Authorization");
    if (given.empty() && auth.rfind("Bearer ", 0) == 0) given = auth.substr(7);
    const std::string tier = q.has_param("tier") ? q.get_param_value("tier") : "all";
    ask(res, "application/json", clear_atom::value, given, tier);
  });

  s.set_error_handler([](const httplib::Request& q, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      return send_error(res, {404, "not_found_error", "no route " + q.method + " " + q.path, ""});
    if (res.status == 413)
      return send_error(res, {413, "invalid_request_error", "the request body is larger than the server accepts (--max-body-mb)", ""});
    send_error(res, {res.status, "invalid_request_error",
                     "the request could not be read (HTTP " + std::to_string(res.status) +
                         "; a POST needs a body with its Content-Length)",
                     ""});
  });
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "internal error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, {500, "server_error", what, ""});
  });
}

}  // namespace anchorage
