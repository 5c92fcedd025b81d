#include "runtime/tiers/cache_tiers.hpp"

#include "runtime/core/token_prefix.hpp"

#include <iostream>

namespace anchorage {
namespace {

constexpr const char* resident_pool = "resident";
constexpr const char* store_pool = "store";

}  // namespace

cache_tiers::cache_tiers(cache_options opts, kernels::backend where)
    : opts_(opts),
      where_(where),
      resident_(budget_, resident_options{opts.end_anchor, opts.end_align, 4}, resident_pool),
      store_(budget_, store_pool, opts.store_entry_bytes) {
  budget_.set_limit(resident_pool, opts_.enabled ? opts_.resident_bytes : 0);
  budget_.set_limit(store_pool, opts_.enabled ? opts_.store_bytes : 0);
  budget_.set_limit("stash", opts_.enabled ? opts_.stash_bytes : 0);
  budget_.set_limit("pin", opts_.enabled ? opts_.pin_bytes : 0);
  budget_.set_limit("park", opts_.enabled ? opts_.park_bytes : 0);
}

bool cache_tiers::is_guest(std::size_t n) const {
  return opts_.guest_max > 0 && n <= opts_.guest_max && 4 * n < resident_.tokens().size();
}

void cache_tiers::expect(const request_info& info) {
  planned_copy_ = nullptr;
  disk_fallback_.reset();
  pending_session_ = info.session_key;
  pending_user_start_ = info.user_start;
  stash_need_ = 0;
}

resume_offer cache_tiers::plan(const std::vector<token_id>& prompt, const request_info& info) {
  resume_offer cold;
  cold.served = prompt;
  expect(info);
  if (!opts_.enabled || prompt.empty()) return cold;
  std::optional<resume_offer> best = resident_.offer(prompt);
  // A short request is a guest, unless it continues the resident conversation (a client that
  // dropped a long reasoning sends a prompt much shorter than the rows).
  const bool guest = is_guest(prompt.size()) && !(best && best->source == "end" && best->via.empty());
  if (guest) {
    // A guest reads the rows in place (a side slot none of them); bringing back a set-aside
    // prompt would change slot 0.
    if (info.side_slot_free || (best && !best->via.empty())) best.reset();
  }
  if (!best && !(guest && info.side_slot_free)) ++resident_counts_.misses;
  // The store is deeper: taken only when it starts later than the resident prefix. A stashed
  // guest does not take it (a snapshot writes rows from 0, below what the stash holds).
  const bool store_ok = !(guest && !info.side_slot_free);
#pragma GCC diagnostic push  // GCC 12: a false -Wmaybe-uninitialized on std::optional (GCC bug 80635)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
  const std::size_t floor = best ? best->at : 0;
#pragma GCC diagnostic pop
  if (auto hit = store_ok ? store_.lookup(prompt, prompt.size() - 1) : std::nullopt; hit && hit->length > floor) {
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
  } else if (store_ok && !hit) {
    ++store_counts_.misses;
  }
  // The disk is deeper still: taken when it starts later and its read beats the prefill it saves.
  // A stashed guest does not take it (its rows would replace the resident ones); a guest on a
  // side slot does, into the side slot's own buffers (seed §13.7), writing nothing.
  if (disk_ && (!guest || info.side_slot_free)) {
    if (auto d = disk_->offer(prompt, best ? best->at : 0)) {
      disk_fallback_ = best ? std::move(*best) : cold;
      best = std::move(*d);
    }
  }
  resume_offer o = best ? std::move(*best) : std::move(cold);
  if (guest) {
    o.via = info.side_slot_free ? "side" : "stash";
    // What the guest can write past its start: the rest of its prompt, its output, the rows the
    // server may add unseen, and two margins of 512.
    stash_need_ = (o.served.size() - std::min(o.at, o.served.size())) + info.max_tokens + info.hidden_reserve + 2 * 512;
  }
  return o;
}

void cache_tiers::restore(state_adapter& into, resume_offer& o) {
  if (o.source == "disk") {
    std::string error;
    if (disk_ && disk_->restore(o, into, error)) return;
    std::cerr << "anchorage: a disk restore failed (" << error << "); the broken chain is deleted\n";
    o = disk_fallback_ ? std::move(*disk_fallback_) : resume_offer{};
    disk_fallback_.reset();
    if (o.source == "cold") return;  // the caller resets the engine
  }
  if (o.source == "store") {
    // plan() found it and nothing was inserted since (an insert may evict).
    if (!planned_copy_) throw std::logic_error("cache_tiers: restore of a store offer plan() did not make");
    planned_copy_->restore(into, o.at);
    planned_copy_ = nullptr;
    store_.note_restored(o.at);
    return;
  }
  resident_.restore(into, where_, o);
}

void cache_tiers::begin(const resume_offer& o, const state_adapter& state) {
  planned_copy_ = nullptr;
  served_ = o.served;
  prefix_target_ = 0;
  via_ = o.via;
  guest_ = o.via == "stash" || o.via == "side";
  run_exact_ = o.exact;
  if (!opts_.enabled) return;
  // Counted here, where the offer is taken, not in plan(): a failed restore is the cold path.
  if (o.source != "cold" && o.source != "disk" && o.source != "checkpoint") {  // the disk counts its own
    tier_counters& c = o.source == "store" ? store_counts_ : o.source == "end" ? end_counts_ : resident_counts_;
    ++c.hits;
    c.tokens_saved += static_cast<long long>(o.at);
  }
  if (o.via == "pin") ++pin_hits_;
  if (o.via == "park") ++park_hits_;
  if (o.via == "side") ++guests_side_;
  if (o.via == "stash") {
    // The rows the guest can reach are copied aside first; refused, the guest cuts the resident
    // rows at its start like any request.
    const std::size_t a = o.at, b = std::min(resident_.tokens().size(), o.at + stash_need_);
    const std::size_t bytes = row_copy::bytes_for(state.layout(), a, b);
    if (b <= a || budget_.reserve("stash", bytes)) {
      try {
        stash_ = row_copy::take(state, where_, a, std::max(a, b));
        stash_bytes_ = b > a ? bytes : 0;
        ++guests_stashed_;
      } catch (...) {
        if (b > a) budget_.release("stash", bytes);
        throw;
      }
    } else {
      ++stash_refusals_;
      via_.clear();
      guest_ = false;
    }
  }
  // After the stash decision: a refused stash makes the guest an ordinary request, which writes.
  if (disk_ && !guest_) {
    disk_request dr;
    dr.session_key = pending_session_;
    dr.user_start = pending_user_start_;
    disk_->begin(o, dr);
  }
  if (!guest_) {
    // A request that rewrites rows the resident prompt does not share sets them aside first:
    // another session's parks the resident one, the same session's (a compaction) pins its head.
    const auto& rows = resident_.tokens();
    const std::size_t shared = common_prefix(rows, o.served);
    if (o.source != "store" && via_.empty() && shared < rows.size() && o.at < rows.size()) {
      const bool other = !resident_session_.empty() && pending_session_ != resident_session_;
      resident_.set_aside(state, where_, other ? "park" : "pin", o.at);
    }
    resident_.begin(o);
    // A restored prompt becomes the resident one with the disk anchor as its anchor.
    if (o.source == "disk") resident_.after_prefill_step(state, where_);
    resident_session_ = pending_session_;
  }
  // The prefix cache: a request the resident prefix could not answer leaves a snapshot at the
  // longest line of its prompt that fits one entry, so the next request with this head (another
  // session with the same system prompt) starts there.
  if (!opts_.prefix_cache || !o.exact || o.source == "resident" || o.source == "end") return;
  const state_layout& layout = state.layout();
  const std::size_t grid = static_cast<std::size_t>(layout.grid);
  std::size_t line = o.served.size() / grid * grid;
  while (line > o.at && state_copy::bytes_for(layout, line) > opts_.store_entry_bytes) line -= grid;
  if (line > o.at) prefix_target_ = line;
}

void cache_tiers::after_prefill_step(const state_adapter& state, kernels::backend where) {
  if (!opts_.enabled) return;
  if (!guest_) resident_.after_prefill_step(state, where);
  if (disk_ && !guest_) disk_->after_prefill_step(state);
  const bool exact = !guest_ ? resident_.taint() >= prefix_target_ : run_exact_;
  if (prefix_target_ != 0 && state.valid_length() == prefix_target_ && exact) {
    std::vector<token_id> head(served_.begin(), served_.begin() + static_cast<long>(prefix_target_));
    store_.insert(head, state, where, "prefix");
    prefix_target_ = 0;
  }
}

void cache_tiers::end_generation(const state_adapter& state, kernels::backend where, end_record record) {
  // A guest keeps no end anchor and no session snapshot of its own.
  if (!opts_.enabled || guest_) return;
  // The conversation's newest turn supersedes its earlier session snapshots.
  if (opts_.session_cache && !record.rows.empty() && store_.insert(record.rows, state, where, "session"))
    store_.drop_prefixes_of(record.rows, "session");
  resident_.end_generation(state, where, std::move(record));
}

void cache_tiers::finish(state_adapter& state) {
  if (disk_ && !guest_) disk_->finish(state);
  const bool stashed = guest_ && via_ == "stash";
  via_.clear();
  guest_ = false;
  if (!stashed) return;
  // Released first: a restore that throws must not keep the pool's bytes.
  row_copy stash = std::move(stash_);
  stash_ = row_copy{};
  budget_.release("stash", stash_bytes_);
  stash_bytes_ = 0;
  stash.restore(state);
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
  if (disk_ && (tier == "disk" || tier == "all")) {
    disk_->clear();
    done.push_back("disk");
  }
  return done;
}

std::vector<std::shared_ptr<disk_job>> cache_tiers::take_disk_jobs() {
  return disk_ ? disk_->take_jobs() : std::vector<std::shared_ptr<disk_job>>{};
}

void cache_tiers::disk_written(const disk_job& job) {
  if (disk_) disk_->written(job);
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
      {"guests_stashed", guests_stashed_},
      {"guests_side", guests_side_},
      {"stash_refusals", stash_refusals_},
      {"stash_limit_bytes", budget_.limit("stash")},
      {"pinned", resident_.saved("pin") ? nlohmann::json(resident_.saved("pin")->rows.last()) : nlohmann::json()},
      {"pin_bytes", budget_.used("pin")},
      {"pin_limit_bytes", budget_.limit("pin")},
      {"pin_hits", pin_hits_},
      {"parked", resident_.saved("park") ? nlohmann::json(resident_.saved("park")->rows.last()) : nlohmann::json()},
      {"park_bytes", budget_.used("park")},
      {"park_limit_bytes", budget_.limit("park")},
      {"park_hits", park_hits_},
      {"set_aside_refusals", resident_.set_aside_refusals},
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
  j["disk"] = disk_ ? disk_->stats() : nlohmann::json{{"enabled", false}};
  if (disk_) j["disk"]["enabled"] = true;
  j["enabled"] = opts_.enabled;
  return j;
}

}  // namespace anchorage
