#include "runtime/disk/disk_stats_json.hpp"

namespace anchorage {

nlohmann::json disk_stats_json(const disk_stats& d, const disk_staging_stats& s, std::size_t min_tokens,
                               std::size_t checkpoint_tokens) {
  return {
      // The store's (disk_store::stats()).
      {"entries", d.entries},
      {"chunks", d.chunks},
      {"checkpoints", d.checkpoints},
      {"bytes", d.bytes},
      {"limit_bytes", d.limit_bytes},
      {"longest_prefix", d.longest_prefix},
      {"hits", d.hits},
      {"restore_failures", d.restore_failures},
      {"write_failures", d.write_failures},
      {"refusals", d.refusals},
      {"evictions", d.evictions},
      {"superseded", d.superseded},
      {"files_written", d.files_written},
      {"bytes_written", d.bytes_written},
      {"bytes_read", d.bytes_read},
      {"folder", d.folder},
      // The tier's (the disk actor's reads and plans, the board's staging).
      {"misses", d.misses},
      {"declined", d.declined},
      {"tokens_saved", d.tokens_saved},
      {"jobs", s.submissions},
      {"anchors_planned", d.anchors_planned},
      {"stage_refusals", s.stage_refusals},
      {"staged_bytes", s.staged_bytes},
      {"stage_limit_bytes", s.stage_limit_bytes},
      {"read_bytes_per_s", d.read_bytes_per_s},
      {"prefill_tokens_per_s", s.prefill_tokens_per_s},
      {"min_tokens", min_tokens},
      {"checkpoints_staged", s.checkpoints_staged},
      {"checkpoint_tokens", checkpoint_tokens},
  };
}

}  // namespace anchorage
