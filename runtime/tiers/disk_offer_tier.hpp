#pragma once
#include <memory>
#include <optional>

#include "protocol/disk_types.hpp"
#include "runtime/tiers/tier.hpp"

namespace anchorage {

struct verified_read;

// The disk tier as the coordinator sees it. The disk is an actor of its own (actors/disk.hpp):
// its offer for a request is asked for by the run when it starts (before the plan), and its
// read is answered with verified bytes. This tier holds both for the running request:
//   expect(offer) before plan(): it offers offer.line when that starts later than the tiers
//   above and reading it beats prefilling the tokens it saves at the slot's measured rate
//   (tier_lookup::prefill_tokens_per_s);
//   take_fetched(read) once the disk answered its fetch(): restore() applies those bytes, or fails (nothing
//   read, or the read failed its checks) so the coordinator falls back to the offer above.
// A guest does not take it (its rows would replace the resident ones). Writing is the board's staging's
// (runtime/disk/disk_staging) and the disk actor's. Name: disk.
class disk_offer_tier final : public tier {
 public:
  // `foreign_line`: the deepest line only another engine's folder holds; `declined_line`: the
  // line of an anchor the disk declined by the cost rule (disk_offer_reply), 0: none.
  void expect(std::optional<disk_offer> offer, std::size_t foreign_line = 0, std::size_t declined_line = 0);
  // The offer plan() took for the running request, if it took the disk's.
  const std::optional<disk_offer>& taken() const { return taken_; }
  long declined() const { return declined_; }

  bool serves(cache_source s) const override { return s == cache_source::disk; }
  std::vector<cache_tier> names() const override { return {cache_tier::disk}; }
  std::optional<resume_offer> offer(tier_lookup& l, std::size_t floor) override;
  restore_result restore(state_adapter& into, const resume_offer& offer) override;
  // Its taken offer, read by the disk actor.
  tier_fetch fetch(const resume_offer&) const override {
    if (taken_) return *taken_;
    return {};
  }
  // The disk's answer: the verified bytes, or none (damaged: the offer's files failed their
  // checks).
  void take_fetched(tier_fetched& reply) override {
    if (auto* d = std::get_if<disk_fetched>(&reply)) {
      read_ = d->read;
      read_damaged_ = d->damaged;
    }
  }
  void begin(const resume_offer&, const state_adapter&, const tier_lookup&, bool) override { forget(); }
  void after_prefill_step(const state_adapter&, kernels::backend) override {}
  void end_generation(const state_adapter&, kernels::backend, end_record) override {}
  void finish(state_adapter&) override { forget(); }
  void clear(cache_tier) override { forget(); }
  void stats(cache_stats&) const override {}

 private:
  void forget();

  std::optional<disk_offer> offer_;  // the queued request's, until begin()
  std::optional<disk_offer> taken_;  // what plan() took
  std::shared_ptr<const verified_read> read_;
  std::size_t foreign_line_ = 0;
  std::size_t declined_line_ = 0;
  long declined_ = 0;
  bool read_damaged_ = false;
};

}  // namespace anchorage
