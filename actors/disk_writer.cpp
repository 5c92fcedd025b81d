#include "actors/disk_writer.hpp"

#include <caf/all.hpp>

#include "runtime/disk/disk_tier_options.hpp"

namespace anchorage {

disk_writer_actor::behavior_type disk_writer(disk_writer_actor::stateful_pointer<disk_writer_state> self,
                                             state_layout layout, std::shared_ptr<file_env> env) {
  self->state.layout = std::move(layout);
  // The env is this actor's alone from here (file_env is not thread-safe).
  auto keep = std::move(env);
  return {
      [self, keep](disk_write_atom, disk_job_ptr job) -> disk_job_ptr {
        if (job) job->results = execute_disk_write(*keep, self->state.layout, job->write, job->plan);
        ++self->state.jobs;
        return job;
      },
  };
}

}  // namespace anchorage
