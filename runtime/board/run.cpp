#include "runtime/board/run.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/core/log.hpp"
#include "runtime/io/clock.hpp"

namespace anchorage {

generation_job to_generation_job(const board_job& j) {
  generation_job g;
  if (j.tok) g.tok = *j.tok;
  g.prompt.assign(j.prompt.begin(), j.prompt.end());
  g.gen.sampling.temperature = static_cast<float>(j.sampling.temperature);
  g.gen.sampling.top_p = static_cast<float>(j.sampling.top_p);
  g.gen.sampling.seed = j.sampling.seed;
  g.gen.sampling.logit_bias.assign(j.sampling.logit_bias.begin(), j.sampling.logit_bias.end());
  g.gen.max_tokens = static_cast<int>(j.sampling.max_tokens);
  g.gen.stop_tokens.assign(j.sampling.stop_tokens.begin(), j.sampling.stop_tokens.end());
  g.rules = j.rules;
  return g;
}

request_info info_of(const board_job& j) {
  request_info info;
  info.session_key = j.session_key;
  info.max_tokens = static_cast<std::size_t>(std::max(0L, j.sampling.max_tokens));
  if (j.rules.reasoning_budget >= 0)
    info.hidden_reserve = reasoning_close_length(j.tok ? *j.tok : tokenizer());
  if (const auto* c = j.client(); c && c->user_start >= 0)
    info.user_start = static_cast<std::size_t>(c->user_start);
  return info;
}

board_events failed_events(const board_job& j, int status, const std::string& message) {
  board_events out;
  out.sink = j.sink;
  stream_event ev;
  ev.what = stream_event::kind::failed;
  ev.id = j.id;
  ev.error = api_error{status, status >= 500 ? "server_error" : "invalid_request_error", message, ""};
  out.events.push_back(std::move(ev));
  ledger_entry e;
  e.id = j.id;
  e.route = j.route;
  e.session_key = j.session_key;
  e.prompt_tokens = static_cast<long>(j.prompt.size());
  e.finish_reason = run_finish::error;
  out.done = std::move(e);
  return out;
}

run::run(slot_state& slot, board_job job, std::int64_t start_ns)
    : slot_(slot), job_(std::move(job)), start_ns_(start_ns) {}

speculative_counters run::speculation() const {
  return session_ && !session_->done() ? session_->speculation() : speculative_counters{};
}

board_events run::running_events() {
  board_events out;
  out.sink = job_.sink;
  phase_ = phase::running;
  out.step_again = true;
  return out;
}

void run::cancel() {
  if (session_) return session_->cancel();
  cancel_pending_ = true;  // restoring or planning: the session ends at its first step
}

board_events run::step() {
  if (!session_ || phase_ != phase::running) return {};
  ++slot_.counters.steps;
  const bool was_prefilling = session_->prefilling();
  return after_step(session_->step(slot_.opts.decode_block), was_prefilling);
}

std::optional<token_id> run::batch_token() const {
  if (!session_ || phase_ != phase::running) return std::nullopt;
  return session_->batch_token();
}

board_events run::step_forwarded() {
  if (!session_ || phase_ != phase::running) throw std::logic_error("board_runner: no request to step");
  ++slot_.counters.steps;
  return after_step(session_->step_forwarded(), false);
}

std::vector<token_id> run::batch_rows(std::size_t max_rows) {
  if (!session_ || phase_ != phase::running) throw std::logic_error("board_runner: no request to step");
  return session_->batch_rows(max_rows);
}

board_events run::step_rows() {
  if (!session_ || phase_ != phase::running) throw std::logic_error("board_runner: no request to step");
  ++slot_.counters.steps;
  return after_step(session_->step_rows(), false);
}

// A prefill of more than progress_log_tokens tokens to forward: a log line each time another
// tenth of them is done, so that an operator sees a long prefill move (the slots in the stats
// say the same, asked for).
std::optional<run::prefill_progress> run::progress() const {
  if (!session_ || !session_->prefilling()) return std::nullopt;
  return prefill_progress{session_->prompt_tokens(), static_cast<long>(slot_.eng->length()),
                          static_cast<long>(job_.cache.resumed_at)};
}

void run::log_progress(const stream_event& ev) {
  const long todo = ev.prompt_tokens - ev.cached_tokens;
  if (todo <= progress_log_tokens) return;
  const long tenth = std::min(10L, (ev.done_tokens - ev.cached_tokens) * 10 / todo);
  if (tenth <= logged_tenths_) return;
  logged_tenths_ = tenth;
  const double s = ev.elapsed_ms / 1e3;
  log_info() << "prefill " << job_.id << " on slot " << slot_.opts.slot << ": " << tenth * 10 << "% ("
             << ev.done_tokens << " of " << ev.prompt_tokens << " tokens, from " << ev.cached_tokens << ", "
             << static_cast<long>(s > 0 ? static_cast<double>(ev.done_tokens - ev.cached_tokens) / s : 0)
             << " tokens/s)";
}

// What a step leaves: the kind's part after a prefill chunk, progress, the first token's time,
// the kind's part after decoded tokens (a checkpoint), the deltas, the end.
board_events run::after_step(generation_session::step_result r, bool was_prefilling) {
  board_events out;
  out.sink = job_.sink;
  if (was_prefilling) after_prefill_chunk(out);
  if (session_->prefilling() || r.prefill_finished) {
    stream_event ev;
    ev.what = stream_event::kind::progress;
    ev.id = job_.id;
    ev.prompt_tokens = session_->prompt_tokens();
    ev.done_tokens = static_cast<long>(slot_.eng->length());
    ev.cached_tokens = job_.cache.resumed_at;
    ev.elapsed_ms = static_cast<double>(steady_ns() - start_ns_) / 1e6;
    log_progress(ev);
    out.events.push_back(std::move(ev));
    out.tiers_changed = true;  // the slots' view shows the prefill's progress
  }
  if (r.tokens > 0 && first_token_ns_ == 0) first_token_ns_ = steady_ns();
  if (r.tokens > 0 && !session_->done()) after_tokens(out);
  if (!r.deltas.empty()) {
    stream_event ev;
    ev.what = stream_event::kind::delta;
    ev.id = job_.id;
    ev.deltas = std::move(r.deltas);
    out.events.push_back(std::move(ev));
  }
  if (session_->done()) {
    slot_.counters.speculation.add(session_->speculation());
    finish(out);
    phase_ = phase::ended;
  } else {
    out.step_again = true;
  }
  return out;
}

}  // namespace anchorage
