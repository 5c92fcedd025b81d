#pragma once
// The persistent suffix store's stats (docs/SUFFIX_STORE.md) as GET /v1/cache/stats shows them in
// tiers.suffix: the writer's counters (actors/suffix_writer) and the board's view's lookups.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace anchorage {

struct suffix_tier_stats {
  bool enabled = false;  // the store is open (off, or refused at open: false)
  std::string path;      // the log
  std::string refused;   // why it is off or was refused ("" when open)
  std::uint64_t bytes = 0, ids = 0, segments = 0;
  std::uint64_t appended = 0, skipped = 0;  // ids, since the start
  std::uint64_t adds = 0, forgets = 0;
  std::uint64_t torn_bytes_cut = 0;  // at open
  std::uint64_t rebuilds = 0, indexed_ids = 0;
  std::uint64_t lookups = 0, hits = 0;  // the drafter's, counted by the board's view
  std::uint64_t write_failures = 0;
};

inline void to_json(nlohmann::json& j, const suffix_tier_stats& s) {
  j = {{"enabled", s.enabled},
       {"path", s.path},
       {"bytes", s.bytes},
       {"ids", s.ids},
       {"segments", s.segments},
       {"appended", s.appended},
       {"skipped", s.skipped},
       {"adds", s.adds},
       {"forgets", s.forgets},
       {"torn_bytes_cut", s.torn_bytes_cut},
       {"rebuilds", s.rebuilds},
       {"indexed_ids", s.indexed_ids},
       {"lookups", s.lookups},
       {"hits", s.hits},
       {"write_failures", s.write_failures}};
  if (!s.refused.empty()) j["refused"] = s.refused;
}

}  // namespace anchorage
