#pragma once
// The disk tier's stats at the wire (GET /v1/cache/stats's "tiers.disk", /metrics): the disk
// actor's typed disk_stats and the board's staging stats made into the JSON object the routes
// have always had, with the same fields (the synchronous disk tier wrote them before the disk tier
// became an actor). JSON is made here only, never between actors.
#include <cstddef>

#include <nlohmann/json.hpp>

#include "protocol/disk_messages.hpp"
#include "runtime/disk/disk_staging.hpp"

namespace anchorage {

// `min_tokens` (--disk-min-tokens) and `checkpoint_tokens` (--generation-checkpoint-tokens) are
// the server's options, reported as they were.
nlohmann::json disk_stats_json(const disk_stats& disk, const disk_staging_stats& staging,
                               std::size_t min_tokens, std::size_t checkpoint_tokens);

}  // namespace anchorage
