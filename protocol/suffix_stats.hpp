#pragma once
// The persistent suffix store's stats (docs/SUFFIX_STORE.md) as GET /v1/cache/stats shows them in
// tiers.suffix: the writer's counters (actors/suffix_writer) and the board's view's lookups.
#include <cstdint>
#include <optional>
#include <string>

#include "protocol/probe.hpp"

namespace anchorage {

struct suffix_tier_stats {
  bool enabled = false;                // the store is open (off, or refused at open: false)
  std::string path;                    // the log
  std::optional<std::string> refused;  // why it is off or was refused (none when open)
  std::uint64_t bytes = 0, ids = 0, segments = 0;
  std::uint64_t appended = 0, skipped = 0;  // ids, since the start
  std::uint64_t adds = 0, forgets = 0;
  std::uint64_t torn_bytes_cut = 0;  // at open
  std::uint64_t rebuilds = 0, indexed_ids = 0;
  std::uint64_t lookups = 0, hits = 0;  // the drafter's, counted by the board's view
  std::uint64_t write_failures = 0;

  // The wire's (tiers.suffix): one writer's, so the merge never adds two of them; its /metrics
  // lines are the suffix store's own (runtime/server/metrics.cpp), not a tier's series.
  static constexpr auto fields() {
    using s = suffix_tier_stats;
    return std::make_tuple(
        probe::keep("enabled", &s::enabled), probe::keep("path", &s::path),
        probe::if_set("refused", &s::refused), probe::keep("bytes", &s::bytes), probe::keep("ids", &s::ids),
        probe::keep("segments", &s::segments), probe::sum("appended", &s::appended),
        probe::sum("skipped", &s::skipped), probe::sum("adds", &s::adds), probe::sum("forgets", &s::forgets),
        probe::keep("torn_bytes_cut", &s::torn_bytes_cut), probe::sum("rebuilds", &s::rebuilds),
        probe::keep("indexed_ids", &s::indexed_ids), probe::sum("lookups", &s::lookups),
        probe::sum("hits", &s::hits), probe::sum("write_failures", &s::write_failures));
  }
};

}  // namespace anchorage
