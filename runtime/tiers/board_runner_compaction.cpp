// The board runner's compaction work (docs/COMPACTION.md): a compaction request served as the
// continuation of the conversation the slot holds (in place, parked or spilled), the compaction
// worker's idle runs and the summaries they prewrite, and a request answered from one.
#include "runtime/core/log.hpp"
#include "runtime/text/compaction_plan.hpp"
#include "runtime/tiers/board_runner.hpp"
#include "runtime/tiers/board_runner_detail.hpp"
#include "runtime/tiers/spill_keeper.hpp"

namespace anchorage {

// A compaction request (docs/COMPACTION.md) whose guard holds against the conversation this slot
// holds is served as that conversation's continuation: its rows up to the end anchor, then the
// plan's one turn. It runs as a guest, so the conversation's rows, anchors and end anchor stay as
// they were and its next ordinary turn resumes at its end anchor. A summary the compaction worker
// prewrote for this session, end and turn answers it without the engine when the request's
// sampling allows. Otherwise it is served as sent.
void board_runner::maybe_continue_compaction() {
  const compaction_plan& plan = *job_.compaction;
  const resident_prefix& r = tiers_->resident();
  const end_record* e = r.end();
  const tokenizer tok = job_.tok ? *job_.tok : tokenizer();
  const std::size_t capacity = eng_->layout().views.empty() ? 0 : eng_->layout().views.front().capacity;
  const bool held = e && !e->rows.empty() && r.tokens().size() >= e->rows.size() &&
                    std::equal(e->rows.begin(), e->rows.end(), r.tokens().begin());
  // The turn appended: plan.turn, or the client's unanswered last message and then plan.turn.
  std::optional<std::vector<token_id>> turn;
  if (held && compaction_session_fits(job_.session_key, end_session_))
    turn = compaction_continuation(plan, tok, e->rows);
  const bool in_place = turn.has_value();
  std::optional<std::vector<token_id>> elsewhere;
  if (!in_place) elsewhere = held_elsewhere(plan, tok);
  if (elsewhere) turn = compaction_continuation(plan, tok, *elsewhere);
  const std::size_t end_rows = in_place ? e->rows.size() : elsewhere ? elsewhere->size() : 0;
  if (!turn || end_rows + turn->size() + 1 >= capacity) {
    ++compactions_as_sent_;
    return;
  }
  job_.compaction->turn.assign(turn->begin(), turn->end());
  continue_from_end(in_place ? e->rows : *elsewhere);
  // Parked or spilled, it comes back into place like its next turn would (the tiers' plan finds
  // it at its end anchor) and the continuation writes above that end.
  compaction_guest_ = in_place;
  if (!in_place) {
    ++compactions_continued_;
    return;
  }
  if (prewrites_) {
    const prewritten_summary* s = prewrites_->find(job_.session_key, e->rows, plan.turn);
    if (s && compaction_prewrites::answers(*s, job_)) {
      prewritten_ = *s;
      ++compactions_prewritten_;
      return;
    }
  }
  ++compactions_continued_;
}

// The held conversation when it is not the one in place: the parked one, else the newest spilled
// one of this session, else of any session, whose record passes the guard; its tokens up to its
// end anchor.
std::optional<std::vector<token_id>> board_runner::held_elsewhere(const compaction_plan& plan,
                                                                  const tokenizer& tok) const {
  const resident_prefix& r = tiers_->resident();
  if (const saved_prompt* pk = r.saved(cache_via::park); pk && pk->end && !pk->end->rows.empty()) {
    if (compaction_guard_holds(plan, tok, pk->end->rows)) return pk->end->rows;
  }
  if (!spill_ || !tiers_->spill()) return std::nullopt;
  const spill_manifest* best = nullptr;
  std::vector<token_id> best_rows;
  for (const spill_manifest* m : spill_->store().manifests()) {
    if (!m->end || m->end->at == 0 || m->end->at > m->tokens.size()) continue;
    if (!compaction_session_fits(job_.session_key, m->session_key)) continue;
    const bool mine = m->session_key == job_.session_key;
    if (best && (best->session_key == job_.session_key) > mine) continue;
    if (best && (best->session_key == job_.session_key) == mine && best->sequence >= m->sequence) continue;
    std::vector<token_id> rows(m->tokens.begin(), m->tokens.begin() + static_cast<long>(m->end->at));
    if (!compaction_guard_holds(plan, tok, rows)) continue;
    best = m;
    best_rows = std::move(rows);
  }
  if (!best) return std::nullopt;
  return best_rows;
}

// The served prompt of a continuation: the held rows up to the end anchor, then the plan's turn.
void board_runner::continue_from_end(const std::vector<token_id>& end_rows) {
  const compaction_plan& plan = *job_.compaction;
  const std::size_t capacity = eng_->layout().views.empty() ? 0 : eng_->layout().views.front().capacity;
  std::vector<token_id> p = end_rows;
  p.insert(p.end(), plan.turn.begin(), plan.turn.end());
  asked_ = p;
  job_.prompt.assign(p.begin(), p.end());
  job_.starts_in_reasoning = plan.starts_in_reasoning;
  job_.reasoning_budget = -1;
  job_.max_tokens = std::min<long>(job_.max_tokens, static_cast<long>(capacity - p.size()));
  job_key_ = 0;       // a continuation is not the request a restart would send again
  job_.disk.reset();  // the disk's offer was for the request as sent
  compaction_served_ = true;
  compaction_guest_ = true;
}

bool board_runner::idle_candidate(const board_job& tmpl, std::size_t min_tokens) const {
  if (busy() || !end_opencode_ || !tmpl.compaction || !tiers_->options().enabled) return false;
  const resident_prefix& r = tiers_->resident();
  const end_record* e = r.end();
  // Nothing above the end anchor: the guest's stash holds no row, so it cannot be refused (a
  // refused stash would make the run an ordinary request over the conversation's rows).
  if (!e || e->rows.empty() || e->rows.size() < min_tokens || r.tokens() != e->rows) return false;
  const std::size_t capacity = eng_->layout().views.empty() ? 0 : eng_->layout().views.front().capacity;
  if (e->rows.size() + tmpl.compaction->turn.size() + 2 >= capacity) return false;
  return !prewrites_ || !prewrites_->has(end_session_, e->rows, tmpl.compaction->turn);
}

// The worker's continuation, started like a compaction request whose guard held: a guest from
// the end anchor (tiers_->plan finds it there; nothing is read from the disk).
board_events board_runner::start_idle(board_job tmpl) {
  if (!idle_candidate(tmpl, 0)) throw std::logic_error("board_runner: no conversation to prewrite for");
  tmpl.idle = true;
  tmpl.session_key = end_session_;
  tmpl.sink = sink_actor{};
  tmpl.disk.reset();
  tmpl.id = "idle-compaction-" + std::to_string(slot_) + "-" + std::to_string(idle_started_ + 1);
  idle_end_rows_ = tiers_->resident().end()->rows;
  ++idle_started_;
  idle_steps_ = 0;
  board_events out = start(std::move(tmpl));
  if (!busy()) {  // it could not begin: nothing for the conductor or a client
    out.events.clear();
    out.done.reset();
    out.idle = idle_reply{};
    out.idle->what = idle_reply::outcome::refused;
    idle_ = false;
  }
  return out;
}

board_events board_runner::preempt_idle() {
  board_events out;
  if (!running_idle() || !session_) return out;
  session_->cancel();
  session_->step(decode_block_);  // cancelled: it ends without reading the engine
  finish(out);
  return out;
}

// The end of idle work: the summary kept when the run finished; the worker's answer either way.
void board_runner::finish_idle(board_events& out, bool preempted) {
  const auto& s = *session_;
  idle_reply r;
  r.what = preempted ? idle_reply::outcome::preempted : idle_reply::outcome::finished;
  r.session_key = job_.session_key;
  r.end_tokens = idle_end_rows_.size();
  r.output_tokens = s.output_tokens();
  r.steps = idle_steps_;
  if (preempted) {
    ++idle_preempted_;
  } else {
    ++idle_finished_;
    if (prewrites_) {
      prewritten_summary p;
      p.session_key = job_.session_key;
      p.end_rows = idle_end_rows_;
      p.turn = job_.compaction->turn;
      p.temperature = job_.temperature;
      p.top_p = job_.top_p;
      p.seed = job_.seed;
      p.max_tokens = job_.max_tokens;
      p.output = s.output_ids();
      p.finish_reason = s.finish_reason();
      prewrites_->put(std::move(p));
    }
  }
  log_info() << "compaction worker: " << to_string(r.what) << " on slot " << slot_ << " (" << r.end_tokens
             << " tokens held, " << r.output_tokens << " summary tokens, " << r.steps << " steps)";
  out.idle = r;
  idle_end_rows_.clear();
}

// A compaction request answered from a prewritten summary: the session replays the summary's ids
// (the deltas, the parser, max_tokens as a live run has them) and reads nothing of the engine;
// the tiers are not asked.
board_events board_runner::begin_prewritten() {
  board_events out;
  out.sink = job_.sink;
  const prewritten_summary& s = *prewritten_;
  job_.seed = s.seed;
  generation_job g = to_generation_job(job_);
  const auto limit = static_cast<std::size_t>(std::max(0L, job_.max_tokens));
  g.resume_output.assign(s.output.begin(),
                         s.output.begin() + static_cast<long>(std::min(limit, s.output.size())));
  g.replay_finish = g.resume_output.size() < s.output.size() ? "length" : s.finish_reason;
  active_ = eng_.get();
  try {
    session_ = std::make_unique<generation_session>(*eng_, std::move(g));
  } catch (const std::exception& ex) {
    // Not this request's output after all: served as a continuation instead.
    log_warn() << "a prewritten summary does not replay (" << ex.what() << ")";
    prewritten_.reset();
    --compactions_prewritten_;
    ++compactions_continued_;
    return out;
  }
  job_.cache = x_cache_info{};
  job_.cache.source = to_string(cache_source::end);
  job_.cache.resumed_at = static_cast<long>(job_.prompt.size());
  job_.cache.via = "prewritten";
  source_ = cache_source::end;
  served_as_asked_ = false;
  if (cancel_pending_) session_->cancel();
  phase_ = phase::running;
  out.step_again = true;
  return out;
}

}  // namespace anchorage
