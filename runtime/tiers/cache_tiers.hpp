#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/cache/cache_options.hpp"
#include "runtime/disk/disk_tier.hpp"
#include "runtime/cache/memory_budget.hpp"
#include "runtime/cache/resident_prefix.hpp"
#include "runtime/engine/row_copy.hpp"
#include "runtime/cache/state_store.hpp"

namespace anchorage {

// What the lookup needs to know of a request besides its prompt.
struct request_info {
  std::string session_key;       // a request of another session parks the resident one
  std::size_t max_tokens = 0;    // a guest's stash holds its output too
  std::size_t hidden_reserve = 0;  // rows the server may add unseen (the reasoning budget's phrase)
  bool side_slot_free = false;   // --parallel: a guest can run on a side slot instead
  std::optional<std::size_t> user_start;  // where the last user message starts (disk admission)
};

// The device tiers in lookup order (seed §13.2): the resident prefix (its end anchor, grid
// anchors, pinned head and parked session), then the state store. A deeper tier is taken only
// when it starts later than every tier above it. Owns the budget that holds all of them to
// their limits (§13.12).
//
// One request goes: plan(prompt, info) -> restore(state, offer) (or the caller resets the
// engine for a cold start) -> begin(offer, state) -> after_prefill_step(state) per chunk ->
// end_generation(...) once decoding ends -> finish(state) always, last.
//
// A guest (seed §13.4: a prompt of at most guest_max tokens and under a quarter of the resident
// one) leaves the resident prompt as it was: it runs on a side slot when one is free (offer.via
// side: the caller runs it on that engine, the tiers touch none of slot 0's state), or else
// the rows it can write are stashed at begin() and written back at finish() (via stash).
// Not thread-safe: the board owns it, because the resident rows are the engine's own buffers
// and a lookup must see the rows the board will actually resume from.
class cache_tiers {
 public:
  explicit cache_tiers(cache_options opts, kernels::backend where = kernels::backend::cpu);

  // What the tiers know of the next request before it begins: plan() does this first; a request
  // that does not plan (a generation resumed from its checkpoint) says it here.
  void expect(const request_info& info);
  // The best offer for `prompt` (source cold, at 0, served = prompt when no tier has one).
  resume_offer plan(const std::vector<token_id>& prompt, const request_info& info = {});
  // Restores a non-cold offer into `into` (valid length = offer.at). A disk offer whose read
  // fails (the engine untouched, the broken chain deleted) falls back to what the tiers above
  // offered: `offer` is then that one (possibly cold; the caller resets the engine).
  void restore(state_adapter& into, resume_offer& offer);
  // The engine (`state`, slot 0 unless offer.via is side) holds offer.served's first
  // offer.at rows; the prefill of the rest begins. Sets aside what the request will overwrite.
  void begin(const resume_offer& offer, const state_adapter& state);
  void after_prefill_step(const state_adapter& state, kernels::backend where);
  void end_generation(const state_adapter& state, kernels::backend where, end_record record);
  // The request is over (finished, cancelled or failed after begin): a guest's stash goes back.
  void finish(state_adapter& state);

  // The disk tier (seed §13.7): consulted after the store, written behind. Optional: without
  // one the tiers are the device's only.
  void attach_disk(std::unique_ptr<disk_tier> disk) { disk_ = std::move(disk); }
  disk_tier* disk() { return disk_.get(); }
  // The staged writes ready for the disk writer, and its report back.
  std::vector<std::shared_ptr<disk_job>> take_disk_jobs();
  void disk_written(const disk_job& job);

  // Whether the tier exists here: every tier but the disk, which exists when one is attached.
  bool has(cache_tier tier) const { return tier != cache_tier::disk || disk_ != nullptr; }
  // Empties the tier (all: every tier there is); returns the tiers it emptied (nothing for the
  // disk when none is attached).
  std::vector<cache_tier> clear(cache_tier tier);

  // Per tier: entries, bytes, limit, hits, misses, evictions, refusals, tokens_saved.
  nlohmann::json stats() const;

  const resident_prefix& resident() const { return resident_; }
  const state_store& store() const { return store_; }
  const memory_budget& budget() const { return budget_; }
  const cache_options& options() const { return opts_; }
  // What serves the running request beyond its source: none, stash, side, pin or park (after
  // begin(); a refused stash makes a guest an ordinary request).
  cache_via running_via() const { return via_; }

 private:
  struct tier_counters {
    long hits = 0;
    long misses = 0;
    long long tokens_saved = 0;
  };
  bool is_guest(std::size_t prompt_tokens) const;

  cache_options opts_;
  kernels::backend where_;
  memory_budget budget_;
  resident_prefix resident_;
  state_store store_;
  tier_counters resident_counts_, end_counts_, store_counts_;
  long guests_stashed_ = 0, guests_side_ = 0, stash_refusals_ = 0, pin_hits_ = 0, park_hits_ = 0;
  std::size_t prefix_target_ = 0;  // the line where this prefill leaves a prefix snapshot; 0: none
  std::vector<token_id> served_;
  const state_copy* planned_copy_ = nullptr;  // the store hit plan() offered, until begin()
  cache_via via_ = cache_via::none;  // the running request's via
  bool guest_ = false;             // the running request is a guest (stash or side slot)
  bool run_exact_ = false;         // the running request started from a cold prefill's state
  std::size_t stash_need_ = 0;     // rows the running guest can write past its start
  row_copy stash_;                 // the running guest's stash
  std::size_t stash_bytes_ = 0;
  std::unique_ptr<disk_tier> disk_;
  std::optional<disk_offer> disk_planned_;     // the disk offer plan() took, until restore()
  std::optional<resume_offer> disk_fallback_;  // what the tiers above offered when the disk won
  std::optional<std::size_t> pending_user_start_;
  std::string resident_session_;   // the session key of the resident prompt
  std::string pending_session_;    // the running request's
};

}  // namespace anchorage
