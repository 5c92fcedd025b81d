#pragma once
// A streamed response's bytes (Server-Sent Events in OpenAI's chunk shapes), event by event.
//
// Fed one request's stream_events in the order they came, it answers the chunks to write for
// each: every chunk a whole SSE message, meant for a write of its own (the HTTP edge sends each
// as one chunk of the chunked body, in order, and stops at the first write that fails).
//
//   chat         open(): the role chunk {"role":"assistant","content":""};
//                each delta: a reasoning_content, content or tool_calls chunk;
//                finished: the finish chunk (chat_finish_reason), the usage chunk when
//                include_usage, then "data: [DONE]".
//   completions  open(): nothing; each delta: a text chunk (whatever the delta's kind);
//                finished: the finish chunk, the usage chunk when include_usage, [DONE].
//   progress     the SSE comment ": prefill DONE/TOTAL" (clients ignore it; writing it finds a
//                client that went away during a long prefill); with return_progress a data
//                chunk with "prompt_progress" instead (progress_chunk), after the role chunk.
//   accepted     nothing.
//   failed       the error body ({"error":{...}}) as a data chunk, then [DONE].
//
// A chat stream's first chunk is always the role chunk: feed() puts it first when open() was not
// called. After a finished or failed event the stream is closed() and feed() answers nothing.
// streamed() is the output the deltas fed so far add up to. Not thread-safe: one owner.
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/board_job.hpp"
#include "protocol/openai_types.hpp"

namespace anchorage {

class sse_encoder {
 public:
  sse_encoder(request_kind kind, std::string id, std::int64_t created, std::string model, bool include_usage,
              bool return_progress = false);

  // The chunks that open the stream (chat: the role chunk; completions: none). A second call,
  // or one after feed(), answers nothing.
  std::vector<std::string> open();
  // The chunks for `ev`, in the order they go out.
  std::vector<std::string> feed(const stream_event& ev);

  // A finished or failed event was fed: the stream has said everything.
  bool closed() const { return phase_ == phase::closed; }
  // The role chunk went out (always true for a completions stream once opened).
  bool opened() const { return phase_ != phase::unopened; }
  // What the deltas fed so far add up to: reasoning and content appended in order, the tool
  // calls as they came.
  const assistant_output& streamed() const { return streamed_; }

 private:
  enum class phase { unopened, streaming, closed };

  void add_deltas(const std::vector<output_delta>& deltas, std::vector<std::string>& out);
  void add_finish(const stream_event& ev, std::vector<std::string>& out) const;

  request_kind kind_;
  std::string id_;
  std::int64_t created_;
  std::string model_;
  bool include_usage_;
  bool return_progress_;
  phase phase_ = phase::unopened;
  assistant_output streamed_;
};

}  // namespace anchorage
