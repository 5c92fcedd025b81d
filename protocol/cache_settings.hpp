#pragma once
// An operator's live settings (POST /v1/cache/settings, the dashboard's Settings panel): the
// limits the actors that own them change while the server runs, each one given or left as it
// is. The admin actor checks and keeps them (runtime/server/live_settings.hpp); the conductor
// hands the disk's to the disk actor and the rest to the board.
#include <cstdint>
#include <optional>

namespace anchorage {

struct cache_settings {
  std::optional<std::uint64_t> disk_budget_bytes;   // --disk-cache-gb
  std::optional<std::int64_t> disk_lifetime_s;      // --disk-lifetime-days
  std::optional<std::uint64_t> disk_free_bytes;     // --disk-free-gb: free space left to the file system
  std::optional<std::uint64_t> spill_budget_bytes;  // --session-spill-gb
  std::optional<std::uint64_t> resident_bytes;      // --resident-gb
  std::optional<std::uint64_t> store_bytes;         // --cache-budget-gb
  std::optional<std::uint64_t> image_cache_bytes;   // --image-cache-mb: the vision encoder's output

  bool any_disk() const { return disk_budget_bytes || disk_lifetime_s || disk_free_bytes; }
  bool any_board() const { return spill_budget_bytes || resident_bytes || store_bytes || image_cache_bytes; }
};

}  // namespace anchorage
