#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <memory>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "protocol/disk_interface.hpp"
#include "protocol/interfaces.hpp"
#include "runtime/disk/disk_service.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/io/file_env.hpp"
#include "runtime/remote/redis_env.hpp"
#include "runtime/remote/remote_disk.hpp"

namespace anchorage {

struct disk_actor_options {
  state_layout layout;
  disk_tier_options tier;
  // The env of its reads, removals and scan, and the disk writer's; uring_envs when not given.
  std::shared_ptr<file_env> env;
  std::shared_ptr<file_env> writer_env;
  // Last use and lifetimes; the system clock when not given. Tests pass a manual_clock.
  std::shared_ptr<const eviction_clock> clock;
  // The shared level below (--remote-cache): fetched from on a local miss, pushed to behind the
  // writes. remote_push_env: the pusher's env over the same folder (a new uring_env when not
  // given; it runs on the pusher's own thread).
  std::optional<remote_tier_options> remote;
  std::shared_ptr<file_env> remote_push_env;
  // The session spill's budget (0: no spill): with a remote level, an offer also fetches the
  // request's spilled conversation into the spill folder (<the store's folder>/spill), at most
  // this many bytes, for the board's spill store to adopt.
  std::uint64_t spill_budget = 0;
};

// The disk tier actor (docs/DISK_TIER.md): a thin shell over disk_service. It scans at its own start
// (in its behaviour factory, on its own thread), answers offers, plans and stats at once, and
// reads at once from its own env (senders send reads at high priority, so they pass queued
// submissions). A submission is planned and handed to the disk writer it spawned (linked); its
// reply waits for the writer's results to be committed. A writer that goes away releases its
// jobs' in-flight marks (committed with no results, answered as failed) and is spawned again.
// A drain is answered once no write and no push is out.
//
// With a remote level (--remote-cache, docs/SCALE_OUT.md): an offer whose prompt reaches a grid
// line deeper than both the floor and the local store's hit first asks Redis
// (remote_disk::fetch, bounded by its deadline, on this actor's thread: the server spawns it
// detached then), so a hit there is on the NVMe, indexed and offered like any local anchor, and
// read and verified the same way. Every committed anchor's files go to the remote pusher it
// spawned (linked, detached), which copies them to Redis on its own thread.
struct disk_state {
  struct write_out {
    std::shared_ptr<disk_job> job;
    caf::typed_response_promise<disk_write_reply> reply;
  };
  // Declared before the service, which uses them until it is destroyed.
  std::shared_ptr<file_env> env;
  std::shared_ptr<file_env> writer_env;
  std::shared_ptr<const eviction_clock> clock;
  std::unique_ptr<disk_service> service;
  disk_scan_report scan;
  bool started = false;  // the scan ran (in the factory)
  disk_writer_actor writer;
  std::uint64_t next_write = 0;
  std::map<std::uint64_t, write_out> out;  // by submission number
  std::vector<caf::typed_response_promise<disk_stats>> drains;
  disk_stats_receiver subscriber;  // told the stats after every change (the conductor)
  long writers_lost = 0;
  // The remote level, when configured: the fetch's own connection (declared before what uses
  // it), the pusher and its latest counters.
  std::optional<remote_tier_options> remote_options;
  std::shared_ptr<file_env> remote_push_env;
  std::unique_ptr<redis_env> remote_env;
  std::unique_ptr<remote_disk> remote;
  remote_pusher_actor pusher;
  remote_stats pushed;
  std::uint64_t spill_budget = 0;
  long pushes_out = 0;
  static inline const char* name = "disk";
};

disk_actor::behavior_type disk(disk_actor::stateful_pointer<disk_state> self, disk_actor_options opts);

}  // namespace anchorage
