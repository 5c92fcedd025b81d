#pragma once
#include <cstdint>
#include <memory>

#include <caf/stateful_actor.hpp>

#include "protocol/disk_interface.hpp"
#include "runtime/io/file_env.hpp"
#include "runtime/remote/redis_env.hpp"
#include "runtime/remote/remote_disk.hpp"

namespace anchorage {

// The disk tier's remote pusher (docs/SCALE_OUT.md, "The server"): the disk actor hands it the
// files of every anchor it committed (remote_push_job); it copies them to Redis
// (remote_disk::push, chunks before the anchor, files Redis holds skipped) on its own thread
// (spawned detached: a Redis that stops answering blocks it, never the disk's reads) with its own
// connection and its own env over the store's folder, and answers with its counters. A file
// evicted locally meanwhile is counted and left out, with the anchor that stands on it.
struct remote_pusher_state {
  std::shared_ptr<file_env> local;
  std::unique_ptr<redis_env> redis;
  std::unique_ptr<remote_disk> disk;
  static inline const char* name = "remote-pusher";
};

remote_pusher_actor::behavior_type remote_pusher(
    remote_pusher_actor::stateful_pointer<remote_pusher_state> self, remote_tier_options options,
    std::uint64_t fingerprint, std::shared_ptr<file_env> local);

}  // namespace anchorage
