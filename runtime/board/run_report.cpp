// A run's end as its client and the conductor see it: the finished event (the output, usage and
// the cache's account) and the ledger entry.
#include "runtime/board/run.hpp"
#include "runtime/io/clock.hpp"

namespace anchorage {

void run::report(board_events& out) {
  const generation_session& s = *session_;
  out.tiers_changed = true;
  const auto now = steady_ns();
  stream_event ev;
  ev.what = stream_event::kind::finished;
  ev.id = job_.id;
  ev.finish_reason = s.finish_reason();
  ev.stop_sequence = s.stop_string();
  ev.output = s.output();
  ev.prompt_tokens = s.prompt_tokens();
  ev.cache = job_.cache;
  ev.cache.prefilled_tokens = s.prefilled_tokens();
  const std::int64_t first = first_token_ns_ ? first_token_ns_ : now;
  ev.cache.ttft_ms = static_cast<double>(first - job_.received_ns) / 1e6;
  ev.usage = usage_info{s.prompt_tokens(), s.output_tokens(), s.prompt_tokens() - s.prefilled_tokens(),
                        s.reasoning_tokens()};
  auto& l = ev.ledger;
  l.id = job_.id;
  l.session_key = job_.session_key;
  l.route = job_.route;
  l.prompt_tokens = s.prompt_tokens();
  l.source = source_;
  l.resumed_at = ev.cache.resumed_at;
  l.prefilled = s.prefilled_tokens();
  if (job_.received_ns > 0) l.queue_ms = static_cast<double>(start_ns_ - job_.received_ns) / 1e6;
  l.restore_ms = ev.cache.restore_ms;
  l.ttft_ms = ev.cache.ttft_ms;
  l.total_ms = static_cast<double>(now - job_.received_ns) / 1e6;
  l.output_tokens = s.output_tokens();
  l.finish_reason = s.finish_reason();
  l.seed = job_.sampling.seed;
  l.miss = ev.cache.miss;
  l.miss_tokens = ev.cache.miss_tokens;
  out.done = l;
  out.events.push_back(std::move(ev));
}

}  // namespace anchorage
