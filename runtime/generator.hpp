#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "runtime/engine.hpp"
#include "runtime/sampler.hpp"

namespace anchorage {

enum class finish_reason { none, stop, length };

struct generation_request {
  sampling_params sampling;
  int max_tokens = 16;
  std::vector<token_id> stop_tokens;
  // Resuming a generation: the next step's number and the token sampled last and not yet
  // forwarded (the state holds every token before it).
  std::uint64_t first_step = 0;
  std::optional<token_id> pending;
};

// Drives decode one token per step. Step k forwards the pending token (if any), samples token k
// from the last logits with (seed, k) and makes it pending. So after any step the engine's
// state, the seed, next_step() and pending() are everything a continuation needs: a generation
// stopped at step k and resumed from (state, seed, k, pending) emits the same tokens.
// A stop token ends the generation and is not emitted; it stays pending, never forwarded.
class generator {
 public:
  generator(engine& e, generation_request r);

  // One step: the emitted token, or nullopt once finished.
  std::optional<token_id> step();
  // Runs to the end; returns the emitted tokens.
  std::vector<token_id> run();

  bool done() const { return reason_ != finish_reason::none; }
  finish_reason reason() const { return reason_; }
  std::uint64_t next_step() const { return step_; }
  std::optional<token_id> pending() const { return pending_; }
  int emitted() const { return emitted_; }

 private:
  engine& engine_;
  generation_request req_;
  std::uint64_t step_;
  std::optional<token_id> pending_;
  int emitted_ = 0;
  finish_reason reason_ = finish_reason::none;
};

}  // namespace anchorage
