#pragma once
// The disk tier's plain values that travel beyond the disk actor's own messages: its offer (in a
// queued board_job), its stats and the board's staging stats (in cache_stats). No CAF here, so
// board_job.hpp and cache_stats.hpp can include it; disk_messages.hpp registers the types.
#include <cstddef>
#include <cstdint>
#include <string>

namespace anchorage {

// What the disk can restore for a prompt: tokens [0, line) from its anchor at `line`.
struct disk_offer {
  std::string ns;                // the anchor's namespace ("" for the tier's own)
  std::size_t line = 0;          // the length it restores (a multiple of the grid)
  std::uint64_t key = 0;         // the prompt's prefix hash at `line` (the anchor's name)
  std::uint64_t read_bytes = 0;  // what the read reads: its chunks and the anchor
  std::uint64_t generation = 0;  // the tier's clear count when offered
  double read_s = 0;             // the expected read time at the measured bandwidth
};

// The tier's counters and sizes (JSON only at the wire).
struct disk_stats {
  std::size_t entries = 0, chunks = 0, checkpoints = 0;
  std::uint64_t bytes = 0, limit_bytes = 0;
  std::size_t longest_prefix = 0;
  long hits = 0, misses = 0, declined = 0, restore_failures = 0, write_failures = 0, refusals = 0,
       evictions = 0, superseded = 0, files_written = 0;
  std::uint64_t bytes_written = 0, bytes_read = 0;
  long jobs = 0;               // jobs submitted
  std::size_t writes_out = 0;  // jobs at the writer now
  long anchors_planned = 0;
  long long tokens_saved = 0;
  double read_bytes_per_s = 0;
  std::uint64_t generation = 0;  // clears so far
  std::string folder;
};

// What the board's staging (runtime/disk/disk_staging) holds and has done.
struct disk_staging_stats {
  std::uint64_t staged_bytes = 0;  // held now, not yet released
  std::uint64_t stage_limit_bytes = 0;
  long stage_refusals = 0;  // anchors or rows the pool could not take
  long submissions = 0;     // prefix writes handed out
  long checkpoints_staged = 0;
  double prefill_tokens_per_s = 0;  // measured from the prefill chunks (0 until measured)
};

}  // namespace anchorage
