#pragma once
#include <memory>
#include <optional>

#include "runtime/disk/disk_tier.hpp"
#include "runtime/tiers/tier.hpp"

namespace anchorage {

// The disk tier (seed §13.7) as a tier of the coordinator: it offers after the device tiers,
// when it starts later and its read beats the prefill it saves; a guest on slot 0 does not take
// it (its rows would replace the resident ones), a guest on a side slot does, into the side
// slot's own buffers, writing nothing. A failed read is a refusal: the coordinator falls back
// to the offer above. It writes behind every request that is not a guest. Name: disk.
class disk_tier_adapter final : public tier {
 public:
  explicit disk_tier_adapter(std::unique_ptr<disk_tier> disk) : disk_(std::move(disk)) {}

  bool serves(cache_source s) const override { return s == cache_source::disk; }
  std::vector<cache_tier> names() const override { return {cache_tier::disk}; }
  std::optional<resume_offer> offer(tier_lookup& l, std::size_t floor) override;
  bool restore(state_adapter& into, const resume_offer& offer) override;
  void begin(const resume_offer& offer, const state_adapter& state, const tier_lookup& l,
             bool guest) override;
  void after_prefill_step(const state_adapter& state, kernels::backend) override {
    if (!guest_) disk_->after_prefill_step(state);
  }
  void end_generation(const state_adapter&, kernels::backend, end_record) override {}
  void finish(state_adapter& state) override {
    if (!guest_) disk_->finish(state);
  }
  void clear(cache_tier) override { disk_->clear(); }
  void stats(cache_stats& into) const override;

  disk_tier& disk() { return *disk_; }
  const disk_tier& disk() const { return *disk_; }

 private:
  std::unique_ptr<disk_tier> disk_;
  std::optional<disk_tier_offer> planned_;  // the offer made, until restore()
  bool guest_ = false;
};

}  // namespace anchorage
