#pragma once
#include <memory>

#include <caf/stateful_actor.hpp>

#include "protocol/interfaces.hpp"
#include "runtime/engine/state_layout.hpp"
#include "runtime/io/file_env.hpp"

namespace anchorage {

// The spill writer (docs/SPILL.md): encodes and writes a staged spill's files through its own
// file_env (io_uring, O_DIRECT) while the board serves, one job per message, in the order they
// came, and hands each back with its results and its time. It owns no index: the board's spill
// keeper commits what the results say reached the disk. A write that fails is a result, never
// an exception.
struct spill_writer_state {
  state_layout layout;
  long jobs = 0;
  static inline const char* name = "spill-writer";
};

spill_writer_actor::behavior_type spill_writer(spill_writer_actor::stateful_pointer<spill_writer_state> self,
                                               state_layout layout, std::shared_ptr<file_env> env);

}  // namespace anchorage
