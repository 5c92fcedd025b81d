#pragma once
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include <caf/stateful_actor.hpp>

#include "protocol/interfaces.hpp"

namespace anchorage {

struct compaction_worker_options {
  std::chrono::milliseconds idle{30000};  // --compaction-idle-s
  std::size_t min_tokens = 32768;         // --compaction-min-tokens
};

// The compaction worker (docs/COMPACTION.md, "The compaction worker"): a timer and a question.
// Each request the conductor receives resets its timer; once `idle` passes with none, it asks
// the conductor for idle work with the continuation it was given last (the conductor hands it to
// the board only when nothing runs or waits). A finished run is followed by another question at
// once (another slot may hold a conversation to prewrite for; the board answers `none` when
// nothing is left); a preempted one waits for the next quiet spell, and starts over then.
struct compaction_worker_state {
  compaction_worker_options opts;
  conductor_actor conductor;
  std::optional<board_job> tmpl;                // what to prewrite from
  std::uint64_t activity = 0;                   // requests seen: a tick of an older count is stale
  bool asking = false;                          // a question (and the run it started) is out
  long asked = 0, finished = 0, preempted = 0;  // for tests and the log
  static inline const char* name = "compaction-worker";
};

compaction_worker_actor::behavior_type compaction_worker(
    compaction_worker_actor::stateful_pointer<compaction_worker_state> self, compaction_worker_options opts,
    conductor_actor conductor);

}  // namespace anchorage
