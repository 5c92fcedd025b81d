#pragma once
#include <memory>
#include <optional>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "protocol/interfaces.hpp"
#include "runtime/tiers/board_runner.hpp"

namespace anchorage {

struct board_options {
  int decode_block = 4;  // tokens per decode message
  cache_options cache;   // the device tiers
  // --parallel N: N - 1 side slots, engines of the same model with their own buffers. A guest
  // runs on one and leaves slot 0 (the resident prompt) untouched.
  std::vector<std::shared_ptr<engine>> side_slots;
  // The disk tier (--cache-dir): its options, and optionally the envs for its reads (the board's)
  // and its writes (the disk writer's); uring_envs when not given. Tests pass fault_envs.
  std::optional<disk_tier_options> disk;
  std::shared_ptr<file_env> disk_env;
  std::shared_ptr<file_env> writer_env;
};

// The board: the only owner of the engine and of the device tiers (the resident prefix is the
// engine's own rows). The work is its board_runner's (runtime/tiers/board_runner.hpp); the actor
// runs a request one prefill chunk or one decode block per message, sending itself the next
// step, so a message that arrives meanwhile (a cancel, at high priority; a clear) is handled
// between two steps, and it hands the runner's staged disk writes to the disk writer.
struct board_state {
  std::unique_ptr<board_runner> runner;
  disk_writer_actor writer;
  done_receiver conductor;
  long steps = 0;  // steps run, for tests
  static inline const char* name = "board";
};

board_actor::behavior_type board(board_actor::stateful_pointer<board_state> self, std::shared_ptr<engine> eng,
                                 board_options opts, done_receiver conductor);

}  // namespace anchorage
