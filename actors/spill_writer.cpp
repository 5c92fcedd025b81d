#include "actors/spill_writer.hpp"

#include <caf/all.hpp>

#include "runtime/io/clock.hpp"
#include "runtime/tiers/spill_keeper.hpp"

namespace anchorage {

void spill_write_kind::write(file_env& env, const state_layout& layout, spill_job& job) {
  const std::int64_t t0 = steady_ns();
  job.results = execute_spill_write(env, layout, job.image, job.plan);
  job.write_s = static_cast<double>(steady_ns() - t0) / 1e9;
}

spill_writer_actor::behavior_type spill_writer(store_writer_ptr<spill_write_kind> self, state_layout layout,
                                               std::shared_ptr<file_env> env) {
  return store_writer<spill_write_kind>(self, std::move(layout), std::move(env));
}

}  // namespace anchorage
