#pragma once
// A streamed Responses answer's bytes (Server-Sent Events in OpenAI's Responses event sequence),
// event by event: the Responses counterpart of sse_encoder, fed the same stream_events. Every
// event is "event: <type>\ndata: <json>\n\n" and carries sequence_number, 0, 1, 2... in order.
//
//   open()     response.created, then response.in_progress (the response in_progress, output
//              [], usage null).
//   delta      reasoning: the reasoning item is added (output_item.added, content_part.added
//              with a reasoning_text part) at the first reasoning text, then
//              response.reasoning_text.delta per delta. content: the reasoning item is done
//              (reasoning_text.done, content_part.done, output_item.done); the message item is
//              added (output_item.added, content_part.added with an output_text part) at the first
//              content text, then response.output_text.delta per delta; it stays open to the end,
//              since content may follow a tool call. tool_call: held to the end, so that the
//              items come in the order responses_body gives them (reasoning, message, calls) and
//              a client that sends them back sends the answer the end anchor holds. Empty texts
//              open nothing. A reasoning delta after content or a call (the output parser writes
//              none) opens a second reasoning item.
//   progress   the SSE comment ": prefill DONE/TOTAL" (clients ignore it; writing it finds a
//              client that went away during a long prefill).
//   accepted   nothing.
//   finished   the open reasoning item done; an empty message item when the answer has neither
//              content nor calls; the message item done (output_text.done,
//              content_part.done, output_item.done, status "incomplete" when finish_reason is
//              "length"); per held call output_item.added (arguments ""),
//              function_call_arguments.delta (the whole arguments), function_call_arguments.done,
//              output_item.done; then response.completed, or response.incomplete (finish_reason
//              "length"), whose response is responses_body's with the items streamed as output.
//   failed     the open items done as they stand, then an error event ({"type":"error",
//              "sequence_number","error":{"type","code","message","param"}}) and response.failed
//              (the response with status "failed" and error {code, message}).
//
// feed() opens the stream first when open() was not called. After a finished or failed event
// the stream is closed() and feed() answers nothing. streamed() is what the deltas fed so far add
// up to. Not thread-safe: one owner.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/board_job.hpp"
#include "protocol/openai_types.hpp"
#include "runtime/api/responses_response.hpp"

namespace anchorage {

class responses_sse_encoder {
 public:
  explicit responses_sse_encoder(responses_meta meta);

  std::vector<std::string> open();
  std::vector<std::string> feed(const stream_event& ev);

  bool closed() const { return phase_ == phase::closed; }
  bool opened() const { return phase_ != phase::unopened; }
  const assistant_output& streamed() const { return streamed_; }
  // The output items as streamed so far (each as its output_item.done carried it, or as it
  // stands while open).
  const nlohmann::ordered_json& items() const { return items_; }

 private:
  enum class phase { unopened, streaming, closed };

  // One event: `data` gets "type" first and its sequence_number, and goes out as SSE.
  void emit(const char* type, nlohmann::ordered_json data, std::vector<std::string>& out);
  void add_delta(const output_delta& d, std::vector<std::string>& out);
  void add_reasoning(const std::string& text, std::vector<std::string>& out);
  void add_content(const std::string& text, std::vector<std::string>& out);
  void open_message(std::vector<std::string>& out);
  void close_reasoning(std::vector<std::string>& out);
  void close_message(const char* status, std::vector<std::string>& out);
  // The items of call `call_index` of streamed_.tool_calls, whole.
  void add_call(int call_index, std::vector<std::string>& out);
  void finish(const stream_event& ev, std::vector<std::string>& out);
  void fail(const api_error& e, std::vector<std::string>& out);
  // output_item.added for `item` at the next output index, which it returns.
  int add_item(nlohmann::ordered_json item, std::vector<std::string>& out);
  void item_done(int index, std::vector<std::string>& out);

  responses_meta meta_;
  phase phase_ = phase::unopened;
  long sequence_ = 0;
  nlohmann::ordered_json items_ = nlohmann::ordered_json::array();
  int reasoning_index_ = -1;  // the open reasoning item's output index, -1 when none is open
  int message_index_ = -1;    // the message item's, -1 before it is added
  bool message_done_ = false;
  int reasoning_items_ = 0;     // reasoning items added so far (a second one gets its own id)
  std::string reasoning_text_;  // the open reasoning item's text
  assistant_output streamed_;
};

}  // namespace anchorage
