#include "runtime/tiers/device_tier.hpp"

#include <stdexcept>

#include "runtime/core/token_prefix.hpp"

namespace anchorage {

device_tier::device_tier(memory_budget& budget, const cache_options& opts, kernels::backend where)
    : opts_(opts),
      where_(where),
      budget_(budget),
      resident_(budget, resident_options{opts.end_anchor, opts.end_align, 4}, budget_pool::resident),
      store_(budget, budget_pool::store, opts.store_entry_bytes) {}

std::optional<resume_offer> device_tier::offer(tier_lookup& l, std::size_t floor) {
  run_.planned_copy = nullptr;
  const std::vector<token_id>& prompt = *l.prompt;
  std::optional<resume_offer> best = resident_.offer(prompt);
  // A short request is a guest, unless it continues the resident conversation (a client that
  // dropped a long reasoning sends a prompt much shorter than the rows).
  if (best && best->source == cache_source::end && best->via == cache_via::none && !l.info.force_guest)
    l.guest = false;
  if (l.guest) {
    // A guest reads the rows in place; bringing back a set-aside prompt would change them.
    if (best && best->via != cache_via::none) best.reset();
  }
  if (best && best->at <= floor) best.reset();
  if (!best) resident_counts_.miss();
  // The store is deeper: taken only when it starts later than the resident prefix. A stashed
  // guest does not take it (a snapshot writes rows from 0, below what the stash holds).
  if (l.stashed()) return best;
  const std::size_t above = std::max(floor, best ? best->at : 0);
  auto hit = store_.lookup(prompt, prompt.size() - 1);
  if (!hit) {
    store_counts_.miss();
    return best;
  }
  if (hit->length <= above) return best;
  resume_offer o;
  o.source = cache_source::store;
  o.at = hit->length;
  o.served = prompt;
  // A snapshot taken at a line by a grid prefill is a cold prefill's state; a session
  // snapshot (the rows of a finished turn) is a session resume.
  o.exact = hit->exact;
  o.exact_to = hit->exact ? hit->length : 0;  // a session snapshot's exact part is not recorded
  o.rows_replaced = true;
  run_.planned_copy = hit->copy;
  return o;
}

restore_result device_tier::restore(state_adapter& into, const resume_offer& o) {
  if (o.source == cache_source::store) {
    // offer() found it and nothing was inserted since (an insert may evict).
    if (!run_.planned_copy)
      throw std::logic_error("cache_tiers: restore of a store offer plan() did not make");
    run_.planned_copy->restore(into, o.at);
    run_.planned_copy = nullptr;
    store_.note_restored(o.at);
    return restore_result::restored;
  }
  resident_.restore(into, where_, o);
  return restore_result::restored;
}

void device_tier::begin(const resume_offer& o, const state_adapter& state, const tier_lookup& l, bool guest) {
  run_.planned_copy = nullptr;
  run_.served = o.served;
  run_.prefix_target = 0;
  run_.guest = guest;
  run_.exact = o.exact;
  run_.refusals_at_begin = refusals();
  if (!opts_.enabled) return;
  // Counted here, where the offer is taken, not in offer(): a failed restore is the cold path.
  if (o.source == cache_source::store) store_counts_.hit(o.at);
  if (o.source == cache_source::end) end_counts_.hit(o.at);
  if (o.source == cache_source::resident) resident_counts_.hit(o.at);
  if (o.via == cache_via::pin) ++pin_hits_;
  if (o.via == cache_via::park) ++park_hits_;
  if (!guest) {
    // A request that rewrites rows the resident prompt does not share sets them aside first:
    // another session's parks the resident one, the same session's (a compaction) pins its head.
    const auto& rows = resident_.tokens();
    const std::size_t shared = common_prefix(rows, o.served);
    if (o.source != cache_source::store && o.via == cache_via::none && shared < rows.size() &&
        o.at < rows.size()) {
      const bool other = !resident_session_.empty() && l.info.session_key != resident_session_;
      // A restore that wrote rows (the disk's) left the old rows below o.at only where both are
      // a cold prefill's of the same tokens.
      const bool intact = !o.rows_replaced || (shared >= o.at && o.at <= resident_.taint());
      if (other && intact) maybe_spill(state, o.at);
      const std::string was = resident_session_;
      if (resident_.set_aside(state, where_, other ? cache_via::park : cache_via::pin, o.at) && other)
        parked_session_ = was;
    }
    // A parked session came back by swapping: the one in place is parked now.
    if (o.via == cache_via::park) parked_session_ = resident_session_;
    resident_.begin(o);
    // A restored prompt becomes the resident one with the disk anchor as its anchor.
    if (o.source == cache_source::disk) resident_.after_prefill_step(state, where_);
    resident_session_ = l.info.session_key;
  }
  // The prefix cache: a request the resident prefix could not answer leaves a snapshot at the
  // longest line of its prompt that fits one entry, so the next request with this head (another
  // session with the same system prompt) starts there.
  if (!opts_.prefix_cache || !o.exact || o.source == cache_source::resident || o.source == cache_source::end)
    return;
  const state_layout& layout = state.layout();
  const std::size_t grid = static_cast<std::size_t>(layout.grid);
  std::size_t line = o.served.size() / grid * grid;
  while (line > o.at && state_copy::bytes_for(layout, line) > opts_.store_entry_bytes) line -= grid;
  if (line > o.at) run_.prefix_target = line;
}

void device_tier::maybe_spill(const state_adapter& state, std::size_t from) {
  const std::size_t rows = resident_.tokens().size();
  if (!evict_hook_ || rows < spill_min_tokens_ || from >= rows) return;
  // The park holds rows [from, rows) and up to 5 anchors (the newest 4 and the end): when it
  // can, nothing is lost and nothing is spilled.
  const state_layout& l = state.layout();
  const std::size_t need = row_copy::bytes_for(l, from, rows) + 5 * state_copy::bytes_for(l, 0);
  if (need <= budget_.limit(budget_pool::park)) return;
  evict_hook_(state, resident_, resident_session_);
}

void device_tier::make_way(const state_adapter& state, const std::vector<token_id>& incoming,
                           const std::string& session) {
  const auto& rows = resident_.tokens();
  const std::size_t from = std::min(common_prefix(rows, incoming), resident_.taint());
  if (opts_.enabled && from < rows.size()) {
    const bool other = !resident_session_.empty() && session != resident_session_;
    if (other) maybe_spill(state, from);
    const std::string was = resident_session_;
    if (resident_.set_aside(state, where_, other ? cache_via::park : cache_via::pin, from) && other)
      parked_session_ = was;
  }
  resident_session_ = session;
}

void device_tier::after_prefill_step(const state_adapter& state, kernels::backend where) {
  if (!opts_.enabled) return;
  if (!run_.guest) resident_.after_prefill_step(state, where);
  const bool exact = !run_.guest ? resident_.taint() >= run_.prefix_target : run_.exact;
  if (run_.prefix_target != 0 && state.valid_length() == run_.prefix_target && exact) {
    std::vector<token_id> head(run_.served.begin(),
                               run_.served.begin() + static_cast<long>(run_.prefix_target));
    store_.insert(head, state, where, state_store::kind::prefix);
    run_.prefix_target = 0;
  }
}

void device_tier::end_generation(const state_adapter& state, kernels::backend where, end_record record) {
  // A guest keeps no end anchor and no session snapshot of its own.
  if (!opts_.enabled || run_.guest) return;
  // The conversation's newest turn supersedes its earlier session snapshots.
  if (opts_.session_cache && !record.rows.empty() &&
      store_.insert(record.rows, state, where, state_store::kind::session))
    store_.drop_prefixes_of(record.rows, state_store::kind::session);
  resident_.end_generation(state, where, std::move(record));
}

void device_tier::clear(cache_tier name) {
  if (name == cache_tier::resident) resident_.clear();
  if (name == cache_tier::store) store_.clear();
}

void device_tier::stats(cache_stats& into) const {
  const auto& a = resident_.anchors();
  const auto* pin = resident_.saved(cache_via::pin);
  const auto* park = resident_.saved(cache_via::park);
  resident_stats& r = into.resident;
  r.entries = a.size() + (resident_.has_end_anchor() ? 1 : 0);
  r.anchors = a.size();
  if (resident_.has_end_anchor()) r.end_anchor = resident_.end_position();
  r.rows = resident_.tokens().size();
  r.taint = resident_.taint();
  r.bytes = resident_.bytes();
  r.limit_bytes = budget_.limit(budget_pool::resident);
  r.hits = resident_counts_.hits() + end_counts_.hits();
  r.end_hits = end_counts_.hits();
  r.misses = resident_counts_.misses();
  r.evictions = a.evictions();
  r.refusals = a.refusals() + resident_.end_refusals();
  r.tokens_saved = resident_counts_.tokens_saved() + end_counts_.tokens_saved();
  if (pin) r.pinned = pin->rows.last();
  r.pin_bytes = budget_.used(budget_pool::pin);
  r.pin_limit_bytes = budget_.limit(budget_pool::pin);
  r.pin_hits = pin_hits_;
  if (park) r.parked = park->rows.last();
  r.park_bytes = budget_.used(budget_pool::park);
  r.park_limit_bytes = budget_.limit(budget_pool::park);
  r.park_hits = park_hits_;
  r.set_aside_refusals = resident_.set_aside_refusals;
  store_stats& s = into.store;
  s.entries = store_.entries();
  s.bytes = store_.bytes();
  s.limit_bytes = budget_.limit(budget_pool::store);
  s.entry_limit_bytes = opts_.store_entry_bytes;
  s.hits = store_counts_.hits();
  s.misses = store_counts_.misses();
  s.evictions = store_.evictions();
  s.refusals = store_.refusals();
  s.collisions = store_.collisions();
  s.superseded = store_.superseded();
  s.tokens_saved = store_counts_.tokens_saved();
}

}  // namespace anchorage
