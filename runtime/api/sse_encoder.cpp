#include "runtime/api/sse_encoder.hpp"

#include <utility>

#include "runtime/api/openai_response.hpp"

namespace anchorage {

sse_encoder::sse_encoder(request_kind kind, std::string id, std::int64_t created, std::string model,
                         bool include_usage, bool return_progress)
    : kind_(kind),
      id_(std::move(id)),
      created_(created),
      model_(std::move(model)),
      include_usage_(include_usage),
      return_progress_(return_progress) {}

std::vector<std::string> sse_encoder::open() {
  std::vector<std::string> out;
  if (phase_ != phase::unopened) return out;
  phase_ = phase::streaming;
  if (kind_ == request_kind::chat) out.push_back(sse_data(chat_chunk_role(id_, created_, model_)));
  return out;
}

std::vector<std::string> sse_encoder::feed(const stream_event& ev) {
  if (phase_ == phase::closed) return {};
  std::vector<std::string> out = open();
  switch (ev.what) {
    case stream_event::kind::accepted:
      break;
    case stream_event::kind::progress:
      if (return_progress_)
        out.push_back(
            sse_data(progress_chunk(kind_ == request_kind::chat ? "chat.completion.chunk" : "text_completion",
                                    id_, created_, model_, ev)));
      else
        out.push_back(": prefill " + std::to_string(ev.done_tokens) + "/" + std::to_string(ev.prompt_tokens) +
                      "\n\n");
      break;
    case stream_event::kind::delta:
      add_deltas(ev.deltas, out);
      break;
    case stream_event::kind::finished:
      add_finish(ev, out);
      out.push_back(sse_done());
      phase_ = phase::closed;
      break;
    case stream_event::kind::failed:
      out.push_back(sse_data(error_body(ev.error)));
      out.push_back(sse_done());
      phase_ = phase::closed;
      break;
  }
  return out;
}

void sse_encoder::add_deltas(const std::vector<output_delta>& deltas, std::vector<std::string>& out) {
  for (const output_delta& d : deltas) {
    if (kind_ == request_kind::chat)
      out.push_back(sse_data(chat_chunk_delta(id_, created_, model_, d)));
    else
      out.push_back(sse_data(completion_chunk(id_, created_, model_, d.text)));
    switch (d.what) {
      case output_delta::kind::reasoning:
        streamed_.reasoning += d.text;
        break;
      case output_delta::kind::content:
        streamed_.content += d.text;
        break;
      case output_delta::kind::tool_call:
        streamed_.tool_calls.push_back(d.call);
        break;
    }
  }
}

// The finish chunk and, when asked for, the usage chunk. The finish reason comes from the
// finished event's own output (the whole turn), not from what was streamed.
void sse_encoder::add_finish(const stream_event& ev, std::vector<std::string>& out) const {
  if (kind_ == request_kind::chat) {
    out.push_back(
        sse_data(chat_chunk_finish(id_, created_, model_, chat_finish_reason(ev.output, ev.finish_reason))));
    if (include_usage_) out.push_back(sse_data(chat_chunk_usage(id_, created_, model_, ev.usage, ev.cache)));
  } else {
    out.push_back(sse_data(completion_chunk_finish(id_, created_, model_, ev.finish_reason)));
    if (include_usage_)
      out.push_back(sse_data(completion_chunk_usage(id_, created_, model_, ev.usage, ev.cache)));
  }
}

}  // namespace anchorage
