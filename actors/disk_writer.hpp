#pragma once
#include <memory>

#include <caf/stateful_actor.hpp>

#include "protocol/interfaces.hpp"
#include "runtime/io/file_env.hpp"
#include "runtime/engine/state_layout.hpp"

namespace anchorage {

// The disk writer (docs/DISK_TIER.md, "Write-behind"): encodes and writes the disk tier's staged
// jobs through its own file_env while the board serves, one job per message, in the order they
// came, and hands each back with its results. It owns no index: the board indexes what the
// results say reached the disk. A write that fails is a result, never an exception.
struct disk_writer_state {
  state_layout layout;
  long jobs = 0;
  static inline const char* name = "disk-writer";
};

disk_writer_actor::behavior_type disk_writer(disk_writer_actor::stateful_pointer<disk_writer_state> self,
                                             state_layout layout, std::shared_ptr<file_env> env);

}  // namespace anchorage
