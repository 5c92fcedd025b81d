#pragma once
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "protocol/interfaces.hpp"
#include "runtime/tiers/cache_tiers.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/generation/generation_session.hpp"

namespace anchorage {

struct board_options {
  int decode_block = 4;   // tokens per decode message
  cache_options cache;    // the device tiers
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
// engine's own rows). It runs a request one prefill chunk or one decode block per message,
// sending itself the next step, so a message that arrives meanwhile (a cancel, at high
// priority; a clear) is handled between two steps. Before a request it asks the tiers where to
// resume (the lookup must see the rows it will resume from, so it runs here, when the board
// is free, not when the request was queued); after each chunk it lets them anchor; at the end
// of a generation it leaves the end anchor and the session snapshot.
struct board_state {
  std::shared_ptr<engine> eng;
  int decode_block = 4;
  // Declared before the tiers, which use them until they are destroyed.
  std::shared_ptr<file_env> disk_env;
  std::unique_ptr<eviction_clock> clock;
  disk_writer_actor writer;
  std::unique_ptr<cache_tiers> tiers;
  std::vector<std::shared_ptr<engine>> side_slots;
  engine* active = nullptr;  // the running request's engine: slot 0 or a side slot
  done_receiver conductor;
  board_job job;
  cache_source source = cache_source::cold;  // where the running request's state came from
  std::unique_ptr<generation_session> session;
  std::int64_t prefill_done_ns = 0;
  std::int64_t first_token_ns = 0;
  long steps = 0;  // steps run, for tests
  std::uint64_t job_key = 0;         // the running generation's checkpoint key (generation_key)
  bool served_as_asked = true;       // the served prompt is the client's (no end alignment)
  std::size_t next_checkpoint = 0;   // output ids at which the next checkpoint is staged
  // A cancel sent at high priority can pass the run it cancels in the mailbox: the ids of
  // cancels that found no such job running are kept (the last few) and end that job at once.
  std::deque<std::string> early_cancels;
  static inline const char* name = "board";
};

board_actor::behavior_type board(board_actor::stateful_pointer<board_state> self,
                                 std::shared_ptr<engine> eng, board_options opts, done_receiver conductor);

}  // namespace anchorage
