#pragma once
#include <memory>

#include "actors/store_writer.hpp"
#include "protocol/interfaces.hpp"

namespace anchorage {

// The disk writer (docs/DISK_TIER.md, "Write-behind"): the store writer (actors/store_writer.hpp)
// of the disk tier's staged jobs; the disk actor spawns it linked and indexes what the results
// say reached the disk.
struct disk_write_kind {
  using actor = disk_writer_actor;
  using atom = disk_write_atom;
  using job_ptr = disk_job_ptr;
  static constexpr const char* name = "disk-writer";
  static void write(file_env& env, const state_layout& layout, disk_job& job);
};
using disk_writer_state = store_writer_state<disk_write_kind>;

disk_writer_actor::behavior_type disk_writer(store_writer_ptr<disk_write_kind> self, state_layout layout,
                                             std::shared_ptr<file_env> env);

}  // namespace anchorage
