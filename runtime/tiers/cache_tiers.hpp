#pragma once
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/cache/cache_options.hpp"
#include "runtime/cache/memory_budget.hpp"
#include "runtime/tiers/device_tier.hpp"
#include "runtime/tiers/disk_offer_tier.hpp"
#include "runtime/tiers/guest_stash.hpp"
#include "runtime/tiers/held_record.hpp"
#include "runtime/tiers/prefill_meter.hpp"
#include "runtime/tiers/spill_tier.hpp"
#include "runtime/tiers/tier.hpp"

namespace anchorage {

// The coordinator of the cache tiers, in lookup order (seed §13.2): the device tiers (the
// resident prefix with its end anchor, grid anchors, pinned head and parked session; then the
// state store: device_tier), then the disk tier when one is attached (disk_offer_tier: the disk
// actor's offer and verified read for the running request). A
// deeper tier is taken only when it starts later than every tier above it. Owns the budget that
// holds the device tiers to their limits (§13.12), and the guests' stash.
//
// One request goes: plan(prompt, info) -> [fetch(offer), its read off the board's thread,
// take_fetched(reply)] -> restore(state, offer) (or the caller resets the
// engine for a cold start) -> begin(offer, state) -> after_prefill_step(state) per chunk ->
// end_generation(...) once decoding ends -> finish(state) always, last. Each call is each
// tier's (tier.hpp), in order.
//
// A guest (guest_stash: a prompt of at most guest_max tokens and under a quarter of the resident
// one) leaves the resident prompt as it was: the rows it can write are stashed at begin() and
// written back at finish() (via stash).
// Not thread-safe: the board owns it, because the resident rows are the engine's own buffers
// and a lookup must see the rows the board will actually resume from.
class cache_tiers {
 public:
  // `budget`: the budget to hold the device tiers to, shared with other slots' tiers (the budgets
  // are global, not per slot); null: a budget of their own. Its limits are set from `opts`.
  explicit cache_tiers(cache_options opts, kernels::backend where = kernels::backend::cpu,
                       std::shared_ptr<memory_budget> budget = nullptr);

  // What the tiers know of the next request before it begins: plan() does this first; a request
  // that does not plan (a generation resumed from its checkpoint) says it here.
  void expect(const request_info& info);
  // The best offer for `prompt` (source cold, at 0, served = prompt when no tier has one).
  resume_offer plan(const std::vector<token_id>& prompt, const request_info& info = {});
  // What restore() of `offer` needs read first (tier.hpp's tier_fetch), asked of the tier whose
  // offer it is: nothing for a cold start or a device tier's offer.
  tier_fetch fetch(const resume_offer& offer) const;
  // A fetch's reply, handed to every tier (each takes only its own).
  void take_fetched(tier_fetched reply);
  // Restores a non-cold offer into `into` (valid length = offer.at). An offer whose read fails
  // (the engine untouched: a disk read) falls back to what the tiers above offered: `offer` is
  // then that one (possibly cold; the caller resets the engine).
  void restore(state_adapter& into, resume_offer& offer);
  // The engine (`state`, slot 0 unless offer.via is side) holds offer.served's first
  // offer.at rows; the prefill of the rest begins. Sets aside what the request will overwrite.
  void begin(const resume_offer& offer, const state_adapter& state);
  void after_prefill_step(const state_adapter& state, kernels::backend where);
  void end_generation(const state_adapter& state, kernels::backend where, end_record record);
  // The request is over (finished, cancelled or failed after begin): a guest's stash goes back.
  void finish(state_adapter& state);

  // The disk tier (docs/DISK_TIER.md): consulted after the store. Optional: without one the
  // tiers are the device's only.
  void attach_disk();
  // The session spill (docs/SPILL.md): consulted after the disk; `hook` is called when a request
  // of another session evicts a conversation the park cannot hold (device_tier::set_evict_hook).
  void attach_spill(std::shared_ptr<spill_keeper> keeper, device_tier::evict_hook hook);
  spill_tier* spill() { return spill_; }
  const device_tier& device() const { return *device_; }
  device_tier& device() { return *device_; }
  // The record of what was held that the miss reasons are judged against (held_record.hpp):
  // one for every slot of a board; by default the coordinator's own.
  void share_record(std::shared_ptr<held_record> held) { misses_.share_record(std::move(held)); }
  const held_record& held() const { return misses_.held(); }
  // The running request's miss, once begin() has judged it; nothing when it resumed as deep as
  // it shared.
  const std::optional<miss>& last_miss() const { return misses_.last(); }
  // Any other tier, asked after those attached before it (a tier to come, a test's fake).
  void attach(std::unique_ptr<tier> t) { tiers_.push_back(std::move(t)); }
  disk_offer_tier* disk() { return disk_; }
  const disk_offer_tier* disk() const { return disk_; }

  // Whether the tier exists here: every tier but the disk, which exists when one is attached.
  bool has(cache_tier tier) const { return tier == cache_tier::all || owner_of(tier) != nullptr; }
  // Empties the tier (all: every tier there is); returns the tiers it emptied (nothing for the
  // disk when none is attached).
  std::vector<cache_tier> clear(cache_tier tier);

  // An operator's new device budgets (resident, store; the budget is every slot's): the limits
  // set, and this slot's copies over them evicted. Other slots sharing the budget call it too.
  void set_limits(std::optional<std::size_t> resident_bytes, std::optional<std::size_t> store_bytes);

  // Per tier: entries, bytes, limit, hits, misses, evictions, refusals, tokens_saved, ...
  cache_stats stats() const;

  // Where the rows in place resume `prompt` (their end anchor or a grid anchor; 0: nowhere),
  // counting nothing: the floor a request hands the disk before its plan, so that the disk and
  // its remote level look only for deeper starts. (The plan may still start deeper, from the
  // state store or a set-aside prompt; never shallower, since the rows in place are always taken.)
  std::size_t resident_floor(const std::vector<token_id>& prompt) const;

  const resident_prefix& resident() const { return device_->resident(); }
  const state_store& store() const { return device_->store(); }
  const memory_budget& budget() const { return budget_; }
  const cache_options& options() const { return opts_; }
  const guest_stash& guests() const { return guests_; }
  // The slot's prefill rate, measured from every request's chunks (0: unmeasured); each plan()
  // hands it to every tier's offer (tier_lookup::prefill_tokens_per_s).
  double prefill_tokens_per_s() const { return meter_.tokens_per_s(); }
  // What serves the running request beyond its source: none, stash, side, pin or park (after
  // begin(); a refused stash makes a guest an ordinary request).
  cache_via running_via() const { return via_; }

 private:
  tier* owner_of(cache_tier name) const;
  tier* owner_of(cache_source source) const;

  cache_options opts_;
  kernels::backend where_;
  std::shared_ptr<memory_budget> shared_budget_;
  memory_budget& budget_;
  guest_stash guests_;
  std::vector<std::unique_ptr<tier>> tiers_;  // lookup order
  device_tier* device_ = nullptr;             // tiers_[0]
  disk_offer_tier* disk_ = nullptr;           // when attached
  spill_tier* spill_ = nullptr;               // when attached
  tier_lookup lookup_;                        // the running request's
  std::vector<token_id> prompt_;              // what lookup_.prompt points at
  // The offers plan() took, best last: a restore that fails falls back to the one before.
  std::vector<resume_offer> taken_;
  miss_judge misses_;  // the running request's start judged at begin(), its rows recorded at finish()
  cache_via via_ = cache_via::none;  // the running request's via
  bool guest_ = false;               // the running request is a guest (stashed)
  std::size_t stash_need_ = 0;       // rows the running guest can write past its start
  prefill_meter meter_;
};

}  // namespace anchorage
