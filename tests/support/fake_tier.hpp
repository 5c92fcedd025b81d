#pragma once
// Tiers for the coordinator's tests: fake_tier answers for the disk and does nothing at every
// call; disk_like_offer is the offer a disk or spill read would make at `at`. A test's tier
// overrides only what it scripts.
#include <cstddef>
#include <optional>
#include <vector>

#include "runtime/tiers/tier.hpp"

namespace anchorage::testing {

class fake_tier : public tier {
 public:
  bool serves(cache_source s) const override { return s == cache_source::disk; }
  std::vector<cache_tier> names() const override { return {cache_tier::disk}; }
  std::optional<resume_offer> offer(tier_lookup&, std::size_t) override { return std::nullopt; }
  restore_result restore(state_adapter&, const resume_offer&) override { return restore_result::stale; }
  void begin(const resume_offer&, const state_adapter&, const tier_lookup&, bool) override {}
  void after_prefill_step(const state_adapter&, kernels::backend) override {}
  void end_generation(const state_adapter&, kernels::backend, end_record) override {}
  void finish(state_adapter&) override {}
  void clear(cache_tier) override {}
  void stats(cache_stats&) const override {}
};

// The disk's offer of a start at `at` in `l`'s prompt (nothing at or under `floor`, or when the
// prompt does not pass `at`).
inline std::optional<resume_offer> disk_like_offer(const tier_lookup& l, std::size_t floor, std::size_t at) {
  if (at <= floor || l.prompt->size() <= at) return std::nullopt;
  resume_offer o;
  o.source = cache_source::disk;
  o.at = at;
  o.served = *l.prompt;
  o.exact_to = at;
  return o;
}

}  // namespace anchorage::testing
