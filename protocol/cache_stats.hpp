#pragma once
// The cache tiers' stats as the board reports them to the conductor after anything changed
// them (tiers_atom). JSON is made only at the wire (GET /v1/cache/stats's "tiers", /metrics):
// to_json below writes the fields the routes have always had, with the same values.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "protocol/disk_types.hpp"
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
};

inline void to_json(nlohmann::json& j, const response_stats& r) {
  j = {{"enabled", true},          {"entries", r.entries},
       {"bytes", r.bytes},         {"limit_bytes", r.limit_bytes},
       {"hits", r.hits},           {"misses", r.misses},
       {"evictions", r.evictions}, {"stores", r.stores},
       {"refusals", r.refusals}};
}

// One slot (--parallel N): what it does and what its rows hold.
struct slot_stats {
  std::size_t slot = 0;
  std::string state = "idle";  // idle | restoring | planning | running
  std::size_t resident_tokens = 0;
  std::string request;      // the id it serves, empty when idle
  std::string session_key;  // the session it served last
};

inline void to_json(nlohmann::json& j, const slot_stats& s) {
  j = {{"slot", s.slot},
       {"state", s.state},
       {"resident_tokens", s.resident_tokens},
       {"request", s.request.empty() ? nlohmann::json() : nlohmann::json(s.request)},
       {"session", s.session_key.empty() ? nlohmann::json() : nlohmann::json(s.session_key)}};
}

// Every tier. The board fills the device tiers' parts and its disk staging's; the conductor adds
// the disk actor's own (disk_stats) and makes the wire's "disk" object of both
// (runtime/disk/disk_stats_json), null when there is no disk tier.
struct cache_stats {
  bool enabled = true;
  resident_stats resident;
  store_stats store;
  std::optional<disk_staging_stats> disk_staging;  // with a disk tier
  nlohmann::json disk;
  // The session spill's (runtime/tiers/spill_keeper stats()); null without one.
  nlohmann::json spill;
  // The response cache's, one for every slot; none when it is off.
  std::optional<response_stats> response;
  // The persistent suffix store's (docs/SUFFIX_STORE.md); none when it is off.
  std::optional<suffix_tier_stats> suffix;
  // Compaction requests served as continuations and as sent (docs/COMPACTION.md).
  nlohmann::json compaction;
  // Speculative decoding's mode and counters (docs/SPECULATIVE.md).
  nlohmann::json speculative;
  // What the disk tier's staging holds and has not written yet (0 without a disk tier): a
  // drain waits for it to come down to 0, so a planned stop loses no staged write.
  std::uint64_t disk_staged_bytes = 0;
  // Each slot's (the tiers above are the slots' together: counters summed, limits global).
  std::vector<slot_stats> slots;
};

namespace detail {
inline nlohmann::json or_null(const std::optional<std::size_t>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}
}  // namespace detail

inline void to_json(nlohmann::json& j, const resident_stats& r) {
  j = {
      {"entries", r.entries},
      {"anchors", r.anchors},
      {"end_anchor", detail::or_null(r.end_anchor)},
      {"rows", r.rows},
      {"taint", r.taint},
      {"bytes", r.bytes},
      {"limit_bytes", r.limit_bytes},
      {"hits", r.hits},
      {"end_hits", r.end_hits},
      {"misses", r.misses},
      {"evictions", r.evictions},
      {"refusals", r.refusals},
      {"tokens_saved", r.tokens_saved},
      {"guests_stashed", r.guests_stashed},
      {"guests_side", r.guests_side},
      {"stash_refusals", r.stash_refusals},
      {"stash_limit_bytes", r.stash_limit_bytes},
      {"pinned", detail::or_null(r.pinned)},
      {"pin_bytes", r.pin_bytes},
      {"pin_limit_bytes", r.pin_limit_bytes},
      {"pin_hits", r.pin_hits},
      {"parked", detail::or_null(r.parked)},
      {"park_bytes", r.park_bytes},
      {"park_limit_bytes", r.park_limit_bytes},
      {"park_hits", r.park_hits},
      {"set_aside_refusals", r.set_aside_refusals},
  };
}

inline void to_json(nlohmann::json& j, const store_stats& s) {
  j = {
      {"entries", s.entries},
      {"bytes", s.bytes},
      {"limit_bytes", s.limit_bytes},
      {"entry_limit_bytes", s.entry_limit_bytes},
      {"hits", s.hits},
      {"misses", s.misses},
      {"evictions", s.evictions},
      {"refusals", s.refusals},
      {"collisions", s.collisions},
      {"superseded", s.superseded},
      {"tokens_saved", s.tokens_saved},
  };
}

// {"resident": {...}, "store": {...}, "disk", "spill", "response" and "suffix": {...} or
//  {"enabled": false},
//  "enabled": bool}
inline void to_json(nlohmann::json& j, const cache_stats& s) {
  j = {{"resident", s.resident}, {"store", s.store}, {"enabled", s.enabled}};
  j["disk"] = s.disk.is_object() ? s.disk : nlohmann::json{{"enabled", false}};
  j["spill"] = s.spill.is_object() ? s.spill : nlohmann::json{{"enabled", false}};
  j["response"] = s.response ? nlohmann::json(*s.response) : nlohmann::json{{"enabled", false}};
  j["suffix"] = s.suffix ? nlohmann::json(*s.suffix) : nlohmann::json{{"enabled", false}};
  if (s.compaction.is_object()) j["compaction"] = s.compaction;
  if (s.speculative.is_object()) j["speculative"] = s.speculative;
}

}  // namespace anchorage
