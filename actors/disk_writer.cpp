#include "actors/disk_writer.hpp"

#include <caf/all.hpp>

#include "runtime/disk/disk_tier_options.hpp"

namespace anchorage {

void disk_write_kind::write(file_env& env, const state_layout& layout, disk_job& job) {
  job.results = execute_disk_write(env, layout, job.write, job.plan);
}

disk_writer_actor::behavior_type disk_writer(store_writer_ptr<disk_write_kind> self, state_layout layout,
                                             std::shared_ptr<file_env> env) {
  return store_writer<disk_write_kind>(self, std::move(layout), std::move(env));
}

}  // namespace anchorage
