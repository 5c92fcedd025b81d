// POST /v1/responses (OpenAI's Responses API): http_edge::responses, the route's own file.
#include <httplib.h>

#include <caf/all.hpp>

#include <chrono>

#include "actors/edge.hpp"
#include "actors/edge_exchange.hpp"
#include "actors/edge_stream_step.hpp"
#include "runtime/api/response_store.hpp"
#include "runtime/api/responses_request.hpp"
#include "runtime/api/responses_response.hpp"
#include "runtime/api/responses_sse_encoder.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/server/trace.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {
namespace {

void send_responses_error(httplib::Response& res, const api_error& e) {
  res.status = e.status;
  res.set_content(responses_json_text(responses_error_body(e)), "application/json");
}

void fail_responses(trace_writer* trace, const httplib::Request& http, httplib::Response& res,
                    const api_error& e) {
  if (trace) trace->record(http.path, http.body, trace_error(e), nullptr);
  send_responses_error(res, e);
}

std::int64_t unix_seconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// What the answer to one request adds to the stored conversations (store not false).
struct keep_answer {
  std::shared_ptr<response_store> store;  // null: store false
  std::string id;
  std::vector<chat_message> conversation;  // the earlier conversation and this request's input

  void operator()(const stream_event& finished) const {
    if (!store) return;
    std::vector<chat_message> all = conversation;
    all.push_back(answer_message(finished.output));
    store->put(id, std::move(all));
  }
};

// A request without "stream": waits for the end and answers one response object.
void answer_whole(exchange& ex, trace_writer* trace, const responses_meta& meta, const keep_answer& keep,
                  const httplib::Request& http, httplib::Response& res) {
  for (;;) {
    stream_event ev = ex.next();
    if (ev.what == stream_event::kind::failed) return fail_responses(trace, http, res, ev.error);
    if (ev.what != stream_event::kind::finished) continue;
    if (trace)
      trace->record(http.path, http.body,
                    trace_outcome(request_kind::chat, ev.finish_reason, ev.output, ev.usage),
                    trace_ledger(ev.ledger));
    keep(ev);
    res.status = 200;
    res.set_content(
        responses_json_text(responses_body(meta, ev.output, ev.finish_reason, ev.usage, ev.cache)),
        "application/json");
    return;
  }
}

}  // namespace

// POST /v1/responses: the body parsed, previous_response_id expanded from the stored
// conversations, the result served by the conductor as the chat request it maps to, answered in
// the Responses shapes; the answer kept for a later previous_response_id unless store is false.
void http_edge::responses(const httplib::Request& http, httplib::Response& res) {
  const std::int64_t received = steady_ns();
  const std::string& model = cfg_.served_model_name;
  auto parsed = parse_responses_request(http.body);
  if (auto* err = std::get_if<api_error>(&parsed)) return fail_responses(trace_.get(), http, res, *err);
  responses_request& r = std::get<responses_request>(parsed);
  for (const char* h : {"X-Session-Id", "X-Session-Affinity"})
    if (r.chat.session_header.empty() && http.has_header(h)) r.chat.session_header = http.get_header_value(h);
  if (http.has_header("User-Agent")) r.chat.user_agent = http.get_header_value("User-Agent");
  if (!r.chat.model.empty() && r.chat.model != model)
    return fail_responses(
        trace_.get(), http, res,
        {404, "not_found_error",
         "the model '" + r.chat.model + "' does not exist; this server serves '" + model + "'", "model"});

  std::vector<chat_message> prior;
  if (const auto& previous = r.echo.previous_response_id) {
    auto found = stored_responses_->find(*previous);
    if (!found)
      return fail_responses(trace_.get(), http, res,
                            {404, "invalid_request_error",
                             "previous response '" + *previous +
                                 "' is not held by this server (never stored, stored with store: false, or "
                                 "dropped from its bounded store); send the whole conversation as input",
                             "previous_response_id", "previous_response_not_found"});
    prior = std::move(*found);
  }
  if (auto e = assemble_conversation(r, prior)) return fail_responses(trace_.get(), http, res, *e);
  if (draining_)
    return fail_responses(trace_.get(), http, res, {503, "server_error", "the server is shutting down", ""});

  const std::string id = "resp_" + std::to_string(started_s_) + "_" + std::to_string(++next_id_);
  keep_answer keep{r.echo.store ? stored_responses_ : nullptr, id, std::move(prior)};
  if (keep.store) keep.conversation.insert(keep.conversation.end(), r.input.begin(), r.input.end());
  const responses_meta meta{id, unix_seconds(), model, r.echo};
  auto req = std::make_shared<const completion_request>(std::move(r.chat));
  auto ex = std::make_shared<exchange>(sys_, conductor_, id, req, received);
  stream_event first = ex->next();
  if (first.what == stream_event::kind::failed) return fail_responses(trace_.get(), http, res, first.error);
  if (!req->stream) return answer_whole(*ex, trace_.get(), meta, keep, http, res);

  auto st = std::make_shared<stream_state<responses_sse_encoder>>(stream_state<responses_sse_encoder>{
      ex, responses_sse_encoder(meta), trace_.get(), request_kind::chat, http.path, http.body, keep});
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [st](std::size_t, httplib::DataSink& sink) { return stream_step(*st, sink); });
}

}  // namespace anchorage
