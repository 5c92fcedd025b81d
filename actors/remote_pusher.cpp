#include "actors/remote_pusher.hpp"

#include <caf/all.hpp>

namespace anchorage {

remote_pusher_actor::behavior_type remote_pusher(
    remote_pusher_actor::stateful_pointer<remote_pusher_state> self, remote_tier_options options,
    std::uint64_t fingerprint, std::shared_ptr<file_env> local) {
  auto& st = self->state;
  st.local = std::move(local);
  st.redis = std::make_unique<redis_env>(options.redis);
  st.disk = std::make_unique<remote_disk>(*st.redis, fingerprint, options.disk);
  return {
      [self](remote_push_atom, const remote_push_job_ptr& job) -> remote_stats {
        auto& s = self->state;
        if (job && job->spill)
          s.disk->push_spill(*s.local, job->folder, job->paths);
        else if (job)
          s.disk->push(*s.local, job->folder, job->paths);
        return s.disk->counters();
      },
  };
}

}  // namespace anchorage
