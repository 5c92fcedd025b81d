#pragma once
#include <memory>

#include "actors/store_writer.hpp"
#include "protocol/interfaces.hpp"

namespace anchorage {

// The spill writer (docs/SPILL.md): the store writer (actors/store_writer.hpp) of a staged
// spill's files (io_uring, O_DIRECT), each job handed back with its results and its time; the
// board's spill keeper commits what the results say reached the disk.
struct spill_write_kind {
  using actor = spill_writer_actor;
  using atom = spill_write_atom;
  using job_ptr = spill_job_ptr;
  static constexpr const char* name = "spill-writer";
  static void write(file_env& env, const state_layout& layout, spill_job& job);
};
using spill_writer_state = store_writer_state<spill_write_kind>;

spill_writer_actor::behavior_type spill_writer(store_writer_ptr<spill_write_kind> self, state_layout layout,
                                               std::shared_ptr<file_env> env);

}  // namespace anchorage
