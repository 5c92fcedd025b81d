#include "runtime/tiers/disk_tier_adapter.hpp"

#include "runtime/core/log.hpp"

namespace anchorage {

std::optional<resume_offer> disk_tier_adapter::offer(tier_lookup& l, std::size_t floor) {
  planned_.reset();
  if (l.stashed()) return std::nullopt;
  auto d = disk_->offer(*l.prompt, floor);
  if (!d) return std::nullopt;
  // A disk restore is a cold grid prefill's state, rows included.
  resume_offer o;
  o.source = cache_source::disk;
  o.at = d->line;
  o.served = *l.prompt;
  o.exact = true;
  o.exact_to = d->line;
  o.rows_replaced = true;
  planned_ = std::move(*d);
  return o;
}

bool disk_tier_adapter::restore(state_adapter& into, const resume_offer& o) {
  if (!planned_) throw std::logic_error("cache_tiers: restore of a disk offer plan() did not make");
  const disk_tier_offer d = std::move(*planned_);
  planned_.reset();
  std::string error;
  if (disk_->restore(d, o.served, into, error)) return true;
  log_warn() << "a disk restore failed (" << error << "); the broken chain is deleted";
  return false;
}

void disk_tier_adapter::begin(const resume_offer& o, const state_adapter&, const tier_lookup& l, bool guest) {
  planned_.reset();
  guest_ = guest;
  if (guest) return;
  disk_request dr;
  dr.served = o.served;
  dr.at = o.at;
  dr.exact = o.exact;
  dr.session_key = l.info.session_key;
  dr.user_start = l.info.user_start;
  disk_->begin(dr);
}

void disk_tier_adapter::stats(cache_stats& into) const {
  into.disk = disk_->stats();
  into.disk_staged_bytes = disk_->staged_bytes();
  into.disk["enabled"] = true;
}

}  // namespace anchorage
