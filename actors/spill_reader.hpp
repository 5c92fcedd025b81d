#pragma once
#include <memory>

#include <caf/stateful_actor.hpp>

#include "protocol/interfaces.hpp"
#include "runtime/io/file_env.hpp"

namespace anchorage {

// The spill reader (docs/SPILL.md): reads and verifies a planned read's files
// (execute_spill_read) through its own file_env (io_uring, O_DIRECT), one fetch per message, in
// the order they came, and hands each back with its outcome, so no NVMe read of the spill runs on
// the board's thread while other slots decode. It owns no index: the board's spill keeper
// finishes the read (a hit counted, or the failing file deleted). A failed read is an outcome,
// never an exception.
struct spill_reader_state {
  long reads = 0;
  static inline const char* name = "spill-reader";
};

spill_reader_actor::behavior_type spill_reader(spill_reader_actor::stateful_pointer<spill_reader_state> self,
                                               std::shared_ptr<file_env> env);

}  // namespace anchorage
