#pragma once
// The disk tier's options (--cache-dir and the --disk-* flags) and a planned write on its way
// through the disk writer.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/disk/disk_admission.hpp"
#include "runtime/disk/disk_store.hpp"

namespace anchorage {

struct disk_tier_options {
  disk_store_options store;                // folder, budget, lifetime, floor, entry cap
  disk_admission_options admission;        // --disk-min-tokens, counting capacity
  std::uint64_t stage_bytes = 1ULL << 30;  // host bytes staged and not yet written, at most
  double assumed_read_bytes_per_s = 1e9;   // the read bandwidth until one is measured
  std::size_t checkpoint_tokens = 0;       // --generation-checkpoint-tokens: 0 off
};

// One staged write, planned by the store (room made, files decided), on its way to the disk
// writer (execute_disk_write on its own env) and back to be committed.
struct disk_job {
  staged_write write;
  disk_write_plan plan;
  std::vector<disk_file_result> results;  // filled by the writer
  std::uint64_t staged_bytes = 0;         // what the staging charged for it
};

}  // namespace anchorage
