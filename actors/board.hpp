#pragma once
#include <deque>
#include <memory>
#include <string>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>

#include "protocol/interfaces.hpp"
#include "runtime/engine.hpp"
#include "runtime/generation_session.hpp"

namespace anchorage {

// The board: the only owner of the engine. It runs a request one prefill chunk or one decode
// block per message, sending itself the next step, so a message that arrives meanwhile (a
// cancel, at high priority) is handled between two steps.
struct board_state {
  std::shared_ptr<engine> eng;
  int decode_block = 4;
  done_receiver conductor;
  board_job job;
  std::unique_ptr<generation_session> session;
  std::int64_t prefill_done_ns = 0;
  std::int64_t first_token_ns = 0;
  long steps = 0;  // steps run, for tests
  // A cancel sent at high priority can pass the run it cancels in the mailbox: the ids of
  // cancels that found no such job running are kept (the last few) and end that job at once.
  std::deque<std::string> early_cancels;
  static inline const char* name = "board";
};

board_actor::behavior_type board(board_actor::stateful_pointer<board_state> self,
                                 std::shared_ptr<engine> eng, int decode_block, done_receiver conductor);

}  // namespace anchorage
