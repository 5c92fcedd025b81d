// The board runner's side of the response cache (docs/CACHES.md, "The response cache"): a hit
// answered without the engine, a finished determined generation kept.
#include "runtime/core/log.hpp"
#include "runtime/tiers/board_runner.hpp"
#include "runtime/tiers/board_runner_detail.hpp"

namespace anchorage {

// A request answered from the response cache: an identical greedy request's output ids replayed
// through the session (the parser, stop strings, max_tokens as a live run has them) with its
// finish reason; nothing is prefilled or decoded, the engine is not read and the tiers are not
// asked. An answer that does not replay (not this job's output after all) is served live.
board_events board_runner::begin_response(cached_response hit) {
  board_events out;
  out.sink = job_.sink;
  generation_job g = to_generation_job(job_);
  g.resume_output = std::move(hit.output);
  g.replay_finish = hit.finish_reason;
  active_ = eng_.get();
  active_->abandon_prefill();  // a request cancelled inside its prefill left its queue
  try {
    session_ = std::make_unique<generation_session>(*eng_, std::move(g));
  } catch (const std::exception& ex) {
    log_warn() << "a cached response does not replay (" << ex.what() << ")";
    return out;
  }
  response_served_ = true;
  response_key_.reset();  // kept already
  job_key_ = 0;           // no checkpoint of it exists or is written
  job_.cache = x_cache_info{};
  job_.cache.source = to_string(cache_source::response);
  job_.cache.resumed_at = static_cast<long>(job_.prompt.size());
  source_ = cache_source::response;
  served_as_asked_ = true;
  if (cancel_pending_) session_->cancel();
  phase_ = phase::running;
  out.step_again = true;
  return out;
}

// A finished generation of a determined request: its ids and finish reason kept for the next
// identical one. A cancelled one is not (its output was cut short).
void board_runner::keep_response() {
  if (!response_key_ || !responses_ || !session_) return;
  const std::string& reason = session_->finish_reason();
  if (reason == "stop" || reason == "length")
    responses_->put(std::move(*response_key_), cached_response{session_->output_ids(), reason});
  response_key_.reset();
}

}  // namespace anchorage
