#include "runtime/board/idle_run.hpp"

namespace anchorage {

idle_run::idle_run(slot_state& slot, board_job job, std::int64_t start_ns, std::vector<token_id> end_rows)
    : continuation_run(slot, std::move(job), start_ns, true),
      end_rows_(std::move(end_rows)),
      first_step_(slot.counters.steps) {}

board_events idle_run::after_step(generation_session::step_result r, bool was_prefilling) {
  board_events out = continuation_run::after_step(std::move(r), was_prefilling);
  out.events.clear();  // idle work tells no client anything
  return out;
}

board_events idle_run::preempt() {
  board_events out;
  if (!session_ || phase_ != phase::running) return out;
  session_->cancel();
  session_->step(slot_.opts.decode_block);  // cancelled: it ends without reading the engine
  slot_.counters.speculation.add(session_->speculation());
  finish(out);
  phase_ = phase::ended;
  return out;
}

void idle_run::finish(board_events& out) {
  keep(out);
  finish_idle(out, session_->finish_reason() == run_finish::cancelled);
  out.tiers_changed = true;  // the counters, the summaries kept
}

// The end of idle work: the summary kept when the run finished; the worker's answer either way.
void idle_run::finish_idle(board_events& out, bool preempted) {
  const generation_session& s = *session_;
  idle_reply r;
  r.what = preempted ? idle_reply::outcome::preempted : idle_reply::outcome::finished;
  r.session_key = job_.session_key;
  r.end_tokens = end_rows_.size();
  r.output_tokens = s.output_tokens();
  r.steps = slot_.counters.steps - first_step_;
  if (preempted) {
    ++slot_.counters.idle_preempted;
  } else {
    ++slot_.counters.idle_finished;
    if (slot_.opts.prewrites) {
      prewritten_summary p;
      p.session_key = job_.session_key;
      p.end_rows = end_rows_;
      p.turn = job_.compaction()->turn;
      p.temperature = job_.sampling.temperature;
      p.top_p = job_.sampling.top_p;
      p.seed = job_.sampling.seed;
      p.max_tokens = job_.sampling.max_tokens;
      p.output = s.output_ids();
      p.finish_reason = s.finish_reason();
      slot_.opts.prewrites->put(std::move(p));
    }
  }
  log_info() << "compaction worker: " << to_string(r.what) << " on slot " << slot_.opts.slot << " ("
             << r.end_tokens << " tokens held, " << r.output_tokens << " summary tokens, " << r.steps
             << " steps)";
  out.idle = r;
}

}  // namespace anchorage
