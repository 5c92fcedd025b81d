#include "runtime/tiers/cache_tiers.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/io/clock.hpp"

namespace anchorage {

cache_tiers::cache_tiers(cache_options opts, kernels::backend where, std::shared_ptr<memory_budget> budget)
    : opts_(opts),
      where_(where),
      shared_budget_(budget ? std::move(budget) : std::make_shared<memory_budget>()),
      budget_(*shared_budget_),
      guests_(budget_, opts.guest_max, where) {
  budget_.set_limit(budget_pool::resident, opts_.enabled ? opts_.resident_bytes : 0);
  budget_.set_limit(budget_pool::store, opts_.enabled ? opts_.store_bytes : 0);
  budget_.set_limit(budget_pool::stash, opts_.enabled ? opts_.stash_bytes : 0);
  budget_.set_limit(budget_pool::pin, opts_.enabled ? opts_.pin_bytes : 0);
  budget_.set_limit(budget_pool::park, opts_.enabled ? opts_.park_bytes : 0);
  auto device = std::make_unique<device_tier>(budget_, opts_, where_);
  device_ = device.get();
  tiers_.push_back(std::move(device));
}

void cache_tiers::set_limits(std::optional<std::size_t> resident_bytes,
                             std::optional<std::size_t> store_bytes) {
  if (!opts_.enabled) return;  // --no-cache: every limit stays 0
  if (resident_bytes) budget_.set_limit(budget_pool::resident, opts_.resident_bytes = *resident_bytes);
  if (store_bytes) budget_.set_limit(budget_pool::store, opts_.store_bytes = *store_bytes);
  device_->shrink_to_limits();
}

void cache_tiers::attach_disk() {
  if (disk_) throw std::logic_error("cache_tiers: a disk tier is attached already");
  auto a = std::make_unique<disk_offer_tier>();
  disk_ = a.get();
  tiers_.push_back(std::move(a));
}

void cache_tiers::attach_spill(std::shared_ptr<spill_keeper> keeper, device_tier::evict_hook hook) {
  if (spill_) throw std::logic_error("cache_tiers: a spill tier is attached already");
  device_->set_evict_hook(std::move(hook), keeper->min_tokens());
  auto t = std::make_unique<spill_tier>(std::move(keeper), *device_, opts_, where_);
  spill_ = t.get();
  tiers_.push_back(std::move(t));
}

tier* cache_tiers::owner_of(cache_tier name) const {
  for (const auto& t : tiers_)
    for (cache_tier n : t->names())
      if (n == name) return t.get();
  return nullptr;
}

tier* cache_tiers::owner_of(cache_source source) const {
  for (const auto& t : tiers_)
    if (t->serves(source)) return t.get();
  return nullptr;
}

void cache_tiers::expect(const request_info& info) {
  taken_.clear();
  lookup_ = tier_lookup{};
  lookup_.info = info;
  lookup_.prefill_tokens_per_s = meter_.tokens_per_s();
  prompt_.clear();
  lookup_.prompt = &prompt_;
  stash_need_ = 0;
  misses_.expect(info.session_key);
}

resume_offer cache_tiers::plan(const std::vector<token_id>& prompt, const request_info& info) {
  resume_offer cold;
  cold.served = prompt;
  expect(info);
  if (!opts_.enabled || prompt.empty()) return cold;
  prompt_ = prompt;
  lookup_.guest = info.force_guest || guests_.is_guest(prompt.size(), device_->resident().tokens().size());
  // Each tier in order, with the best start so far as its floor: a deeper one is taken only
  // when it starts later.
  for (auto& t : tiers_) {
    const std::size_t floor = taken_.empty() ? 0 : taken_.back().at;
    if (auto o = t->offer(lookup_, floor); o && o->at > floor) taken_.push_back(std::move(*o));
  }
  misses_.planned(lookup_.declined_at, lookup_.foreign_at);
  resume_offer o = taken_.empty() ? std::move(cold) : taken_.back();
  if (lookup_.guest) {
    o.via = cache_via::stash;
    stash_need_ = guest_stash::need(o.served.size(), o.at, info.max_tokens, info.hidden_reserve);
  }
  return o;
}

std::size_t cache_tiers::resident_floor(const std::vector<token_id>& prompt) const {
  if (!opts_.enabled || prompt.empty()) return 0;
  const auto o = device_->resident().offer(prompt);
  return o && o->via == cache_via::none ? o->at : 0;
}

tier_fetch cache_tiers::fetch(const resume_offer& o) const {
  if (o.source == cache_source::cold) return {};
  const tier* t = owner_of(o.source);
  return t ? t->fetch(o) : tier_fetch{};
}

void cache_tiers::take_fetched(tier_fetched reply) {
  for (auto& t : tiers_) t->take_fetched(reply);
}

void cache_tiers::restore(state_adapter& into, resume_offer& o) {
  while (o.source != cache_source::cold) {
    tier* t = owner_of(o.source);
    if (!t) throw std::logic_error(std::string("cache_tiers: no tier serves ") + to_string(o.source));
    const restore_result r = t->restore(into, o);
    if (r == restore_result::restored) return;
    misses_.read_failed(r == restore_result::failed_checks, o.at);
    // The read failed with the engine untouched: what the tiers above offered, else cold. A
    // guest stays the guest it was planned as (stashed).
    const cache_via guest_via = o.via == cache_via::stash ? o.via : cache_via::none;
    if (!taken_.empty()) taken_.pop_back();
    o = taken_.empty() ? resume_offer{} : taken_.back();
    if (o.source == cache_source::cold) o.served = prompt_;
    if (guest_via != cache_via::none) o.via = guest_via;
  }
}

void cache_tiers::begin(const resume_offer& o, const state_adapter& state) {
  taken_.clear();
  meter_.begin(state.valid_length(), steady_ns());
  via_ = o.via;
  guest_ = o.via == cache_via::stash;
  if (opts_.enabled && o.via == cache_via::stash) {
    // The rows the guest can reach are copied aside first; refused, the guest cuts the resident
    // rows at its start like any request.
    if (!guests_.take(state, o.at, device_->resident().tokens().size(), stash_need_)) {
      via_ = cache_via::none;
      guest_ = false;
    }
  }
  if (!opts_.enabled) return;
  misses_.judged(o.at, prompt_, static_cast<std::size_t>(std::max(0, state.layout().grid)), opts_.end_align);
  auto begin_all = [&](const resume_offer& offer) {
    for (auto& t : tiers_) t->begin(offer, state, lookup_, guest_);
  };
  if (via_ == o.via) return begin_all(o);
  // The tiers see the request as it runs: a guest whose stash was refused is an ordinary one.
  resume_offer running = o;
  running.via = via_;
  begin_all(running);
}

void cache_tiers::after_prefill_step(const state_adapter& state, kernels::backend where) {
  meter_.step(state.valid_length(), steady_ns());
  if (!opts_.enabled) return;
  for (auto& t : tiers_) t->after_prefill_step(state, where);
}

void cache_tiers::end_generation(const state_adapter& state, kernels::backend where, end_record record) {
  if (!opts_.enabled) return;
  // What the server holds of this turn once it ends (a guest leaves the rows as they were).
  if (!guest_) misses_.ended(held_sequence{record, lookup_.info.session_key, opts_.end_anchor, false});
  for (auto& t : tiers_) t->end_generation(state, where, record);
}

void cache_tiers::finish(state_adapter& state) {
  for (auto& t : tiers_) t->finish(state);
  misses_.finished(device_->refused_this_run());
  via_ = cache_via::none;
  guest_ = false;
  guests_.give_back(state);
}

std::vector<cache_tier> cache_tiers::clear(cache_tier tier) {
  std::vector<cache_tier> done;
  if (tier == cache_tier::all) misses_.clear_record();  // nothing is held: nothing is missed
  for (auto& t : tiers_)
    for (cache_tier n : t->names())
      if (tier == cache_tier::all || tier == n) {
        t->clear(n);
        done.push_back(n);
      }
  return done;
}

cache_stats cache_tiers::stats() const {
  cache_stats s;
  for (const auto& t : tiers_) t->stats(s);
  s.resident.guests_stashed = guests_.stashed();
  s.resident.stash_refusals = guests_.refusals();
  s.resident.stash_limit_bytes = budget_.limit(budget_pool::stash);
  s.enabled = opts_.enabled;
  s.miss_reasons = misses_.counts();
  return s;
}

}  // namespace anchorage
