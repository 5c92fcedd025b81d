#pragma once
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

#include "protocol/cache_source.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/generation/sampler.hpp"

namespace anchorage {

struct generation_request {
  sampling_params sampling;
  int max_tokens = 16;
  std::vector<token_id> stop_tokens;
  // Resuming a generation: the next step's number, the token emitted last and not yet
  // forwarded (the state holds every token before it), and the forced tokens still queued.
  std::uint64_t first_step = 0;
  std::optional<token_id> pending;
  std::vector<token_id> forced;
};

// Drives decode one token per step. A step forwards the pending token (if any), then makes the
// next token pending and emits it: the first forced token queued (see force()) when there is
// one, otherwise the token sampled from the last logits with (seed, next_step()), after which
// next_step() advances. Only sampling consumes a step number, so the draws of the sampled
// tokens do not depend on how many tokens were forced between them.
//
// Resume contract: after any step the engine's state, the seed, next_step(), pending() and
// queued() are everything a continuation needs: a generation stopped after any step and
// resumed from (state, seed, next_step(), pending(), queued()) emits the same tokens. pending()
// may be a forced token; it is forwarded by the next step like a sampled one.
//
// A sampled stop token ends the generation and is not emitted; it stays pending, never
// forwarded. A forced token is emitted as given, never read as a stop. Forced tokens count
// toward max_tokens and emitted() like sampled ones: a generation may end (length) with tokens
// still queued.
class generator {
 public:
  generator(engine& e, generation_request r);

  // One step: the emitted token, or nullopt once finished.
  std::optional<token_id> step();
  // A step in two halves, for a decode batched over several generations (decode_batch): the
  // token this step forwards first (the pending one; nullopt when it forwards none: the first
  // step, a finished generation, or a full context, which step() then handles), and the step
  // after the caller forwarded that token itself. step() is exactly the two in order.
  std::optional<token_id> to_forward() const;
  std::optional<token_id> step_forwarded();
  // The second half with the logits given: a verify round (docs/SPECULATIVE.md) forwards the
  // pending token and drafts in one go, and the row of each forwarded token is read here in turn.
  // step_forwarded() is step_forwarded(engine's last_logits()).
  std::optional<token_id> step_forwarded(const std::vector<float>& logits);
  // Runs to the end; returns the emitted tokens.
  std::vector<token_id> run();

  // Queues `tokens` after those already queued; the following steps emit them, one per step,
  // instead of sampling. Does nothing once the generation is done.
  void force(const std::vector<token_id>& tokens);

  bool done() const { return reason_.has_value(); }
  // stop or length once done(); nullopt before.
  std::optional<run_finish> reason() const { return reason_; }
  std::uint64_t next_step() const { return step_; }
  std::optional<token_id> pending() const { return pending_; }
  // The forced tokens not yet emitted, in order.
  std::vector<token_id> queued() const { return {forced_.begin(), forced_.end()}; }
  // Whether the token the last step() emitted was forced rather than sampled.
  bool last_forced() const { return last_forced_; }
  int emitted() const { return emitted_; }

 private:
  std::optional<token_id> emit(const std::vector<float>& logits);

  engine& engine_;
  generation_request req_;
  std::uint64_t step_;
  std::optional<token_id> pending_;
  std::deque<token_id> forced_;
  bool last_forced_ = false;
  int emitted_ = 0;
  std::optional<run_finish> reason_;
};

}  // namespace anchorage
