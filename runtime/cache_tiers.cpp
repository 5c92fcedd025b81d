#include "runtime/cache_tiers.hpp"

namespace anchorage {
namespace {

constexpr const char* resident_pool = "resident";
constexpr const char* store_pool = "store";

}  // namespace

cache_tiers::cache_tiers(cache_options opts)
    : opts_(opts),
      resident_(budget_, resident_options{opts.end_anchor, opts.end_align, 4}, resident_pool),
      store_(budget_, store_pool, opts.store_entry_bytes) {
  budget_.set_limit(resident_pool, opts_.enabled ? opts_.resident_bytes : 0);
  budget_.set_limit(store_pool, opts_.enabled ? opts_.store_bytes : 0);
}

resume_offer cache_tiers::plan(const std::vector<token_id>& prompt) {
  resume_offer cold;
  cold.served = prompt;
  planned_copy_ = nullptr;
  if (!opts_.enabled || prompt.empty()) return cold;
  std::optional<resume_offer> best = resident_.offer(prompt);
  if (!best) ++resident_counts_.misses;
  // The store is deeper: taken only when it starts later than the resident prefix.
  const std::size_t floor = best ? best->at : 0;
  if (auto hit = store_.lookup(prompt, prompt.size() - 1); hit && hit->length > floor) {
    resume_offer o;
    o.source = "store";
    o.at = hit->length;
    o.served = prompt;
    // A snapshot taken at a line by a grid prefill is a cold prefill's state; a session
    // snapshot (the rows of a finished turn) is a session resume.
    o.exact = hit->exact;
    o.exact_to = hit->exact ? hit->length : 0;  // a session snapshot's exact part is not recorded
    o.rows_replaced = true;
    planned_copy_ = hit->copy;
    best = std::move(o);
  } else if (!hit) {
    ++store_counts_.misses;
  }
  if (!best) return cold;
  return *best;
}

void cache_tiers::restore(state_adapter& into, const resume_offer& o) {
  if (o.source == "store") {
    // plan() found it and nothing was inserted since (an insert may evict).
    if (!planned_copy_) throw std::logic_error("cache_tiers: restore of a store offer plan() did not make");
    planned_copy_->restore(into, o.at);
    planned_copy_ = nullptr;
    store_.note_restored(o.at);
    return;
  }
  resident_.restore(into, o);
}

void cache_tiers::begin(const resume_offer& o, const state_layout& layout) {
  planned_copy_ = nullptr;
  served_ = o.served;
  prefix_target_ = 0;
  if (!opts_.enabled) return;
  // Counted here, where the offer is taken, not in plan(): a failed restore is the cold path.
  if (o.source != "cold") {
    tier_counters& c = o.source == "store" ? store_counts_ : o.source == "end" ? end_counts_ : resident_counts_;
    ++c.hits;
    c.tokens_saved += static_cast<long long>(o.at);
  }
  resident_.begin(o);
  // The prefix cache: a request the resident prefix could not answer leaves a snapshot at the
  // longest line of its prompt that fits one entry, so the next request with this head (another
  // session with the same system prompt) starts there.
  if (!opts_.prefix_cache || !o.exact || o.source == "resident" || o.source == "end") return;
  const std::size_t grid = static_cast<std::size_t>(layout.grid);
  std::size_t line = o.served.size() / grid * grid;
  while (line > o.at && state_copy::bytes_for(layout, line) > opts_.store_entry_bytes) line -= grid;
  if (line > o.at) prefix_target_ = line;
}

void cache_tiers::after_prefill_step(const state_adapter& state, kernels::backend where) {
  if (!opts_.enabled) return;
  resident_.after_prefill_step(state, where);
  if (prefix_target_ != 0 && state.valid_length() == prefix_target_ && resident_.taint() >= prefix_target_) {
    std::vector<token_id> head(served_.begin(), served_.begin() + static_cast<long>(prefix_target_));
    store_.insert(head, state, where, "prefix");
    prefix_target_ = 0;
  }
}

void cache_tiers::end_generation(const state_adapter& state, kernels::backend where, end_record record) {
  if (!opts_.enabled) return;
  // The conversation's newest turn supersedes its earlier session snapshots.
  if (opts_.session_cache && !record.rows.empty() && store_.insert(record.rows, state, where, "session"))
    store_.drop_prefixes_of(record.rows, "session");
  resident_.end_generation(state, where, std::move(record));
}

std::vector<std::string> cache_tiers::clear(const std::string& tier) {
  std::vector<std::string> done;
  if (tier == "resident" || tier == "all") {
    resident_.clear();
    done.push_back("resident");
  }
  if (tier == "store" || tier == "all") {
    store_.clear();
    done.push_back("store");
  }
  return done;
}

nlohmann::json cache_tiers::stats() const {
  nlohmann::json j;
  const auto& a = resident_.anchors();
  j["resident"] = {
      {"entries", a.size() + (resident_.has_end_anchor() ? 1 : 0)},
      {"anchors", a.size()},
      {"end_anchor", resident_.has_end_anchor() ? nlohmann::json(resident_.end_position()) : nlohmann::json()},
      {"rows", resident_.tokens().size()},
      {"taint", resident_.taint()},
      {"bytes", resident_.bytes()},
      {"limit_bytes", budget_.limit(resident_pool)},
      {"hits", resident_counts_.hits + end_counts_.hits},
      {"end_hits", end_counts_.hits},
      {"misses", resident_counts_.misses},
      {"evictions", a.evictions()},
      {"refusals", a.refusals() + resident_.end_refusals()},
      {"tokens_saved", resident_counts_.tokens_saved + end_counts_.tokens_saved},
  };
  j["store"] = {
      {"entries", store_.entries()},
      {"bytes", store_.bytes()},
      {"limit_bytes", budget_.limit(store_pool)},
      {"entry_limit_bytes", opts_.store_entry_bytes},
      {"hits", store_counts_.hits},
      {"misses", store_counts_.misses},
      {"evictions", store_.evictions()},
      {"refusals", store_.refusals()},
      {"collisions", store_.collisions()},
      {"superseded", store_.superseded()},
      {"tokens_saved", store_counts_.tokens_saved},
  };
  j["enabled"] = opts_.enabled;
  return j;
}

}  // namespace anchorage
