#pragma once
// A streamed answer's chunk provider, shared by the edge's routes: each call writes the next
// event's chunks from the route's encoder (sse_encoder, anthropic_sse_encoder or
// responses_sse_encoder: anything with open(), opened() and feed(stream_event)).
#include <httplib.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/edge_exchange.hpp"
#include "runtime/server/trace.hpp"

namespace anchorage {

// What a streamed request keeps between the calls of its chunk provider.
template <class encoder>
struct stream_state {
  std::shared_ptr<exchange> ex;
  encoder sse;
  trace_writer* trace;
  request_kind kind;
  std::string path, body;
  // Called with the finished event before its chunks are written (the Responses route keeps
  // the answer for previous_response_id); may be empty.
  std::function<void(const stream_event&)> on_finished = {};
};

// Writes `chunks` in order, one write each, stopping at the first that fails; whether all went.
inline bool write_chunks(httplib::DataSink& sink, const std::vector<std::string>& chunks) {
  for (const std::string& c : chunks)
    if (!sink.write(c.data(), c.size())) return false;
  return true;
}

// The client went away: stop the generation at its next step. A client that left is recorded
// too (a replay skips it: it cannot leave the same way).
template <class encoder>
void cancel_stream(stream_state<encoder>& st) {
  const stream_event end = st.ex->cancel();
  if (!st.trace) return;
  st.trace->record(st.path, st.body, nlohmann::json{{"cancelled", true}},
                   end.what == stream_event::kind::finished ? trace_ledger(end.ledger) : nlohmann::json());
}

// One call of the chunk provider: the opening chunks on the first, then one event's chunks per
// call. Returns false to drop the connection (the client went away).
template <class encoder>
bool stream_step(stream_state<encoder>& st, httplib::DataSink& sink) {
  if (!st.sse.opened()) {
    if (write_chunks(sink, st.sse.open())) return true;
    cancel_stream(st);
    return false;
  }
  const stream_event ev = st.ex->next();
  const std::vector<std::string> chunks = st.sse.feed(ev);
  switch (ev.what) {
    case stream_event::kind::finished: {
      if (st.trace)
        st.trace->record(st.path, st.body, trace_outcome(st.kind, ev.finish_reason, ev.output, ev.usage),
                         trace_ledger(ev.ledger));
      if (st.on_finished) st.on_finished(ev);
      const bool ok = write_chunks(sink, chunks);
      sink.done();
      return ok;
    }
    case stream_event::kind::failed:
      if (st.trace) st.trace->record(st.path, st.body, trace_error(ev.error), nullptr);
      for (const std::string& c : chunks)
        sink.write(c.data(), c.size());  // each tried: the end goes out if it can
      sink.done();
      return true;
    case stream_event::kind::accepted:
    case stream_event::kind::progress:
    case stream_event::kind::delta:
      break;
  }
  if (write_chunks(sink, chunks)) return true;
  cancel_stream(st);
  return false;
}

}  // namespace anchorage
