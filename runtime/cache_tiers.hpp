#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/cache_options.hpp"
#include "runtime/memory_budget.hpp"
#include "runtime/resident_prefix.hpp"
#include "runtime/state_store.hpp"

namespace anchorage {


// The device tiers in lookup order (seed §13.2): the resident prefix (its end anchor and grid
// anchors), then the state store. A deeper tier is taken only when it starts later than every
// tier above it. Owns the budget that holds both to their limits (§13.12).
//
// One request goes: plan(prompt) -> restore(state, offer) (or the caller resets the engine for
// a cold start) -> begin(offer) -> after_prefill_step(state) per chunk -> end_generation(...).
// Not thread-safe: the board owns it, because the resident rows are the engine's own buffers
// and a lookup must see the rows the board will actually resume from.
class cache_tiers {
 public:
  explicit cache_tiers(cache_options opts);

  // The best offer for `prompt` (source "cold", at 0, served = prompt when no tier has one).
  resume_offer plan(const std::vector<token_id>& prompt);
  // Restores a non-cold offer into `into` (valid length = offer.at).
  void restore(state_adapter& into, const resume_offer& offer);
  // The engine holds offer.served's first offer.at rows; the prefill of the rest begins.
  void begin(const resume_offer& offer, const state_layout& layout);
  void after_prefill_step(const state_adapter& state, kernels::backend where);
  void end_generation(const state_adapter& state, kernels::backend where, end_record record);

  // Empties "resident", "store" or "all"; returns the tiers it emptied (empty for other names).
  std::vector<std::string> clear(const std::string& tier);

  // Per tier: entries, bytes, limit, hits, misses, evictions, refusals, tokens_saved.
  nlohmann::json stats() const;

  const resident_prefix& resident() const { return resident_; }
  const state_store& store() const { return store_; }
  const memory_budget& budget() const { return budget_; }
  const cache_options& options() const { return opts_; }

 private:
  struct tier_counters {
    long hits = 0;
    long misses = 0;
    long long tokens_saved = 0;
  };

  cache_options opts_;
  memory_budget budget_;
  resident_prefix resident_;
  state_store store_;
  tier_counters resident_counts_, end_counts_, store_counts_;
  std::size_t prefix_target_ = 0;  // the line where this prefill leaves a prefix snapshot; 0: none
  std::vector<token_id> served_;
  const state_copy* planned_copy_ = nullptr;  // the store hit plan() offered, until begin()
};

}  // namespace anchorage
