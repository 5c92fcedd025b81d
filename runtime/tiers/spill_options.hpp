#pragma once
// The session spill's options as the board's keeper takes them (runtime/tiers/spill_keeper.hpp),
// and as the server's config holds them (--session-spill-gb, --spill-min-tokens; the server sets
// the folder).
#include <cstddef>
#include <cstdint>
#include <string>

namespace anchorage {

struct spill_options {
  std::string dir;                           // the spill's folder (the server's: <--cache-dir>/disk)
  std::uint64_t budget_bytes = 40ULL << 30;  // --session-spill-gb 40 (GiB, as the flag counts)
  std::size_t min_tokens = 16384;            // --spill-min-tokens: an eviction spills at least this many
  std::uint64_t stage_bytes = 8ULL << 30;    // host bytes staged and not yet written, at most
  double read_bytes_per_s = 1e9;             // the read rate assumed until one is measured
};

}  // namespace anchorage
