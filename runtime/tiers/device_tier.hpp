#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "runtime/cache/cache_options.hpp"
#include "runtime/cache/memory_budget.hpp"
#include "runtime/cache/resident_prefix.hpp"
#include "runtime/cache/state_store.hpp"
#include "runtime/tiers/tier.hpp"
#include "runtime/tiers/tier_counters.hpp"

namespace anchorage {

// The device tiers as one tier of the coordinator: the resident prefix (its grid anchors, end
// anchor, pinned head and parked session; sources resident and end) and the state store (source
// store), which share the budget and the rows: the store is taken only when it starts later than
// the resident prefix, and a request the resident prefix could not answer leaves a prefix
// snapshot in the store. Names: resident, store.
class device_tier final : public tier {
 public:
  device_tier(memory_budget& budget, const cache_options& opts, kernels::backend where);

  bool serves(cache_source s) const override {
    return s == cache_source::resident || s == cache_source::end || s == cache_source::store;
  }
  std::vector<cache_tier> names() const override { return {cache_tier::resident, cache_tier::store}; }
  std::optional<resume_offer> offer(tier_lookup& l, std::size_t floor) override;
  restore_result restore(state_adapter& into, const resume_offer& offer) override;
  void begin(const resume_offer& offer, const state_adapter& state, const tier_lookup& l,
             bool guest) override;
  void after_prefill_step(const state_adapter& state, kernels::backend where) override;
  void end_generation(const state_adapter& state, kernels::backend where, end_record record) override;
  void finish(state_adapter&) override {}
  void clear(cache_tier name) override;
  void stats(cache_stats& into) const override;

  const resident_prefix& resident() const { return resident_; }
  resident_prefix& resident() { return resident_; }

  // The session spill's eviction (docs/SPILL.md): called with the conversation in place before a
  // request of another session that is no guest overwrites it, when it holds at least
  // `min_tokens` tokens and the park pool cannot hold the rows it would lose. The hook copies
  // what it needs at once (the rows are rewritten right after).
  using evict_hook =
      std::function<void(const state_adapter& state, const resident_prefix& r, const std::string& session)>;
  void set_evict_hook(evict_hook hook, std::size_t min_tokens) {
    evict_hook_ = std::move(hook);
    spill_min_tokens_ = min_tokens;
  }
  // Before a conversation of `session` holding `incoming` replaces the rows in place whole (the
  // spill's read back): the one in place is set aside as for any request (another session's is
  // spilled by the hook when it must be, and parked from where the two part; the same session's
  // head is pinned), and `session` becomes the resident one.
  void make_way(const state_adapter& state, const std::vector<token_id>& incoming,
                const std::string& session);
  const std::string& resident_session() const { return resident_session_; }
  const std::string& parked_session() const { return parked_session_; }
  const state_store& store() const { return store_; }
  // After the budget's limits were lowered: the store's and the resident anchors' copies over
  // them evicted.
  void shrink_to_limits() {
    store_.shrink_to_limit();
    resident_.shrink_to_limit();
  }
  // Whether a budget refused a copy (a grid anchor, an end anchor, a store snapshot) since the
  // running request began: what it leaves was not all kept (miss reasons' budget_refused).
  bool refused_this_run() const { return refusals() > run_.refusals_at_begin; }

 private:
  // Copies a budget refused so far: grid anchors, end anchors, store snapshots.
  long refusals() const {
    return resident_.anchors().refusals() + resident_.end_refusals() + store_.refusals();
  }

  const cache_options opts_;
  kernels::backend where_;
  memory_budget& budget_;
  resident_prefix resident_;
  state_store store_;
  tier_counters resident_counts_, end_counts_, store_counts_;
  long pin_hits_ = 0, park_hits_ = 0;
  // The running request's: what begin() learns, until the next begin().
  struct running {
    const state_copy* planned_copy = nullptr;  // the store hit offer() made, until begin()
    std::size_t prefix_target = 0;  // the line where this prefill leaves a prefix snapshot; 0: none
    std::vector<token_id> served;
    long refusals_at_begin = 0;  // refusals() when the running request began
    bool guest = false;          // the running request is a guest
    bool exact = false;          // the running request started from a cold prefill's state
  } run_;
  std::string resident_session_;  // the session key of the resident prompt
  std::string parked_session_;    // the session key of the parked one
  evict_hook evict_hook_;
  std::size_t spill_min_tokens_ = 0;
  // The spill's eviction rule, before rows [from, end) of the resident prompt are set aside.
  void maybe_spill(const state_adapter& state, std::size_t from);
};

}  // namespace anchorage
