#pragma once
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/output_rules.hpp"
#include "protocol/openai_types.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/generation/generator.hpp"
#include "runtime/speculative/drafter.hpp"
#include "runtime/text/output/output_parser.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

// What the server forces when a generation's reasoning reaches its budget, encoded with specials
// parsed (so </think> is one token). The text before </think> is hidden from the client; the
// "</think>\n\n" part closes the reasoning as the parser reads it.
inline constexpr std::string_view reasoning_close_phrase =
    "\n\nConsidering the limited time, I have to give the solution based on the thinking "
    "directly now.\n</think>\n\n";
// How many tokens the phrase is with `tok`: rows a reasoning budget may add that the client never
// sees. The byte tokenizer's count (the default) bounds every tokenizer's: no token is empty.
std::size_t reasoning_close_length(const tokenizer& tok = tokenizer());

// What one request asks of the engine once its prompt is rendered.
struct generation_job {
  // What the ids mean: the markers the session and the parser follow, the text of the deltas,
  // the ids the sampler may choose (tokenizer::defined_mask()).
  tokenizer tok;
  std::vector<token_id> prompt;
  generation_request gen;  // sampling (logit_bias included), max_tokens, stops
  // How the output is read and cut (protocol/output_rules.hpp): stop strings, reasoning and tool-call
  // parsing (rules.tools gives a call's parameter types), the reasoning budget: reasoning tokens
  // the generation may produce before the session closes the block with reasoning_close_phrase
  // (-1: none; only read with parse_reasoning).
  output_rules rules;
  // Resuming an interrupted generation: the output ids it had emitted (its output_ids() at a
  // checkpoint, see generation_session::checkpointable()); empty: a fresh run. The caller puts
  // the engine in the checkpoint's state first: the prompt and every id here but the last
  // forwarded, so engine length == prompt.size() + resume_output.size() - 1.
  std::vector<token_id> resume_output;
  // Not empty: resume_output is a whole generation written earlier (a prewritten summary,
  // docs/COMPACTION.md), replayed without the engine and finished with this reason (stop or
  // length) unless the replay ends it first; nothing is forwarded and the engine is not read.
  std::optional<run_finish> replay_finish;
  // Speculative decoding (docs/SPECULATIVE.md): the drafters, and the suffix store's read side
  // for the lookup drafter (null: the generation's own tokens only; not owned). Off: one token per
  // forward. On or off, the emitted ids are the same (the greedy gate, and for sampling the same
  // draws: a draft is accepted when it is the token the step samples).
  speculative_options speculative;
  lookup_source* lookup = nullptr;
};

// One request on the engine, a step at a time: a prefill chunk per step, then up to `block`
// decode tokens per step. Pure: no clock, no actor; the board drives it and forwards the deltas.
//
// The prefill runs from the engine's current length (the caller restores or resets the engine
// first) over the prompt's remaining tokens. Stop strings are matched on the content; text
// that could be the start of a stop string is held back until it is decided, so a stop string
// never reaches the client. The emitted deltas concatenate to output().
//
// Reasoning budget: the session follows the reasoning block as the parser reads it (open from
// the first token with starts_in_reasoning, or at a <think> that is the first non-whitespace
// output; closed at </think>) and counts the tokens generated inside it. When the count reaches
// reasoning_budget with the block still open, the next tokens are reasoning_close_phrase's,
// forced instead of sampled (generator::force); a tokenizer without </think> has no budget. The phrase's
// tokens before </think> form a hidden span: they are in output_ids() and in the engine but never fed to the
// parser, so the client never sees them. Forced tokens count toward max_tokens and output_tokens().
//
// Resume (job.resume_output not empty): nothing is prefilled. The constructor replays the ids
// through the same bookkeeping a live run does (parser, reasoning, hidden spans, stop strings,
// counts), without the engine: the budget's close phrase is queued as the live run queues it,
// and each replayed id is the queue's next one when the queue is not empty (forced), otherwise
// a sampled token that took one step number. The first step() returns the replay's deltas,
// then decodes on from a generator built with (that step number, the last id pending, what is
// left of the queue), so the ids, the output, the deltas' concatenation, the spans and the
// finish reason are those of the uninterrupted run. A replay that reaches the end (max_tokens,
// a stop string) leaves the engine untouched; the session is done() once its first step() has
// returned the replay's deltas.
class generation_session {
 public:
  // Throws what engine::begin_prefill throws (bad ids, context overflow) before anything runs.
  // With resume_output: throws std::invalid_argument when the engine's length does not match it
  // or the ids cannot be this job's output (an id other than the forced one, a sampled stop
  // token, ids past max_tokens or past a stop string): a checkpoint of another job.
  generation_session(engine& e, generation_job job);

  struct step_result {
    std::vector<output_delta> deltas;
    bool prefill_finished = false;  // this step ran the prefill's last chunk
    long tokens = 0;                // tokens decoded in this step
  };
  step_result step(int block);
  // A decode step of one token in two halves, for a decode batched over several sessions: the
  // token the step forwards first, when the next step is such a step (decoding, the generator
  // started, a pending token to forward; nullopt otherwise: prefilling, the first token after
  // the prefill, a replay to hand out, a cancel, done), and the step once the caller forwarded
  // it (decode_batch). step_forwarded() gives what step(1) would have.
  std::optional<token_id> batch_token() const;
  step_result step_forwarded();
  // The same with a verify round: the rows the next step forwards when batch_token() has one
  // (the pending token, then at most max_rows - 1 drafts: with speculation off, none), and the
  // step once the caller forwarded exactly those rows (forward_batch): the rows the target did
  // not agree with are cut back (engine::keep_rows). step_rows() after batch_rows() giving one
  // row is step_forwarded().
  std::vector<token_id> batch_rows(std::size_t max_rows);
  step_result step_rows();
  // Speculative decoding's counters for this generation (all zero with it off).
  speculative_counters speculation() const {
    return drafter_ ? drafter_->counters() : speculative_counters{};
  }

  void cancel() { cancelled_ = true; }
  const tokenizer& tok() const { return job_.tok; }
  bool prefilling() const { return engine_.prefill_remaining() > 0; }
  bool done() const { return done_ && replayed_.empty(); }
  // stop, length or cancelled once done (tool_calls is the chat wire's reading of stop with calls
  // made); stop before.
  run_finish finish_reason() const { return finish_; }
  // The stop string (of job.rules.stop_strings) that ended the content; empty when none did. When two
  // match, the one that starts first (the first listed on a tie).
  const std::string& stop_string() const { return stop_string_; }
  long prompt_tokens() const { return static_cast<long>(job_.prompt.size()); }
  // prompt tokens forwarded so far (all of them once the prefill is done)
  long prefilled_tokens() const { return prefilled_; }
  long output_tokens() const { return output_tokens_; }
  const assistant_output& output() const { return out_; }
  // Every token emitted, sampled or forced, in order: each one but the last has been forwarded
  // to the engine; the last is pending (forwarded only if the generation went on). A stop token
  // that ended the generation is not listed (it is pending, never forwarded).
  const std::vector<token_id>& output_ids() const { return ids_; }
  // Half-open ranges [begin, end) of indices into output_ids() the client never saw (the
  // forced phrase's text before </think>), ascending and disjoint.
  const std::vector<std::pair<std::size_t, std::size_t>>& hidden_spans() const { return hidden_; }
  // The index in output_ids() of the </think> that closed the reasoning block (generated or
  // forced); nullopt while it is open or when there was none.
  std::optional<std::size_t> reasoning_end() const { return reasoning_end_; }
  // Whether the output began inside the reasoning block (the prompt opened it).
  bool in_reasoning_from_start() const {
    return job_.rules.parse_reasoning && job_.rules.starts_in_reasoning;
  }
  // Tokens generated inside the reasoning block so far (the hidden phrase not included).
  long reasoning_tokens() const { return reasoning_tokens_; }

  // Whether a checkpoint taken now (the engine's state, output_ids(), the seed) can be resumed
  // through generation_job::resume_output: some output was emitted and the session is not
  // done. Between steps the engine always holds the prompt and every id but the last; a
  // forced phrase still queued or hidden text still to come is re-derived by the replay.
  bool checkpointable() const { return !ids_.empty() && !done_; }
  // The step number the next sampled token will use (what the generator calls next_step()).
  std::uint64_t next_step() const { return gen_ ? gen_->next_step() : replay_.sampled; }

 private:
  // Where the output stands relative to the reasoning block, as the parser reads it.
  enum class think_state { before, open, closed, none };

  // The generator's bookkeeping while resume_output is replayed, before there is a generator.
  struct replay_state {
    std::deque<token_id> forced;  // what generator::force() would have queued
    std::uint64_t sampled = 0;    // step numbers the replayed sampled tokens took
  };

  // reasoning_close_phrase as tokens, and how many of them come before </think> (the hidden part).
  struct close_phrase {
    std::vector<token_id> ids;
    std::size_t hidden = 0;
  };

  void replay();
  void start_decoding();
  std::size_t draft_room(std::size_t max_rows) const;
  void verify_round(step_result& r);
  void take_rows(step_result& r);
  void after_token(std::optional<token_id> t, step_result& r);
  bool batchable() const;
  bool out_of_tokens() const;
  void on_token(token_id t, bool forced, std::vector<output_delta>& into);
  void track_reasoning(token_id t);
  void maybe_close_reasoning();
  void emit(std::vector<output_delta>& into, output_delta d);
  void flush_held(std::vector<output_delta>& into);
  void finish(run_finish reason, std::vector<output_delta>& into);

  engine& engine_;
  generation_job job_;
  output_parser parser_;
  close_phrase close_;
  std::optional<generator> gen_;
  std::optional<drafter> drafter_;
  draft_proposal round_;              // the drafts of the rows forwarded last
  std::vector<token_id> round_rows_;  // those rows: the pending token, then the drafts
  replay_state replay_;
  std::vector<output_delta> replayed_;  // the replay's deltas, for the first step()
  std::string held_;                    // content text that may begin a stop string
  std::size_t longest_stop_ = 0;
  assistant_output out_;
  std::vector<token_id> ids_;
  std::vector<std::pair<std::size_t, std::size_t>> hidden_;
  std::optional<std::size_t> reasoning_end_;
  think_state think_ = think_state::none;
  long reasoning_tokens_ = 0;
  std::size_t hidden_left_ = 0;  // forced tokens still to come that are hidden
  bool closing_ = false;         // the close phrase has been queued
  std::size_t start_ = 0;        // the engine's length when the session began
  long prefilled_ = 0;
  long output_tokens_ = 0;
  bool cancelled_ = false;
  bool done_ = false;
  run_finish finish_ = run_finish::stop;
  std::string stop_string_;
};

}  // namespace anchorage
