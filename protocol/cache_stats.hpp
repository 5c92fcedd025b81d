#pragma once
// The cache tiers' stats as the board reports them to the conductor after anything changed
// them (tiers_atom). JSON is made only at the wire (GET /v1/cache/stats's "tiers"), from each
// component's field list (protocol/probe.hpp), which also gives the slots' merge and the
// /metrics tier series.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/disk_types.hpp"
#include "protocol/miss_stats.hpp"
#include "protocol/probe.hpp"
#include "protocol/spill_stats.hpp"
#include "protocol/suffix_stats.hpp"

namespace anchorage {

// The resident prefix (its anchors, end anchor, pinned head and parked session) and the guests.
struct resident_stats {
  std::size_t entries = 0;  // anchors, and the end anchor
  std::size_t anchors = 0;
  std::optional<std::size_t> end_anchor;  // its position
  std::size_t rows = 0;
  std::size_t taint = 0;
  std::size_t bytes = 0;
  std::size_t limit_bytes = 0;
  long hits = 0;  // grid anchors and end anchor
  long end_hits = 0;
  long misses = 0;
  long evictions = 0;
  long refusals = 0;
  long long tokens_saved = 0;
  long guests_stashed = 0;
  long guests_side = 0;  // always 0: slots replaced side slots (the field stays on the wire)
  long stash_refusals = 0;
  std::size_t stash_limit_bytes = 0;
  std::optional<std::size_t> pinned;  // where the pinned head's copy ends
  std::size_t pin_bytes = 0;
  std::size_t pin_limit_bytes = 0;
  long pin_hits = 0;
  std::optional<std::size_t> parked;  // where the parked session's copy ends
  std::size_t park_bytes = 0;
  std::size_t park_limit_bytes = 0;
  long park_hits = 0;
  long set_aside_refusals = 0;

  static constexpr auto fields() {
    using s = resident_stats;
    using t = tier_series;
    return std::make_tuple(
        probe::sum("entries", &s::entries, t::entries), probe::sum("anchors", &s::anchors),
        probe::keep("end_anchor", &s::end_anchor), probe::sum("rows", &s::rows),
        probe::keep("taint", &s::taint), probe::sum("bytes", &s::bytes, t::bytes),
        probe::keep("limit_bytes", &s::limit_bytes, t::limit_bytes), probe::sum("hits", &s::hits, t::hits),
        probe::sum("end_hits", &s::end_hits), probe::sum("misses", &s::misses, t::misses),
        probe::sum("evictions", &s::evictions, t::evictions), probe::sum("refusals", &s::refusals),
        probe::sum("tokens_saved", &s::tokens_saved, t::tokens_saved),
        probe::sum("guests_stashed", &s::guests_stashed), probe::sum("guests_side", &s::guests_side),
        probe::sum("stash_refusals", &s::stash_refusals),
        probe::keep("stash_limit_bytes", &s::stash_limit_bytes), probe::keep("pinned", &s::pinned),
        probe::sum("pin_bytes", &s::pin_bytes), probe::keep("pin_limit_bytes", &s::pin_limit_bytes),
        probe::sum("pin_hits", &s::pin_hits), probe::keep("parked", &s::parked),
        probe::sum("park_bytes", &s::park_bytes), probe::keep("park_limit_bytes", &s::park_limit_bytes),
        probe::sum("park_hits", &s::park_hits), probe::sum("set_aside_refusals", &s::set_aside_refusals));
  }
};

// The state store.
struct store_stats {
  std::size_t entries = 0;
  std::size_t bytes = 0;
  std::size_t limit_bytes = 0;
  std::size_t entry_limit_bytes = 0;
  long hits = 0;
  long misses = 0;
  long evictions = 0;
  long refusals = 0;
  long collisions = 0;
  long superseded = 0;
  long long tokens_saved = 0;

  static constexpr auto fields() {
    using s = store_stats;
    using t = tier_series;
    return std::make_tuple(
        probe::sum("entries", &s::entries, t::entries), probe::sum("bytes", &s::bytes, t::bytes),
        probe::keep("limit_bytes", &s::limit_bytes, t::limit_bytes),
        probe::keep("entry_limit_bytes", &s::entry_limit_bytes), probe::sum("hits", &s::hits, t::hits),
        probe::sum("misses", &s::misses, t::misses), probe::sum("evictions", &s::evictions, t::evictions),
        probe::sum("refusals", &s::refusals), probe::sum("collisions", &s::collisions),
        probe::sum("superseded", &s::superseded),
        probe::sum("tokens_saved", &s::tokens_saved, t::tokens_saved));
  }
};

// The response cache (--response-cache-mb; runtime/cache/response_cache.hpp).
struct response_stats {
  std::size_t entries = 0;
  std::size_t bytes = 0;
  std::size_t limit_bytes = 0;
  long hits = 0;
  long misses = 0;     // greedy requests it had no answer for
  long evictions = 0;  // least recently used entries dropped for room
  long stores = 0;     // answers kept
  long refusals = 0;   // answers larger than the whole budget, not kept

  static constexpr auto fields() {
    using s = response_stats;
    using t = tier_series;
    return std::make_tuple(
        probe::sum("entries", &s::entries, t::entries), probe::sum("bytes", &s::bytes, t::bytes),
        probe::keep("limit_bytes", &s::limit_bytes, t::limit_bytes), probe::sum("hits", &s::hits, t::hits),
        probe::sum("misses", &s::misses, t::misses), probe::sum("evictions", &s::evictions, t::evictions),
        probe::sum("stores", &s::stores, t::stores), probe::sum("refusals", &s::refusals));
  }
};

// The vision cache (--image-cache-mb; runtime/vision/vision_tower.hpp): the encoder's output by
// image digest, one for every slot.
struct vision_stats {
  std::uint64_t entries = 0;
  std::uint64_t bytes = 0;
  std::uint64_t limit_bytes = 0;
  std::uint64_t hits = 0;     // images answered from the cache
  std::uint64_t encodes = 0;  // images run through the encoder
  double encode_ms = 0;       // the encoder's time, every image together

  static constexpr auto fields() {
    using s = vision_stats;
    using t = tier_series;
    return std::make_tuple(
        probe::keep("entries", &s::entries, t::entries), probe::keep("bytes", &s::bytes, t::bytes),
        probe::keep("limit_bytes", &s::limit_bytes, t::limit_bytes), probe::keep("hits", &s::hits, t::hits),
        probe::keep("encodes", &s::encodes), probe::keep("encode_ms", &s::encode_ms));
  }
};

// The compaction worker's idle runs (docs/COMPACTION.md).
struct compaction_worker_stats {
  long started = 0, preempted = 0, finished = 0;

  static constexpr auto fields() {
    using s = compaction_worker_stats;
    return std::make_tuple(probe::sum("started", &s::started), probe::sum("preempted", &s::preempted),
                           probe::sum("finished", &s::finished));
  }
};

// Compaction requests served as continuations, from a prewritten summary and as sent.
struct compaction_stats {
  long continuations = 0, as_sent = 0, prewritten = 0;
  std::size_t prewrites_kept = 0;  // the board's, not a slot's
  compaction_worker_stats worker;

  static constexpr auto fields() {
    using s = compaction_stats;
    return std::make_tuple(probe::sum("continuations", &s::continuations), probe::sum("as_sent", &s::as_sent),
                           probe::sum("prewritten", &s::prewritten),
                           probe::keep("prewrites_kept", &s::prewrites_kept),
                           probe::sum("worker", &s::worker));
  }
};

// One drafter's verify rounds, drafts and accepted drafts (docs/SPECULATIVE.md).
struct drafter_stats {
  std::uint64_t rounds = 0, drafted = 0, accepted = 0;
  double mean_accepted = 0;  // accepted per round

  static constexpr auto fields() {
    using s = drafter_stats;
    return std::make_tuple(probe::sum("rounds", &s::rounds), probe::sum("drafted", &s::drafted),
                           probe::sum("accepted", &s::accepted),
                           probe::keep("mean_accepted", &s::mean_accepted));
  }
};

struct drafters_stats {
  drafter_stats forced, lookup, store, mtp;

  static constexpr auto fields() {
    using s = drafters_stats;
    return std::make_tuple(probe::sum("forced", &s::forced), probe::sum("lookup", &s::lookup),
                           probe::sum("store", &s::store), probe::sum("mtp", &s::mtp));
  }
};

// Speculative decoding's mode and counters.
struct speculative_stats {
  std::string mode;
  long draft_max = 0;
  std::uint64_t rounds = 0, plain_steps = 0, pauses = 0;
  drafters_stats drafters;

  static constexpr auto fields() {
    using s = speculative_stats;
    return std::make_tuple(probe::keep("mode", &s::mode), probe::keep("draft_max", &s::draft_max),
                           probe::sum("rounds", &s::rounds), probe::sum("plain_steps", &s::plain_steps),
                           probe::sum("pauses", &s::pauses), probe::sum("drafters", &s::drafters));
  }
};

// One slot (--parallel N): what it does and what its rows hold.
struct slot_stats {
  std::size_t slot = 0;
  std::string state = "idle";  // idle | restoring | planning | running
  std::size_t resident_tokens = 0;
  std::string request;      // the id it serves, empty when idle
  std::string session_key;  // the session it served last
  // The resident prefix's grid anchors (positions, ascending) and its end anchor (0: none).
  std::vector<std::size_t> anchors;
  std::size_t end_anchor = 0;
  // The running prefill: its prompt's tokens, those in the state so far and those restored
  // (total 0: not prefilling).
  long prefill_total = 0, prefill_done = 0, prefill_cached = 0;
};

inline void to_json(nlohmann::json& j, const slot_stats& s) {
  j = {{"slot", s.slot},
       {"state", s.state},
       {"resident_tokens", s.resident_tokens},
       {"request", s.request.empty() ? nlohmann::json() : nlohmann::json(s.request)},
       {"session", s.session_key.empty() ? nlohmann::json() : nlohmann::json(s.session_key)},
       {"anchors", s.anchors},
       {"end_anchor", s.end_anchor == 0 ? nlohmann::json() : nlohmann::json(s.end_anchor)},
       {"prefill", s.prefill_total == 0 ? nlohmann::json()
                                        : nlohmann::json{{"total", s.prefill_total},
                                                         {"done", s.prefill_done},
                                                         {"cached", s.prefill_cached}}}};
}

// Every tier. The board fills the device tiers' parts and its disk staging's; the conductor adds
// the disk tier's wire object (disk_tier_stats: the disk actor's stats and the staging's), none
// when there is no disk tier.
struct cache_stats {
  bool enabled = true;
  resident_stats resident;
  store_stats store;
  std::optional<disk_staging_stats> disk_staging;  // with a disk tier
  std::optional<disk_tier_stats> disk;             // the conductor's: none without a disk tier
  // The session spill's (runtime/tiers/spill_keeper stats()); none without one.
  std::optional<spill_tier_stats> spill;
  // The response cache's, one for every slot; none when it is off.
  std::optional<response_stats> response;
  // The vision cache's (docs/IMAGES.md); none without a vision tower.
  std::optional<vision_stats> vision;
  // The persistent suffix store's (docs/SUFFIX_STORE.md); none when it is off.
  std::optional<suffix_tier_stats> suffix;
  // Compaction requests served as continuations and as sent (the board's).
  std::optional<compaction_stats> compaction;
  // Speculative decoding's mode and counters (the board's).
  std::optional<speculative_stats> speculative;
  // Why requests resumed less deep than they shared with what was held (the slots' summed).
  miss_stats miss_reasons;
  // What the disk tier's staging holds and has not written yet (0 without a disk tier): a
  // drain waits for it to come down to 0, so a planned stop loses no staged write.
  std::uint64_t disk_staged_bytes = 0;
  // Each slot's (the tiers above are the slots' together: counters summed, limits global).
  std::vector<slot_stats> slots;
};

// {"resident": {...}, "store": {...}, "disk", "spill", "response" and "suffix": {...} or
//  {"enabled": false},
//  "enabled": bool, "miss_reasons": {reason: {"requests", "tokens"}}}
inline void to_json(nlohmann::json& j, const cache_stats& s) {
  auto optional_tier = [](const auto& tier) {
    if (!tier) return nlohmann::json{{"enabled", false}};
    nlohmann::json t = *tier;
    t["enabled"] = true;
    return t;
  };
  j = {{"resident", s.resident}, {"store", s.store}, {"enabled", s.enabled}};
  j["disk"] = optional_tier(s.disk);
  j["spill"] = optional_tier(s.spill);
  j["response"] = optional_tier(s.response);
  j["suffix"] = s.suffix ? nlohmann::json(*s.suffix) : nlohmann::json{{"enabled", false}};
  j["vision"] = optional_tier(s.vision);
  if (s.compaction) j["compaction"] = *s.compaction;
  if (s.speculative) j["speculative"] = *s.speculative;
  j["miss_reasons"] = s.miss_reasons;
}

}  // namespace anchorage
