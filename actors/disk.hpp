#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "protocol/disk_interface.hpp"
#include "protocol/interfaces.hpp"
#include "runtime/disk/disk_service.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/io/file_env.hpp"

namespace anchorage {

struct disk_actor_options {
  state_layout layout;
  disk_tier_options tier;
  // The env of its reads, removals and scan, and the disk writer's; uring_envs when not given.
  std::shared_ptr<file_env> env;
  std::shared_ptr<file_env> writer_env;
  // Last use and lifetimes; the system clock when not given. Tests pass a manual_clock.
  std::shared_ptr<const eviction_clock> clock;
};

// The disk tier actor (docs/DISK_TIER.md): a thin shell over disk_service. It scans at its own start
// (in its behaviour factory, on its own thread), answers offers, plans and stats at once, and
// reads at once from its own env (senders send reads at high priority, so they pass queued
// submissions). A submission is planned and handed to the disk writer it spawned (linked); its
// reply waits for the writer's results to be committed. A writer that goes away releases its
// jobs' in-flight marks (committed with no results, answered as failed) and is spawned again.
// A drain is answered once no write is out.
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
  static inline const char* name = "disk";
};

disk_actor::behavior_type disk(disk_actor::stateful_pointer<disk_state> self, disk_actor_options opts);

}  // namespace anchorage
