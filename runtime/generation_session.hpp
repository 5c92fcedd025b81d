#pragma once
#include <optional>
#include <string>
#include <vector>

#include "protocol/openai_types.hpp"
#include "runtime/engine.hpp"
#include "runtime/generator.hpp"
#include "runtime/output_parser.hpp"

namespace anchorage {

// What one request asks of the engine once its prompt is rendered.
struct generation_job {
  std::vector<token_id> prompt;
  generation_request gen;                 // sampling, max_tokens, stop tokens
  std::vector<std::string> stop_strings;  // cut the content where one appears
  bool parse_reasoning = false;
  bool parse_tool_calls = false;
  bool starts_in_reasoning = false;
};

// One request on the engine, a step at a time: a prefill chunk per step, then up to `block`
// decode tokens per step. Pure: no clock, no actor; the board drives it and forwards the deltas.
//
// The prefill runs from the engine's current length (the caller restores or resets the engine
// first) over the prompt's remaining tokens. Stop strings are matched on the content; text
// that could be the start of a stop string is held back until it is decided, so a stop string
// never reaches the client. The emitted deltas concatenate to output().
class generation_session {
 public:
  // Throws what engine::begin_prefill throws (bad ids, context overflow) before anything runs.
  generation_session(engine& e, generation_job job);

  struct step_result {
    std::vector<output_delta> deltas;
    bool prefill_finished = false;  // this step ran the prefill's last chunk
    long tokens = 0;                // tokens decoded in this step
  };
  step_result step(int block);

  void cancel() { cancelled_ = true; }
  bool prefilling() const { return engine_.prefill_remaining() > 0; }
  bool done() const { return done_; }
  // stop, length or cancelled ("tool_calls" is the edge's reading of stop with calls made)
  const std::string& finish_reason() const { return finish_; }
  long prompt_tokens() const { return static_cast<long>(job_.prompt.size()); }
  // prompt tokens forwarded so far (all of them once the prefill is done)
  long prefilled_tokens() const { return prefilled_; }
  long output_tokens() const { return output_tokens_; }
  const assistant_output& output() const { return out_; }
  const std::vector<token_id>& output_ids() const { return ids_; }

 private:
  void emit(std::vector<output_delta>& into, output_delta d);
  void flush_held(std::vector<output_delta>& into);
  void finish(const std::string& reason, std::vector<output_delta>& into);

  engine& engine_;
  generation_job job_;
  output_parser parser_;
  std::optional<generator> gen_;
  std::string held_;  // content text that may begin a stop string
  std::size_t longest_stop_ = 0;
  assistant_output out_;
  std::vector<token_id> ids_;
  std::size_t start_ = 0;  // the engine's length when the session began
  long prefilled_ = 0;
  long output_tokens_ = 0;
  bool cancelled_ = false;
  bool done_ = false;
  std::string finish_;
};

}  // namespace anchorage
