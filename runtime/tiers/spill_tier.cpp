#include "runtime/tiers/spill_tier.hpp"

#include "runtime/core/log.hpp"

namespace anchorage {

spill_tier::spill_tier(std::shared_ptr<spill_keeper> keeper, device_tier& device, const cache_options& opts,
                       kernels::backend where)
    : keeper_(std::move(keeper)), device_(device), opts_(opts), where_(where) {}

std::optional<resume_offer> spill_tier::offer(tier_lookup& l, std::size_t floor) {
  planned_.reset();
  fetched_.reset();
  fetch_failed_ = false;
  if (l.guest) return std::nullopt;
  planned_ = keeper_->offer(*l.prompt, floor, l.prefill_tokens_per_s, opts_.end_anchor, opts_.end_align,
                            &l.declined_at);
  if (!planned_) return std::nullopt;
  return planned_->offer;
}

tier_fetch spill_tier::fetch(const resume_offer&) const {
  if (!planned_) return {};
  if (spill_fetch_ptr f = keeper_->plan_fetch(planned_->id)) return f;
  return {};
}

void spill_tier::take_fetched(tier_fetched& reply) {
  auto* const* own = std::get_if<spill_fetch*>(&reply);
  if (!own || !*own) return;
  spill_fetch& f = **own;
  fetched_.reset();
  if (!planned_ || f.id != planned_->id) return;
  auto got = keeper_->fetched(f);
  if (got) fetched_ = std::move(*got);
  fetch_failed_ = !got;
}

restore_result spill_tier::restore(state_adapter& into, const resume_offer& o) {
  if (!planned_ || planned_->offer.at != o.at) return restore_result::stale;
  // Every file read and verified (by the spill reader) before anything changes: without that
  // read (the conversation was gone by then), or after a failed one, the tiers above.
  if (!fetched_ || fetched_->manifest.id != planned_->id)
    return fetch_failed_ ? restore_result::failed_checks : restore_result::stale;
  const spill_read read = std::move(*fetched_);
  fetched_.reset();
  take_in(into, read, o.at);
  return restore_result::restored;
}

void spill_tier::take_in(state_adapter& into, const spill_read& read, std::optional<std::size_t> at) {
  const spill_manifest& m = read.manifest;
  device_.make_way(into, m.tokens, m.session_key);
  keeper_->apply(read, into, where_, device_.resident());
  resident_prefix& r = device_.resident();
  if (!at) {
    if (r.has_end_anchor()) {
      at = r.end_position();
    } else if (auto p = r.anchors().best_at_or_below(r.tokens().size())) {
      at = *p;
    } else {
      return;
    }
  }
  // The sections from the anchors the conversation brought.
  resume_offer o;
  o.at = *at;
  o.source = r.has_end_anchor() && r.end_position() == *at ? cache_source::end : cache_source::resident;
  o.via = cache_via::none;
  r.restore(into, where_, o);
}

void spill_tier::begin(const resume_offer& o, const state_adapter&, const tier_lookup&, bool) {
  if (o.source == cache_source::spill) keeper_->count_hit(o.at);
  planned_.reset();
  fetched_.reset();
}

void spill_tier::clear(cache_tier) {
  planned_.reset();
  fetched_.reset();
  keeper_->clear();
}

void spill_tier::stats(cache_stats& into) const { into.spill = keeper_->stats(); }

}  // namespace anchorage
