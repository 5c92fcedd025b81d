#pragma once
#include <memory>
#include <utility>

#include <caf/stateful_actor.hpp>

#include "runtime/engine/state_layout.hpp"
#include "runtime/io/file_env.hpp"

namespace anchorage {

// A durable store's writer, one shape for every store (the disk tier's, actors/disk_writer.hpp;
// the session spill's, actors/spill_writer.hpp): it encodes and writes a staged job's files
// through its own file_env while the board serves, one job per message, in the order they came,
// and hands each job back with its results. It owns no index: the store's owner (the disk actor,
// the board's spill keeper) commits what the results say reached the disk. A write that fails is
// a result, never an exception.
//
// `Kind` names what differs: `actor` (the typed interface), `atom`, `job_ptr`, `name`, and
// `write(env, layout, job)`, which fills the job's results.
template <class Kind>
struct store_writer_state {
  state_layout layout;
  long jobs = 0;  // jobs handed back so far
  static inline const char* name = Kind::name;
};

template <class Kind>
using store_writer_ptr = typename Kind::actor::template stateful_pointer<store_writer_state<Kind>>;

template <class Kind>
typename Kind::actor::behavior_type store_writer(store_writer_ptr<Kind> self, state_layout layout,
                                                 std::shared_ptr<file_env> env) {
  self->state.layout = std::move(layout);
  // The env is this actor's alone from here (file_env is not thread-safe).
  auto keep = std::move(env);
  return {
      [self, keep](typename Kind::atom, typename Kind::job_ptr job) -> typename Kind::job_ptr {
        if (job) Kind::write(*keep, self->state.layout, *job);
        ++self->state.jobs;
        return job;
      },
  };
}

}  // namespace anchorage
