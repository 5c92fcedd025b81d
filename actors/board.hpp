#pragma once
#include <memory>
#include <optional>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "protocol/disk_interface.hpp"
#include "protocol/interfaces.hpp"
#include "runtime/tiers/board_runner.hpp"

namespace anchorage {

struct board_options {
  int decode_block = 4;  // tokens per decode message
  cache_options cache;   // the device tiers
  // --parallel N: N - 1 side slots, engines of the same model with their own buffers. A guest
  // runs on one and leaves slot 0 (the resident prompt) untouched.
  std::vector<std::shared_ptr<engine>> side_slots;
  // The disk tier (--cache-dir): its options (the staging pool, the checkpoint interval) and
  // the disk actor (actors/disk.hpp) that reads, plans and writes.
  std::optional<disk_tier_options> disk;
  disk_actor disk_handle;
};

// The board: the only owner of the engine and of the device tiers (the resident prefix is the
// engine's own rows). The work is its board_runner's (runtime/tiers/board_runner.hpp); the actor
// runs a request one prefill chunk or one decode block per message, sending itself the next
// step, so a message that arrives meanwhile (a cancel, at high priority; a clear) is handled
// between two steps. The disk actor's replies (a read, a plan, a write's release) come back the
// same way: the board never waits for the disk.
struct board_state {
  std::unique_ptr<board_runner> runner;
  disk_actor disk;
  done_receiver conductor;
  long steps = 0;  // steps run, for tests
  static inline const char* name = "board";
};

board_actor::behavior_type board(board_actor::stateful_pointer<board_state> self, std::shared_ptr<engine> eng,
                                 board_options opts, done_receiver conductor);

}  // namespace anchorage
