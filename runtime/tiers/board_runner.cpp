#include "runtime/tiers/board_runner.hpp"

#include <algorithm>

#include "runtime/core/log.hpp"
#include "runtime/generation/generation_key.hpp"
#include "runtime/text/compaction_plan.hpp"
#include "runtime/text/end_record_builder.hpp"
#include "runtime/tiers/board_runner_detail.hpp"
#include "runtime/tiers/spill_keeper.hpp"

namespace anchorage {

generation_job to_generation_job(const board_job& j) {
  generation_job g;
  if (j.tok) g.tok = *j.tok;
  g.prompt.assign(j.prompt.begin(), j.prompt.end());
  g.gen.sampling.temperature = static_cast<float>(j.temperature);
  g.gen.sampling.top_p = static_cast<float>(j.top_p);
  g.gen.sampling.seed = j.seed;
  g.gen.sampling.logit_bias.assign(j.logit_bias.begin(), j.logit_bias.end());
  g.gen.max_tokens = static_cast<int>(j.max_tokens);
  g.gen.stop_tokens.assign(j.stop_tokens.begin(), j.stop_tokens.end());
  g.stop_strings = j.stop_strings;
  g.parse_reasoning = j.parse_reasoning;
  g.parse_tool_calls = j.parse_tool_calls;
  if (j.tools) g.tools = *j.tools;
  g.starts_in_reasoning = j.starts_in_reasoning;
  g.reasoning_budget = j.reasoning_budget;
  return g;
}

// The running request's live generation: to_generation_job's, with speculative decoding.
generation_job board_runner::session_job() const {
  generation_job g = to_generation_job(job_);
  g.speculative = speculative_;
  g.lookup = lookup_.get();
  return g;
}

speculative_counters board_runner::speculation() const {
  speculative_counters c = speculation_done_;
  if (session_ && !session_->done()) c.add(session_->speculation());  // a done one is counted
  return c;
}

board_runner::board_runner(std::shared_ptr<engine> eng, board_runner_options opts)
    : eng_(std::move(eng)), decode_block_(opts.decode_block) {
  speculative_ = opts.speculative;
  lookup_ = opts.lookup;
  tiers_ = std::make_unique<cache_tiers>(opts.cache, eng_->where(), opts.budget);
  if (opts.disk && opts.cache.enabled) {
    disk_opts_ = opts.disk;
    staging_ = std::make_unique<disk_staging>(eng_->layout(), opts.disk->stage_bytes);
    tiers_->attach_disk();
  }
  slot_ = opts.slot;
  prewrites_ = opts.prewrites;
  responses_ = opts.responses;
  if (!responses_ && opts.cache.enabled && opts.cache.response_cache_bytes > 0)
    responses_ = std::make_shared<response_cache>(opts.cache.response_cache_bytes);
  if (opts.spill && opts.cache.enabled) {
    spill_ = opts.spill;
    // An eviction spills what the park cannot hold, before the rows are rewritten.
    tiers_->attach_spill(
        spill_, [this](const state_adapter& state, const resident_prefix& r, const std::string& session) {
          try {
            if (auto job = spill_->stage_resident(r, state, eng_->where(), session, slot_, false, "evict"))
              pending_spills_.push_back(std::move(job));
          } catch (const std::exception& e) {
            log_warn() << "staging a session spill failed (" << e.what() << ")";
          }
        });
  }
  active_ = eng_.get();
}

// The cold path after a restore failed: what the restore wrote is unknown, so the resident rows
// are no longer trusted.
resume_offer board_runner::cold_after_failure(const resume_offer& failed, std::vector<token_id> prompt) {
  tiers_->clear(cache_tier::resident);
  resume_offer o;
  o.served = std::move(prompt);
  if (failed.via == cache_via::stash) o.via = failed.via;
  return o;
}

void board_runner::take_submissions(board_events& out) {
  if (!staging_) return;
  for (auto& sub : staging_->take_submissions()) out.disk_submissions.push_back(std::move(sub));
}

void board_runner::disk_released(std::uint64_t bytes) {
  if (staging_) staging_->released(bytes);
}

cache_stats board_runner::stats() const {
  cache_stats s = tiers_->stats();
  if (staging_) {
    s.disk_staging = staging_->stats();
    s.disk_staged_bytes = staging_->staged_bytes();
  }
  return s;
}

board_events board_runner::failed(const board_job& j, int status, const std::string& message) {
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
  e.finish_reason = "error";
  out.done = std::move(e);
  return out;
}

// The offer start() planned restored into the engine, or a cold reset. A restore that fails
// for any reason is the cold path. Sets job_.prompt (the served prompt) and job_.cache.
void board_runner::restore_start(resume_offer& o) {
  active_ = eng_.get();
  active_->abandon_prefill();  // a request cancelled inside its prefill left its queue
  if (o.source != cache_source::cold) {
    try {
      tiers_->restore(active_->cache_state(), o);
    } catch (const std::exception&) {
      o = cold_after_failure(o, asked_);
    }
  }
  if (o.source == cache_source::cold) active_->reset();
  // The first request that resumes in a conversation read back from the spill at the start
  // was served by the spill: its rows and anchors are the spill's.
  reported_ = o.source;
  if (read_back_ && o.via == cache_via::none &&
      (o.source == cache_source::end || o.source == cache_source::resident)) {
    reported_ = cache_source::spill;
    spill_->count_hit(o.at);
  }
  if (o.via != cache_via::stash) read_back_ = false;
  job_.prompt.assign(o.served.begin(), o.served.end());
  job_.cache = x_cache_info{};
  job_.cache.source = to_string(reported_);
  job_.cache.resumed_at = static_cast<long>(o.at);
  job_.cache.restore_ms = static_cast<double>(steady_ns() - start_ns_) / 1e6;
}

void board_runner::take_early_cancel() {
  auto early = std::find(early_cancels_.begin(), early_cancels_.end(), job_.id);
  if (early == early_cancels_.end()) return;
  early_cancels_.erase(early);
  cancel_pending_ = true;
}

board_events board_runner::start(board_job j) {
  if (phase_ != phase::idle) return failed(j, 503, "the board is busy");
  start_ns_ = steady_ns();
  asked_.assign(j.prompt.begin(), j.prompt.end());
  job_key_ = checkpoint_every() > 0 ? generation_key(j) : 0;
  next_checkpoint_ = checkpoint_every();
  cancel_pending_ = false;
  replan_ = false;
  first_token_ns_ = 0;
  job_ = std::move(j);
  take_early_cancel();
  compaction_served_ = false;
  prewritten_.reset();
  idle_ = job_.idle;
  response_served_ = false;
  response_key_.reset();
  if (responses_) response_key_ = response_key_of(job_, eng_->layout().fingerprint);
  if (response_key_) {
    if (auto hit = responses_->find(*response_key_)) {
      board_events h = begin_response(std::move(*hit));
      if (h.step_again) return h;
    }
  }
  if (idle_) {
    continue_from_end(idle_end_rows_);
  } else if (job_.compaction) {
    maybe_continue_compaction();
  }
  if (prewritten_) {
    board_events p = begin_prewritten();
    if (p.step_again) return p;
  }
  // The plan now; with a disk tier its offer (made while the request waited) competes.
  if (auto* d = tiers_->disk()) d->expect(job_.disk, staging_->prefill_tokens_per_s());
  if (auto* sp = tiers_->spill()) sp->expect_rate(staging_ ? staging_->prefill_tokens_per_s() : 0);
  request_info info = info_of(job_);
  info.force_guest = compaction_served_ && compaction_guest_;
  pending_ = tiers_->plan(asked_, info);
  fetching_spill_ = false;
  if (pending_.source == cache_source::spill) {
    // The spill reader reads and verifies the conversation off the board's thread; the board
    // still answers cancels, clears, stats and the other slots' steps meanwhile.
    if (spill_fetch_ptr f = tiers_->spill()->fetch()) {
      board_events out;
      out.sink = job_.sink;
      out.spill_read = std::move(f);
      fetching_spill_ = true;
      phase_ = phase::restoring;
      return out;
    }
  }
  const bool read_prefix = pending_.source == cache_source::disk;
  if (!read_prefix && job_key_ == 0) return begin_request();
  // The disk reads (a checkpoint of this generation first, then the prefix) while the board
  // still answers cancels, clears and stats.
  board_events out;
  out.sink = job_.sink;
  disk_read_request rq;
  rq.prompt.assign(asked_.begin(), asked_.end());
  if (read_prefix) rq.offer = tiers_->disk()->taken();
  if (job_key_ != 0) rq.checkpoint_key = job_key_;
  out.disk_read = std::move(rq);
  phase_ = phase::restoring;
  return out;
}

void board_runner::replan() {
  request_info info = info_of(job_);
  info.force_guest = compaction_served_ && compaction_guest_;
  pending_ = tiers_->plan(asked_, info);
}

board_events board_runner::spill_fetched(spill_fetch_ptr f) {
  if (phase_ != phase::restoring || !fetching_spill_) return {};
  fetching_spill_ = false;
  if (replan_) {
    // A clear came while the spill was read: the plan again, without the disk's queued offer
    // (its bytes were never read); the read serves only if the same conversation is planned.
    replan_ = false;
    if (auto* d = tiers_->disk()) d->expect(std::nullopt, 0);
    replan();
  }
  if (f) tiers_->spill()->take_fetched(*f);
  if (job_key_ == 0 || pending_.source == cache_source::disk) return begin_request();
  // A checkpoint of this generation may still serve it: the disk reads that next.
  board_events out;
  out.sink = job_.sink;
  disk_read_request rq;
  rq.prompt.assign(asked_.begin(), asked_.end());
  rq.checkpoint_key = job_key_;
  out.disk_read = std::move(rq);
  return out;
}

board_events board_runner::restored(disk_read_reply reply) {
  if (phase_ != phase::restoring) return {};
  board_events out;
  out.sink = job_.sink;
  if (!reply.error.empty()) log_warn() << "the disk read failed (" << reply.error << ")";
  if (reply.kind == disk_read_kind::checkpoint && reply.checkpoint &&
      resume_checkpoint(*reply.checkpoint, out)) {
    if (cancel_pending_) session_->cancel();
    phase_ = phase::running;
    out.step_again = true;
    return out;
  }
  auto* d = tiers_->disk();
  if (!d) return begin_request();
  if (replan_) {
    // A clear came while the disk read: what the device tiers offered may be gone. The plan
    // again, with the disk's offer only if its bytes came (they were checked against the prompt).
    const std::optional<disk_offer> taken = d->taken();
    d->expect(reply.kind == disk_read_kind::prefix ? taken : std::nullopt, 0);
    replan();
  }
  d->take_read(reply.kind == disk_read_kind::prefix ? std::move(reply.prefix) : nullptr);
  board_events next = begin_request();
  next.generations_finished.insert(next.generations_finished.end(), out.generations_finished.begin(),
                                   out.generations_finished.end());
  return next;
}

// The request's start once the disk (if asked) answered: the restore, the session, the tiers'
// begin, and (with a disk tier, for a request that is no guest) the admission of its writes.
board_events board_runner::begin_request() {
  board_events out;
  out.sink = job_.sink;
  resume_offer o = std::move(pending_);
  pending_ = resume_offer{};
  restore_start(o);
  try {
    session_ = std::make_unique<generation_session>(*active_, session_job());
  } catch (const std::exception& e) {
    if (o.source == cache_source::cold) {
      phase_ = phase::idle;
      board_events f = failed(job_, 400, e.what());
      job_ = board_job{};
      return f;
    }
    // The served prompt (an end alignment can lengthen it) did not fit: start cold. The
    // restore wrote sections (and, from the store, rows) the resident prefix does not know.
    o = cold_after_failure(o, asked_);
    active_->reset();
    job_.prompt.assign(asked_.begin(), asked_.end());
    job_.cache = x_cache_info{};
    try {
      session_ = std::make_unique<generation_session>(*active_, session_job());
    } catch (const std::exception& e2) {
      phase_ = phase::idle;
      board_events f = failed(job_, 400, e2.what());
      job_ = board_job{};
      return f;
    }
  }
  guarded([&] { tiers_->begin(o, active_->cache_state()); });
  take_spills(out);
  job_.cache.via = compaction_served_ ? "compaction" : to_string(tiers_->running_via());
  served_as_asked_ =
      job_.prompt.size() == asked_.size() && std::equal(asked_.begin(), asked_.end(), job_.prompt.begin());
  source_ = reported_;
  if (cancel_pending_) session_->cancel();
  const cache_via via = tiers_->running_via();
  // A continuation is nobody's prompt again: the disk keeps nothing of it.
  staging_active_ = staging_ && via != cache_via::stash && !compaction_served_;
  if (staging_active_) {
    // What this prefill writes is the disk's to decide (its index): asked before the first step.
    disk_plan_request rq;
    rq.prompt = job_.prompt;
    rq.resume = o.at;
    rq.exact = o.exact;
    rq.session_key = job_.session_key;
    if (job_.user_start >= 0) rq.user_start = static_cast<std::size_t>(job_.user_start);
    out.disk_plan = std::move(rq);
    phase_ = phase::planning;
    return out;
  }
  phase_ = phase::running;
  out.step_again = true;
  return out;
}

board_events board_runner::planned(const disk_write_lines& lines) {
  if (phase_ != phase::planning) return {};
  const std::vector<token_id> served(job_.prompt.begin(), job_.prompt.end());
  staging_->begin(served, static_cast<std::size_t>(job_.cache.resumed_at), lines);
  phase_ = phase::running;
  board_events out;
  out.sink = job_.sink;
  out.step_again = true;
  return out;
}

board_events board_runner::step() {
  board_events out;
  if (!session_ || phase_ != phase::running) return out;
  out.sink = job_.sink;
  ++steps_;
  if (idle_) ++idle_steps_;
  const bool was_prefilling = session_->prefilling();
  return after_step(session_->step(decode_block_), was_prefilling);
}

std::optional<token_id> board_runner::batch_token() const {
  if (!session_ || phase_ != phase::running) return std::nullopt;
  return session_->batch_token();
}

board_events board_runner::step_forwarded() {
  if (!session_ || phase_ != phase::running) throw std::logic_error("board_runner: no request to step");
  ++steps_;
  if (idle_) ++idle_steps_;
  return after_step(session_->step_forwarded(), false);
}

std::vector<token_id> board_runner::batch_rows(std::size_t max_rows) {
  if (!session_ || phase_ != phase::running) throw std::logic_error("board_runner: no request to step");
  return session_->batch_rows(max_rows);
}

board_events board_runner::step_rows() {
  if (!session_ || phase_ != phase::running) throw std::logic_error("board_runner: no request to step");
  ++steps_;
  if (idle_) ++idle_steps_;
  return after_step(session_->step_rows(), false);
}

// What a step leaves: the tiers' and the staging's anchors after a prefill chunk, progress, the
// first token's time, a checkpoint, the deltas, the end.
board_events board_runner::after_step(generation_session::step_result r, bool was_prefilling) {
  const bool idle = idle_;  // idle work tells no client anything (finish() ends idle_)
  board_events out = after_step_events(std::move(r), was_prefilling);
  if (idle) out.events.clear();
  return out;
}

board_events board_runner::after_step_events(generation_session::step_result r, bool was_prefilling) {
  board_events out;
  out.sink = job_.sink;
  engine& e = *active_;
  if (was_prefilling) {
    guarded([&] { tiers_->after_prefill_step(e.cache_state(), e.where()); });
    if (staging_active_) {
      try {
        staging_->after_prefill_step(e.cache_state());
      } catch (const std::exception& ex) {
        log_warn() << "staging a disk write failed (" << ex.what() << ")";
      }
      take_submissions(out);
    }
  }
  if (session_->prefilling() || r.prefill_finished) {
    stream_event ev;
    ev.what = stream_event::kind::progress;
    ev.id = job_.id;
    ev.prompt_tokens = session_->prompt_tokens();
    ev.done_tokens = static_cast<long>(e.length());
    out.events.push_back(std::move(ev));
  }
  if (r.tokens > 0 && first_token_ns_ == 0) first_token_ns_ = steady_ns();
  if (r.tokens > 0 && !session_->done()) maybe_checkpoint(out);
  if (!r.deltas.empty()) {
    stream_event ev;
    ev.what = stream_event::kind::delta;
    ev.id = job_.id;
    ev.deltas = std::move(r.deltas);
    out.events.push_back(std::move(ev));
  }
  if (session_->done()) {
    finish(out);
  } else {
    out.step_again = true;
  }
  return out;
}

void board_runner::finish(board_events& out) {
  const auto& s = *session_;
  speculation_done_.add(s.speculation());
  engine& e = *active_;
  // A generation that ended (not one cut short) needs its checkpoints no more.
  if (checkpoint_every() > 0 && job_key_ != 0 && s.finish_reason() != "cancelled")
    out.generations_finished.push_back(job_key_);
  // The tiers keep what this request leaves: the end anchor and the session snapshot, once the
  // whole prompt was forwarded (a request cancelled inside its prefill leaves its anchors only).
  // A summary answered from its prewrite never asked them; idle work keeps nothing there.
  // A continuation keeps none either: the conversation's own end anchor stays its end.
  if (!replayed() && !idle_ && !compaction_served_ && e.length() >= job_.prompt.size()) {
    const std::vector<token_id> served(job_.prompt.begin(), job_.prompt.end());
    generation_outcome g;
    g.served = &served;
    g.output = &s.output_ids();
    g.hidden = s.hidden_spans();
    g.reasoning_end = s.reasoning_end();
    g.starts_in_reasoning = job_.starts_in_reasoning;
    g.rows = e.length();
    g.tok = s.tok();
    guarded([&] { tiers_->end_generation(e.cache_state(), e.where(), build_end_record(g)); });
  }
  // What the engine read and wrote, for the suffix store (a continuation's too: its rows above the
  // end anchor were read and written like any request's).
  if (!replayed() && !idle_ && e.length() >= job_.prompt.size()) {
    auto ids = std::make_shared<std::vector<token_id>>(job_.prompt.begin(), job_.prompt.end());
    ids->insert(ids->end(), s.output_ids().begin(), s.output_ids().end());
    out.suffix_add = std::move(ids);
  }
  // The slot's end anchor is this request's conversation's now (a guest's leaves it as it was).
  const cache_via via = tiers_->running_via();
  if (!replayed() && !idle_ && via != cache_via::stash) {
    end_session_ = job_.session_key;
    end_opencode_ = job_.opencode;
  }
  if (!replayed()) guarded([&] { tiers_->finish(e.cache_state()); });
  keep_response();
  if (idle_) {
    finish_idle(out, s.finish_reason() == "cancelled");
    out.tiers_changed = true;  // the counters, the summaries kept
    session_.reset();
    job_ = board_job{};
    phase_ = phase::idle;
    idle_ = false;
    return;
  }
  if (staging_active_) {
    try {
      staging_->finish(e.cache_state());
    } catch (const std::exception& ex) {
      log_warn() << "staging a disk write failed (" << ex.what() << ")";
    }
    take_submissions(out);
    staging_active_ = false;
  }
  out.tiers_changed = true;
  const auto now = steady_ns();
  stream_event ev;
  ev.what = stream_event::kind::finished;
  ev.id = job_.id;
  ev.finish_reason = s.finish_reason();
  ev.output = s.output();
  ev.prompt_tokens = s.prompt_tokens();
  ev.cache = job_.cache;
  ev.cache.prefilled_tokens = s.prefilled_tokens();
  const std::int64_t first = first_token_ns_ ? first_token_ns_ : now;
  ev.cache.ttft_ms = static_cast<double>(first - job_.received_ns) / 1e6;
  ev.usage = usage_info{s.prompt_tokens(), s.output_tokens(), s.prompt_tokens() - s.prefilled_tokens()};
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
  l.seed = job_.seed;
  out.done = l;
  out.events.push_back(std::move(ev));
  session_.reset();
  job_ = board_job{};
  prewritten_.reset();
  response_served_ = false;
  phase_ = phase::idle;
}

void board_runner::cancel(const std::string& id) {
  if (phase_ != phase::idle && job_.id == id) {
    if (session_) return session_->cancel();
    cancel_pending_ = true;  // restoring or planning: the session ends at its first step
    return;
  }
  early_cancels_.push_back(id);
  if (early_cancels_.size() > 16) early_cancels_.pop_front();
}

std::optional<std::vector<cache_tier>> board_runner::clear(cache_tier tier) {
  if (!tiers_->has(tier)) return std::nullopt;
  std::vector<cache_tier> done = tiers_->clear(tier);
  if (phase_ == phase::restoring) replan_ = true;
  if (staging_ && std::find(done.begin(), done.end(), cache_tier::disk) != done.end()) {
    staging_->clear();
    staging_active_ = false;  // the running request writes nothing more
  }
  return done;
}

}  // namespace anchorage
