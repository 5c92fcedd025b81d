#include "runtime/tiers/board_runner.hpp"

#include <algorithm>

#include "runtime/core/log.hpp"
#include "runtime/generation/generation_key.hpp"
#include "runtime/io/uring_env.hpp"
#include "runtime/text/end_record_builder.hpp"

namespace anchorage {
namespace {

generation_job to_generation_job(const board_job& j) {
  generation_job g;
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
  g.starts_in_reasoning = j.starts_in_reasoning;
  g.reasoning_budget = j.reasoning_budget;
  return g;
}

request_info info_of(const board_job& j) {
  request_info info;
  info.session_key = j.session_key;
  info.max_tokens = static_cast<std::size_t>(std::max(0L, j.max_tokens));
  if (j.reasoning_budget >= 0) info.hidden_reserve = reasoning_close_length();
  if (j.user_start >= 0) info.user_start = static_cast<std::size_t>(j.user_start);
  return info;
}

}  // namespace

board_runner::board_runner(std::shared_ptr<engine> eng, board_runner_options opts)
    : eng_(std::move(eng)), decode_block_(opts.decode_block), side_slots_(std::move(opts.side_slots)) {
  tiers_ = std::make_unique<cache_tiers>(opts.cache, eng_->where());
  if (opts.disk && opts.cache.enabled) {
    disk_env_ = opts.disk_env ? opts.disk_env : std::make_shared<uring_env>();
    clock_ = std::make_unique<system_eviction_clock>();
    tiers_->attach_disk(std::make_unique<disk_tier>(*disk_env_, eng_->layout(), *clock_, *opts.disk));
  }
  active_ = eng_.get();
}

std::optional<disk_scan_report> board_runner::start_disk() {
  if (!tiers_->disk()) return std::nullopt;
  return tiers_->disk()->start();
}

template <class F>
void board_runner::guarded(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    // A side slot holds none of slot 0's state: only slot 0's failures drop the resident prefix.
    if (active_ != eng_.get()) {
      log_warn() << "a cache tier failed on a side slot (" << e.what() << ")";
      return;
    }
    log_warn() << "a cache tier failed (" << e.what() << "); the resident prefix is dropped";
    tiers_->clear(cache_tier::resident);
  }
}

// The cold path after a restore failed: a side slot's failure touched nothing of slot 0's;
// on slot 0 what the restore wrote is unknown, so the resident rows are no longer trusted.
resume_offer board_runner::cold_after_failure(const resume_offer& failed, std::vector<token_id> prompt) {
  if (failed.via != cache_via::side) tiers_->clear(cache_tier::resident);
  resume_offer o;
  o.served = std::move(prompt);
  if (failed.via == cache_via::side || failed.via == cache_via::stash) o.via = failed.via;
  return o;
}

void board_runner::take_disk_jobs(board_events& out) {
  if (!tiers_->disk()) return;
  for (auto& j : tiers_->take_disk_jobs()) out.disk_jobs.push_back(std::move(j));
}

void board_runner::disk_written(const disk_job& job) {
  try {
    tiers_->disk_written(job);
  } catch (const std::exception& e) {
    log_warn() << "indexing a disk write failed (" << e.what() << ")";
  }
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

// Where the request starts: the tiers' offer restored into the engine, or a cold reset. A
// restore that fails for any reason is the cold path. Sets j.cache and j.prompt (the served
// prompt) and returns the offer taken.
resume_offer board_runner::start_state(board_job& j) {
  const std::int64_t t0 = steady_ns();
  std::vector<token_id> prompt(j.prompt.begin(), j.prompt.end());
  request_info info = info_of(j);
  info.side_slot_free = !side_slots_.empty();
  resume_offer o = tiers_->plan(prompt, info);
  active_ = o.via == cache_via::side ? side_slots_.front().get() : eng_.get();
  active_->abandon_prefill();  // a request cancelled inside its prefill left its queue
  if (o.source != cache_source::cold) {
    try {
      tiers_->restore(active_->cache_state(), o);
    } catch (const std::exception&) {
      o = cold_after_failure(o, std::move(prompt));
    }
  }
  if (o.source == cache_source::cold) active_->reset();
  j.prompt.assign(o.served.begin(), o.served.end());
  j.cache = x_cache_info{};
  j.cache.source = to_string(o.source);
  j.cache.resumed_at = static_cast<long>(o.at);
  j.cache.restore_ms = static_cast<double>(steady_ns() - t0) / 1e6;
  return o;
}

std::size_t board_runner::checkpoint_every() const {
  const disk_tier* d = static_cast<const cache_tiers&>(*tiers_).disk();
  return d ? d->options().checkpoint_tokens : 0;
}

// A generation cut short (a restart, a client gone) by an identical request: its durable
// checkpoint restored whole into slot 0 and the session resumed from it, the output so far
// replayed. False (nothing changed but the checkpoint's deletion when it failed its checks)
// when there is none to take.
bool board_runner::resume_checkpoint(board_job& j) {
  auto* d = tiers_->disk();
  if (!d || checkpoint_every() == 0) return false;
  const auto hit = d->store().find_checkpoint(job_key_);
  if (!hit) return false;
  const std::int64_t t0 = steady_ns();
  const std::vector<token_id> prompt(j.prompt.begin(), j.prompt.end());
  engine& e = *eng_;
  e.abandon_prefill();
  expected<checkpoint_meta> r = status::failure("not read");
  try {
    r = d->store().restore_checkpoint(*hit, prompt, e.cache_state());
  } catch (const std::exception& ex) {  // an allocation or a copy failed midway: slot 0 is unknown
    log_warn() << "restoring a generation checkpoint failed (" << ex.what() << ")";
    tiers_->clear(cache_tier::resident);
    e.reset();
    return false;
  }
  if (!r) {
    log_warn() << "a generation checkpoint failed its checks (" << r.error().error() << "); deleted";
    return false;
  }
  const checkpoint_meta& meta = *r;
  tiers_->expect(info_of(j));
  // The rows are the checkpoint's now: the resident prefix's are gone.
  tiers_->clear(cache_tier::resident);
  active_ = &e;
  j.seed = meta.seed;
  generation_job g = to_generation_job(j);
  g.resume_output.assign(meta.tokens.begin() + static_cast<long>(meta.prompt_tokens), meta.tokens.end());
  try {
    session_ = std::make_unique<generation_session>(e, std::move(g));
  } catch (const std::exception& ex) {
    log_warn() << "a generation checkpoint does not resume (" << ex.what() << ")";
    d->store().remove_checkpoints(job_key_);
    e.reset();
    return false;
  }
  resume_offer o;
  o.source = cache_source::checkpoint;
  o.at = prompt.size();
  o.served = prompt;
  o.exact = false;
  o.rows_replaced = true;
  guarded([&] { tiers_->begin(o, e.cache_state()); });
  d->generation_started(job_key_);
  j.cache = x_cache_info{};
  j.cache.source = to_string(cache_source::checkpoint);
  j.cache.resumed_at = static_cast<long>(e.length());
  j.cache.restore_ms = static_cast<double>(steady_ns() - t0) / 1e6;
  next_checkpoint_ = session_->output_ids().size() + checkpoint_every();
  return true;
}

void board_runner::take_early_cancel() {
  auto early = std::find(early_cancels_.begin(), early_cancels_.end(), job_.id);
  if (early == early_cancels_.end()) return;
  early_cancels_.erase(early);
  session_->cancel();
}

board_events board_runner::start(board_job j) {
  if (session_) return failed(j, 503, "the board is busy");
  const std::vector<std::int32_t> asked = j.prompt;
  job_key_ = checkpoint_every() > 0 ? generation_key(j) : 0;
  next_checkpoint_ = checkpoint_every();
  board_events out;
  out.sink = j.sink;
  out.step_again = true;
  if (resume_checkpoint(j)) {
    served_as_asked_ = true;
    source_ = cache_source::checkpoint;
  } else {
    resume_offer o = start_state(j);
    try {
      session_ = std::make_unique<generation_session>(*active_, to_generation_job(j));
    } catch (const std::exception& e) {
      if (o.source == cache_source::cold) return failed(j, 400, e.what());
      // The served prompt (an end alignment can lengthen it) did not fit: start cold. The
      // restore wrote sections (and, from the store, rows) the resident prefix does not know.
      o = cold_after_failure(o, std::vector<token_id>(asked.begin(), asked.end()));
      active_->reset();
      j.prompt = asked;
      j.cache = x_cache_info{};
      try {
        session_ = std::make_unique<generation_session>(*active_, to_generation_job(j));
      } catch (const std::exception& e2) {
        return failed(j, 400, e2.what());
      }
    }
    guarded([&] { tiers_->begin(o, active_->cache_state()); });
    j.cache.via = to_string(tiers_->running_via());
    served_as_asked_ = j.prompt == asked;
    source_ = o.source;
  }
  job_ = std::move(j);
  first_token_ns_ = 0;
  take_early_cancel();
  return out;
}

// Every --generation-checkpoint-tokens output tokens of a decode on slot 0: the whole state
// staged and written behind.
void board_runner::maybe_checkpoint(board_events& out) {
  const std::size_t every = checkpoint_every();
  // A served prompt the end alignment changed is not the one an identical request sends: its
  // checkpoint could never be found again.
  if (every == 0 || active_ != eng_.get() || !served_as_asked_ || !session_->checkpointable()) return;
  const auto& ids = session_->output_ids();
  if (ids.size() < next_checkpoint_) return;
  next_checkpoint_ = ids.size() + every;
  checkpoint_meta meta;
  meta.key_hash = job_key_;
  meta.seed = job_.seed;
  meta.seed_explicit = job_.seed_explicit;
  meta.prompt_tokens = job_.prompt.size();
  meta.tokens.assign(job_.prompt.begin(), job_.prompt.end());
  meta.tokens.insert(meta.tokens.end(), ids.begin(), ids.end());
  if (active_->length() + 1 != meta.tokens.size()) return;
  try {
    tiers_->disk()->stage_checkpoint(active_->cache_state(), meta);
  } catch (const std::exception& e) {
    log_warn() << "staging a generation checkpoint failed (" << e.what() << ")";
  }
  take_disk_jobs(out);
}

board_events board_runner::step() {
  board_events out;
  if (!session_) return out;
  out.sink = job_.sink;
  ++steps_;
  const bool was_prefilling = session_->prefilling();
  auto r = session_->step(decode_block_);
  engine& e = *active_;
  if (was_prefilling) {
    guarded([&] { tiers_->after_prefill_step(e.cache_state(), e.where()); });
    take_disk_jobs(out);
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
  engine& e = *active_;
  // A generation that ended (not one cut short) needs its checkpoints no more.
  if (checkpoint_every() > 0 && s.finish_reason() != "cancelled")
    tiers_->disk()->generation_finished(job_key_);
  // The tiers keep what this request leaves: the end anchor and the session snapshot, once the
  // whole prompt was forwarded (a request cancelled inside its prefill leaves its anchors only).
  if (e.length() >= job_.prompt.size()) {
    const std::vector<token_id> served(job_.prompt.begin(), job_.prompt.end());
    generation_outcome g;
    g.served = &served;
    g.output = &s.output_ids();
    g.hidden = s.hidden_spans();
    g.reasoning_end = s.reasoning_end();
    g.starts_in_reasoning = job_.starts_in_reasoning;
    g.rows = e.length();
    guarded([&] { tiers_->end_generation(e.cache_state(), e.where(), build_end_record(g)); });
  }
  guarded([&] { tiers_->finish(e.cache_state()); });
  take_disk_jobs(out);
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
}

void board_runner::cancel(const std::string& id) {
  if (session_ && job_.id == id) return session_->cancel();
  early_cancels_.push_back(id);
  if (early_cancels_.size() > 16) early_cancels_.pop_front();
}

std::optional<std::vector<cache_tier>> board_runner::clear(cache_tier tier) {
  if (!tiers_->has(tier)) return std::nullopt;
  return tiers_->clear(tier);
}

}  // namespace anchorage
