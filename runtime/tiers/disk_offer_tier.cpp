#include "runtime/tiers/disk_offer_tier.hpp"

#include <algorithm>

#include "runtime/disk/disk_service.hpp"

namespace anchorage {

void disk_offer_tier::expect(std::optional<disk_offer> offer, std::size_t foreign_line,
                             std::size_t declined_line) {
  forget();
  offer_ = std::move(offer);
  foreign_line_ = foreign_line;
  declined_line_ = declined_line;
}

void disk_offer_tier::forget() {
  offer_.reset();
  taken_.reset();
  read_.reset();
  read_damaged_ = false;
  foreign_line_ = 0;
  declined_line_ = 0;
}

std::optional<resume_offer> disk_offer_tier::offer(tier_lookup& l, std::size_t floor) {
  taken_.reset();
  l.foreign_at = std::max(l.foreign_at, foreign_line_);
  // The disk actor declined its anchor by the same rule when asked (no offer then).
  if (declined_line_ > floor) l.declined_at = std::max(l.declined_at, declined_line_);
  if (!offer_ || l.stashed() || offer_->line <= floor || l.prompt->size() < offer_->line) return std::nullopt;
  // The offer was made against no floor: it must still beat prefilling what the tiers above
  // leave at the slot's rate (an unmeasured rate reads).
  // Bytes already read (a plan again after a clear, take_fetched first) cost nothing more.
  const double tps = l.prefill_tokens_per_s;
  const double prefill_s = tps > 0 ? static_cast<double>(offer_->line - floor) / tps : 1e300;
  if (!read_ && offer_->read_s >= prefill_s) {
    ++declined_;
    l.declined_at = std::max(l.declined_at, offer_->line);
    return std::nullopt;
  }
  // A disk restore is a cold grid prefill's state, rows included.
  resume_offer o;
  o.source = cache_source::disk;
  o.at = offer_->line;
  o.served = *l.prompt;
  o.exact = true;
  o.exact_to = offer_->line;
  o.rows_replaced = true;
  taken_ = offer_;
  return o;
}

restore_result disk_offer_tier::restore(state_adapter& into, const resume_offer& o) {
  std::shared_ptr<const verified_read> r = std::move(read_);
  read_.reset();
  // Not read, or the read failed: the tiers above.
  if (!r || r->line != o.at) return read_damaged_ ? restore_result::failed_checks : restore_result::stale;
  disk_service::apply(*r, into);
  return restore_result::restored;
}

}  // namespace anchorage
