#include "actors/spill_writer.hpp"

#include <caf/all.hpp>

#include "runtime/io/clock.hpp"
#include "runtime/tiers/spill_keeper.hpp"

namespace anchorage {

spill_writer_actor::behavior_type spill_writer(spill_writer_actor::stateful_pointer<spill_writer_state> self,
                                               state_layout layout, std::shared_ptr<file_env> env) {
  self->state.layout = std::move(layout);
  // The env is this actor's alone from here (file_env is not thread-safe).
  auto keep = std::move(env);
  return {
      [self, keep](spill_write_atom, spill_job_ptr job) -> spill_job_ptr {
        if (job) {
          const std::int64_t t0 = steady_ns();
          job->results = execute_spill_write(*keep, self->state.layout, job->image, job->plan);
          job->write_s = static_cast<double>(steady_ns() - t0) / 1e9;
        }
        ++self->state.jobs;
        return job;
      },
  };
}

}  // namespace anchorage
