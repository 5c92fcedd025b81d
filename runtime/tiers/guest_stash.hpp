#pragma once
#include <cstddef>

#include "runtime/cache/memory_budget.hpp"
#include "runtime/engine/row_copy.hpp"

namespace anchorage {

// Guests (seed §13.4): a prompt of at most guest_max tokens and under a quarter of the resident
// one leaves the resident prompt as it was: the rows it can write are copied aside (the stash,
// held in the budget's stash pool) before it runs and written back when it ends (finished, cancelled or
// failed). A refused stash makes the guest an ordinary request. Not thread-safe: one owner (cache_tiers).
class guest_stash {
 public:
  guest_stash(memory_budget& budget, std::size_t guest_max, kernels::backend where)
      : budget_(budget), guest_max_(guest_max), where_(where) {}
  guest_stash(const guest_stash&) = delete;
  guest_stash& operator=(const guest_stash&) = delete;

  // Whether a prompt of `n` tokens is a guest beside `resident_rows` resident rows.
  bool is_guest(std::size_t n, std::size_t resident_rows) const {
    return guest_max_ > 0 && n <= guest_max_ && 4 * n < resident_rows;
  }
  // The rows a guest resuming at `at` of `served` tokens can write past its start: the rest of
  // its prompt, its output, the rows the server may add unseen, and two margins of 512.
  static std::size_t need(std::size_t served, std::size_t at, std::size_t max_tokens,
                          std::size_t hidden_reserve) {
    return (served - (at < served ? at : served)) + max_tokens + hidden_reserve + 2 * 512;
  }

  // Before a guest on slot 0 runs from `at`: copies rows [at, min(resident_rows, at + need))
  // of `state` aside. False (a refusal counted, nothing held) when the pool cannot hold them.
  // Throws what the copy throws (nothing held then either).
  bool take(const state_adapter& state, std::size_t at, std::size_t resident_rows, std::size_t need);
  // The guest ended: the rows go back into `state` and the pool's bytes are released (first: a
  // restore that throws keeps none). Nothing when nothing is held.
  void give_back(state_adapter& state);
  bool holding() const { return holding_; }

  long stashed() const { return stashed_; }
  long refusals() const { return refusals_; }

 private:
  memory_budget& budget_;
  std::size_t guest_max_;
  kernels::backend where_;
  row_copy rows_;
  std::size_t bytes_ = 0;
  bool holding_ = false;
  long stashed_ = 0, refusals_ = 0;
};

}  // namespace anchorage
