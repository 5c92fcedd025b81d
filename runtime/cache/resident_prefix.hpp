#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cache/anchor_set.hpp"
#include "runtime/cache/resume_offer.hpp"
#include "runtime/text/output/end_alignment.hpp"
#include "runtime/cache/memory_budget.hpp"
#include "runtime/engine/row_copy.hpp"
#include "runtime/engine/state_copy.hpp"
#include "runtime/core/token.hpp"

namespace anchorage {

// A conversation's rows set aside before another request overwrites them (docs/CACHES.md, "Interruptions"):
// the pinned head (kind pin: the same session's head, e.g. before a compaction request) or the parked session
// (kind park: another session's request replaced it). Rows [from, end) of `tokens`, grid anchors over them,
// and for a parked session its end anchor.
struct saved_prompt {
  cache_via kind = cache_via::pin;            // pin or park
  std::vector<token_id> tokens;               // what rows [0, rows.last()) held
  row_copy rows;                              // rows [from, end)
  std::map<std::size_t, state_copy> anchors;  // grid anchors in (from, end], at or below taint
  std::optional<end_record> end;
  state_copy end_copy;
  std::vector<token_span> reasoning, hidden, answers;  // the earlier answers' spans
  std::size_t taint = 0;
  std::size_t bytes = 0;  // reserved in the pool of `kind` (pool_of)
};

// The budget pool a set-aside prompt of `kind` (pin or park) is held in.
constexpr budget_pool pool_of(cache_via kind) {
  return kind == cache_via::park ? budget_pool::park : budget_pool::pin;
}

// A conversation that becomes the resident prompt whole (read back from the session spill): the
// tokens its rows hold (the caller has written rows [0, tokens.size()) into the engine), how far
// they are exact, its spans, its grid anchors and its end anchor.
struct adopted_prompt {
  std::vector<token_id> tokens;
  std::size_t taint = 0;
  std::vector<token_span> reasoning, hidden, answers;
  token_id think_close = no_token;
  std::map<std::size_t, state_copy> anchors;  // at lines <= taint
  std::optional<end_record> end;              // end->rows is a prefix of tokens
  state_copy end_copy;
};

struct resident_options {
  bool end_anchor = true;       // --end-anchor
  bool end_align = true;        // --end-align
  std::size_t keep_newest = 4;  // anchors never evicted
};

// The resident prefix (docs/CACHES.md): the rows the last request left in the engine's own
// buffers, the tokens they hold, the grid anchors (sections at lines) and the end anchor
// (sections at the last position a generation forwarded).
//
// Rows are the engine's; this object knows which tokens they hold and how far they are exact:
// `taint` is the lowest row that a grid prefill from an exact state did not write (decode rows,
// rows of a prefill resumed off the grid, rows of a short last chunk, which depend on where
// that chunk ended). Grid anchors are only taken at lines <= taint; a resume at one of them is
// bit-exact against a cold prefill. A resume at the end anchor is a session resume.
//
// The owner (the board) calls, for every request:
//   offer(prompt) -> restore(state, offer) or a cold reset -> begin(served, at, exact)
//   -> after_prefill_step(state) after each chunk -> end_generation(...) once decoding ends.
// Not thread-safe.
class resident_prefix {
 public:
  resident_prefix(memory_budget& budget, resident_options opts, budget_pool pool = budget_pool::resident);
  ~resident_prefix() { clear(); }
  resident_prefix(const resident_prefix&) = delete;
  resident_prefix& operator=(const resident_prefix&) = delete;

  // The best resume for `prompt`: the end anchor when the prompt starts with the rows' tokens up
  // to it (after end alignment), else the largest grid anchor at or below the tokens the
  // prompt shares with the rows, leaving at least one token to forward. nullopt: nothing.
  std::optional<resume_offer> offer(const std::vector<token_id>& prompt) const;

  // Restores the offer's sections and sets the valid length to offer.at. The rows below it are
  // the engine's own and already hold the offer's tokens; for an offer via a pinned head or a
  // parked session, its rows are written back first (the rows in place are parked in turn when
  // they are another session's) and it becomes the resident prompt.
  void restore(state_adapter& into, kernels::backend where, const resume_offer& offer);

  // The engine now holds `o.served`'s first `o.at` rows and will prefill the rest from there.
  // o.exact: the state at o.at is a cold prefill's (cold start, grid anchor, grid snapshot);
  // o.rows_replaced: the restore wrote rows [0, o.at) (a store snapshot), whose first
  // o.exact_to are a cold prefill's.
  void begin(const resume_offer& o);

  // After a prefill chunk: anchors the state if it stands on a line, or right after an image's
  // rows (where the engine ends a chunk too), and the run is exact.
  void after_prefill_step(const state_adapter& state, kernels::backend where);

  // After a generation: the rows hold record.rows (the served prompt and the forwarded output);
  // record's spans are the output's. The spans of earlier answers the rows still hold below the
  // prompt's end are added, so a client that drops their reasoning later still aligns. Marks
  // decode rows tainted and, with end_anchor on, copies the sections as the end anchor.
  void end_generation(const state_adapter& state, kernels::backend where, end_record record);

  // Before a request that resumes at `from` rewrites the rows above it: sets rows [from, end)
  // aside as `kind` (pin or park, held in pool_of(kind)), as many as the pool holds,
  // with anchors over them (pin: up to 8 spread; park: the newest 4 and the end anchor). The
  // anchors move out of the resident set. Replaces the earlier one of that kind. Returns whether
  // anything was kept.
  bool set_aside(const state_adapter& state, kernels::backend where, cache_via kind, std::size_t from);
  const saved_prompt* saved(cache_via kind) const;

  // The rows in place are `p`'s now (the caller wrote them): its tokens, taint, spans, anchors
  // (as many as the pool holds, newest kept) and end anchor (when the pool holds it) replace the
  // resident ones. The pinned head and the parked session stay (they check the rows in place).
  void adopt(adopted_prompt p);

  // Everything dropped: the next request starts cold.
  void clear();
  // Drops the set-aside prompts (pin, park) only.
  void clear_saved();
  // Drops grid anchors (the cheapest first, never the newest four: anchor_set) while the pool
  // holds more than its limit (a limit lowered while the server runs).
  void shrink_to_limit() { anchors_.reserve_evicting(0); }

  const std::vector<token_id>& tokens() const { return tokens_; }
  std::size_t taint() const { return taint_; }
  const anchor_set& anchors() const { return anchors_; }
  bool has_end_anchor() const { return end_.has_value(); }
  std::size_t end_position() const { return end_ ? end_->rows.size() : 0; }
  std::size_t bytes() const { return anchors_.bytes() + end_copy_.bytes(); }
  long end_refusals() const { return end_refusals_; }
  // What a spill of the conversation in place needs (docs/SPILL.md).
  const std::vector<token_span>& reasoning() const { return reasoning_; }
  const std::vector<token_span>& hidden() const { return hidden_; }
  const std::vector<token_span>& answers() const { return answers_; }
  token_id think_close() const { return think_close_; }
  const end_record* end() const { return end_ ? &*end_ : nullptr; }
  const state_copy& end_copy() const { return end_copy_; }

 private:
  void drop_end();
  // Blocks the end alignment skipped become hidden spans (the reasoning spans in them go).
  void keep_hidden(const std::vector<token_span>& blocks);
  std::optional<resume_offer> offer_saved(const saved_prompt& s, const std::vector<token_id>& prompt) const;
  void bring_back(state_adapter& into, kernels::backend where, const resume_offer& offer);
  void release_saved(saved_prompt& s);

  memory_budget& budget_;
  resident_options opts_;
  budget_pool pool_;
  std::vector<token_id> tokens_;                          // what rows [0, tokens_.size()) hold
  std::size_t taint_ = 0;                                 // rows [0, taint_) are a cold grid prefill's
  std::vector<token_id> served_;                          // the running request's prompt
  std::vector<token_span> reasoning_, hidden_, answers_;  // spans of earlier answers in tokens_
  token_id think_close_ = no_token;                       // </think> of the tokenizer the spans came from
  bool exact_run_ = false;                                // the running prefill started from an exact state
  anchor_set anchors_;
  std::optional<end_record> end_;
  state_copy end_copy_;
  long end_refusals_ = 0;
  std::map<cache_via, saved_prompt> saved_;  // pin, park
 public:
  long set_aside_refusals = 0;
};

}  // namespace anchorage
