#include "runtime/api/anthropic_sse_encoder.hpp"

#include <utility>

#include "runtime/api/anthropic_response.hpp"

namespace anchorage {

using json = nlohmann::ordered_json;

anthropic_sse_encoder::anthropic_sse_encoder(std::string id, std::string model)
    : id_(std::move(id)), model_(std::move(model)) {}

std::vector<std::string> anthropic_sse_encoder::open() {
  std::vector<std::string> out;
  if (phase_ != phase::unopened) return out;
  phase_ = phase::streaming;
  out.push_back(anthropic_sse(anthropic_message_start(id_, model_)));
  out.push_back(anthropic_sse(json{{"type", "ping"}}));
  return out;
}

std::vector<std::string> anthropic_sse_encoder::feed(const stream_event& ev) {
  if (phase_ == phase::closed) return {};
  std::vector<std::string> out = open();
  switch (ev.what) {
    case stream_event::kind::accepted:
      break;
    case stream_event::kind::progress:
      out.push_back(anthropic_sse(json{{"type", "ping"}}));
      break;
    case stream_event::kind::delta:
      for (const output_delta& d : ev.deltas) add_delta(d, out);
      break;
    case stream_event::kind::finished:
      close_block(out);
      out.push_back(anthropic_sse(
          anthropic_message_delta(to_anthropic_stop_reason(ev.output, ev.finish_reason, ev.stop_sequence),
                                  ev.stop_sequence, ev.usage, ev.cache)));
      out.push_back(anthropic_sse(json{{"type", "message_stop"}}));
      phase_ = phase::closed;
      break;
    case stream_event::kind::failed:
      close_block(out);
      out.push_back(anthropic_sse(anthropic_error_body(ev.error)));
      phase_ = phase::closed;
      break;
  }
  return out;
}

void anthropic_sse_encoder::add_delta(const output_delta& d, std::vector<std::string>& out) {
  switch (d.what) {
    case output_delta::kind::reasoning:
      if (d.text.empty()) return;
      open_block(block::thinking, out);
      thinking_ += d.text;
      streamed_.reasoning += d.text;
      out.push_back(
          anthropic_sse(anthropic_block_delta(index_, {{"type", "thinking_delta"}, {"thinking", d.text}})));
      return;
    case output_delta::kind::content:
      if (d.text.empty()) return;
      open_block(block::text, out);
      streamed_.content += d.text;
      out.push_back(anthropic_sse(anthropic_block_delta(index_, {{"type", "text_delta"}, {"text", d.text}})));
      return;
    case output_delta::kind::tool_call: {
      close_block(out);
      ++index_;
      streamed_.tool_calls.push_back(d.call);
      out.push_back(anthropic_sse(anthropic_block_start(
          index_,
          {{"type", "tool_use"}, {"id", d.call.id}, {"name", d.call.name}, {"input", json::object()}})));
      const std::string partial = anthropic_json_text(anthropic_tool_input(d.call));
      out.push_back(anthropic_sse(
          anthropic_block_delta(index_, {{"type", "input_json_delta"}, {"partial_json", partial}})));
      out.push_back(anthropic_sse(anthropic_block_stop(index_)));
      return;
    }
  }
}

void anthropic_sse_encoder::open_block(block kind, std::vector<std::string>& out) {
  if (open_ == kind) return;
  close_block(out);
  open_ = kind;
  ++index_;
  const json start = kind == block::thinking ? json{{"type", "thinking"}, {"thinking", ""}}
                                             : json{{"type", "text"}, {"text", ""}};
  out.push_back(anthropic_sse(anthropic_block_start(index_, start)));
}

void anthropic_sse_encoder::close_block(std::vector<std::string>& out) {
  if (open_ == block::none) return;
  if (open_ == block::thinking) {
    out.push_back(anthropic_sse(anthropic_block_delta(
        index_, {{"type", "signature_delta"}, {"signature", thinking_signature(thinking_)}})));
    thinking_.clear();
  }
  out.push_back(anthropic_sse(anthropic_block_stop(index_)));
  open_ = block::none;
}

}  // namespace anchorage
