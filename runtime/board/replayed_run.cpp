#include "runtime/board/replayed_run.hpp"

#include <algorithm>

namespace anchorage {

replayed_run::replayed_run(slot_state& slot, board_job job, std::int64_t start_ns, cached_response hit)
    : run(slot, std::move(job), start_ns) {
  generation_job g = to_generation_job(job_);
  g.resume_output = std::move(hit.output);
  g.replay_finish = hit.finish_reason;
  slot_.eng->abandon_prefill();  // a request cancelled inside its prefill left its queue
  session_ = std::make_unique<generation_session>(*slot_.eng, std::move(g));
  job_.cache = x_cache_info{};
  job_.cache.source = cache_source::response;
  job_.cache.resumed_at = static_cast<long>(job_.prompt.size());
  source_ = cache_source::response;
}

replayed_run::replayed_run(slot_state& slot, board_job job, std::int64_t start_ns,
                           const prewritten_summary& s)
    : run(slot, std::move(job), start_ns) {
  job_.sampling.seed = s.seed;
  generation_job g = to_generation_job(job_);
  const auto limit = static_cast<std::size_t>(std::max(0L, job_.sampling.max_tokens));
  g.resume_output.assign(s.output.begin(),
                         s.output.begin() + static_cast<long>(std::min(limit, s.output.size())));
  g.replay_finish = g.resume_output.size() < s.output.size() ? run_finish::length : s.finish_reason;
  session_ = std::make_unique<generation_session>(*slot_.eng, std::move(g));
  job_.cache = x_cache_info{};
  job_.cache.source = cache_source::end;
  job_.cache.resumed_at = static_cast<long>(job_.prompt.size());
  job_.cache.via = cache_via::prewritten;
  source_ = cache_source::end;
}

}  // namespace anchorage
