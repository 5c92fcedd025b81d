#pragma once
// A streamed Messages response's bytes (Server-Sent Events in Anthropic's event sequence),
// event by event: the Anthropic counterpart of sse_encoder, fed the same stream_events.
//
//   open()     message_start (content [], stop_reason null, usage zeros), then a ping.
//   delta      content blocks opened lazily, one at a time, indices 0, 1, 2... in order: a
//              reasoning delta opens (or continues) a thinking block (thinking_delta), a content
//              delta a text block (text_delta); a kind change closes the open block first. A
//              tool call is a whole tool_use block: content_block_start with input {}, one
//              input_json_delta holding the arguments, content_block_stop. Empty texts open
//              nothing (a client stores and replays what it was streamed). A thinking block
//              ends with a signature_delta before its content_block_stop.
//   progress   a ping (writing it finds a client that went away during a long prefill).
//   accepted   nothing.
//   finished   closes the open block, then message_delta (stop_reason from the finished event's
//              whole output, the full usage and x_cache) and message_stop.
//   failed     closes the open block, then an error event ({"type":"error","error":{...}}).
//
// feed() opens the stream first when open() was not called. After a finished or failed event
// the stream is closed() and feed() answers nothing. streamed() is what the deltas fed so far add
// up to. Not thread-safe: one owner.
#include <string>
#include <vector>

#include "protocol/board_job.hpp"
#include "protocol/openai_types.hpp"

namespace anchorage {

class anthropic_sse_encoder {
 public:
  anthropic_sse_encoder(std::string id, std::string model);

  std::vector<std::string> open();
  std::vector<std::string> feed(const stream_event& ev);

  bool closed() const { return phase_ == phase::closed; }
  bool opened() const { return phase_ != phase::unopened; }
  const assistant_output& streamed() const { return streamed_; }

 private:
  enum class phase { unopened, streaming, closed };
  enum class block { none, thinking, text };

  void add_delta(const output_delta& d, std::vector<std::string>& out);
  // Opens a block of `kind` at the next index unless one is open already.
  void open_block(block kind, std::vector<std::string>& out);
  void close_block(std::vector<std::string>& out);

  std::string id_;
  std::string model_;
  phase phase_ = phase::unopened;
  block open_ = block::none;
  int index_ = -1;        // the open (or last) block's index
  std::string thinking_;  // the open thinking block's text, for its signature
  assistant_output streamed_;
};

}  // namespace anchorage
