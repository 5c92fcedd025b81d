#pragma once
#include <cstddef>
#include <memory>
#include <optional>

#include "runtime/tiers/device_tier.hpp"
#include "runtime/tiers/spill_keeper.hpp"
#include "runtime/tiers/tier.hpp"

namespace anchorage {

// The session spill as the coordinator sees it (docs/SPILL.md), after the disk tier: a spilled
// conversation whose tokens the prompt starts with resumes at its end anchor or its newest
// usable grid anchor (source spill), when reading it costs less than the prefill it saves. The
// read is a fetch: fetch() plans it, the board's spill reader reads and verifies every file off
// the board's thread, take_fetched() hands the outcome back, and only then does restore() run
// (without a verified read of the planned conversation it refuses: the tiers above, or cold).
// Then the conversation in place is set aside as
// for any request (device_tier::make_way: spilled when it must be, parked), the spilled rows are
// written, and the conversation becomes the resident one with its anchors and end anchor.
// A guest never takes it (its rows would replace the resident ones). Name: spill.
class spill_tier final : public tier {
 public:
  spill_tier(std::shared_ptr<spill_keeper> keeper, device_tier& device, const cache_options& opts,
             kernels::backend where);
  // A verified read made the resident conversation: the one in place set aside
  // (device_tier::make_way), the rows written and the anchors adopted (spill_keeper::apply), and
  // the sections restored at `at` (the end anchor when it stands there, else the grid anchor);
  // without `at`, where the conversation ends (its end anchor, else its newest grid anchor, else
  // none). Throws what an allocation or a copy throws.
  void take_in(state_adapter& into, const spill_read& read, std::optional<std::size_t> at);

  bool serves(cache_source s) const override { return s == cache_source::spill; }
  std::vector<cache_tier> names() const override { return {cache_tier::spill}; }
  std::optional<resume_offer> offer(tier_lookup& l, std::size_t floor) override;
  restore_result restore(state_adapter& into, const resume_offer& offer) override;
  // The planned offer's read (nothing: no spill offer is planned, or its conversation is gone).
  tier_fetch fetch(const resume_offer& offer) const override;
  // The spill reader's outcome of fetch(), finished by the keeper (counted; a failure deletes
  // what failed): restore() takes it when it is verified.
  void take_fetched(tier_fetched& reply) override;
  void begin(const resume_offer& offer, const state_adapter&, const tier_lookup&, bool) override;
  void after_prefill_step(const state_adapter&, kernels::backend) override {}
  void end_generation(const state_adapter&, kernels::backend, end_record) override {}
  void finish(state_adapter&) override {
    planned_.reset();
    fetched_.reset();
  }
  void clear(cache_tier) override;
  void stats(cache_stats& into) const override;

 private:
  std::shared_ptr<spill_keeper> keeper_;
  device_tier& device_;
  cache_options opts_;
  kernels::backend where_;
  std::optional<spill_offer> planned_;  // what offer() found, until begin()
  std::optional<spill_read> fetched_;   // its verified read, until begin()
  bool fetch_failed_ = false;           // its read failed (a check, or I/O), until the next offer
};

}  // namespace anchorage
