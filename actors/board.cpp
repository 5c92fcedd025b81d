#include "actors/board.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <iostream>

#include "actors/disk_writer.hpp"
#include "protocol/error_code.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/text/end_record_builder.hpp"
#include "runtime/generation/generation_key.hpp"
#include "runtime/io/uring_env.hpp"

namespace anchorage {
namespace {

using board_ptr = board_actor::stateful_pointer<board_state>;

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

// A tier call that throws (an allocation that failed mid-copy) is a refusal: the request goes
// on, and the resident prefix, whose state is then uncertain, starts over.
template <class F>
void guarded(board_ptr self, F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    auto& st = self->state;
    // A side slot holds none of slot 0's state: only slot 0's failures drop the resident prefix.
    if (st.active != st.eng.get()) {
      std::cerr << "anchorage: a cache tier failed on a side slot (" << e.what() << ")\n";
      return;
    }
    std::cerr << "anchorage: a cache tier failed (" << e.what() << "); the resident prefix is dropped\n";
    st.tiers->clear(cache_tier::resident);
  }
}

// The cold path after a restore failed: a side slot's failure touched nothing of slot 0's;
// on slot 0 what the restore wrote is unknown, so the resident rows are no longer trusted.
resume_offer cold_after_failure(board_ptr self, const resume_offer& failed, std::vector<token_id> prompt) {
  auto& st = self->state;
  if (failed.via != cache_via::side) st.tiers->clear(cache_tier::resident);
  resume_offer o;
  o.served = std::move(prompt);
  if (failed.via == cache_via::side || failed.via == cache_via::stash) o.via = failed.via;
  return o;
}

void send_tiers(board_ptr self) {
  auto& st = self->state;
  self->send(st.conductor, tiers_atom::value, st.tiers->stats().dump());
}

// Hands the writes the tiers staged to the disk writer; each comes back (between two steps) to be
// indexed. Nothing waits for it.
void flush_disk(board_ptr self) {
  auto& st = self->state;
  if (!st.tiers->disk()) return;
  for (auto& job : st.tiers->take_disk_jobs()) {
    auto written = [self](disk_job_ptr j) {
      auto& s = self->state;
      try {
        if (j) s.tiers->disk_written(*j);
      } catch (const std::exception& e) {
        std::cerr << "anchorage: indexing a disk write failed (" << e.what() << ")\n";
      }
      send_tiers(self);
    };
    if (!st.writer) {  // no writer: write now
      job->results = execute_disk_write(*st.disk_env, st.eng->layout(), job->write, job->plan);
      written(job);
      continue;
    }
    self->request(st.writer, caf::infinite, disk_write_atom::value, job)
        .then(written, [self, job](caf::error&) {
          job->results.clear();  // the writer is gone: nothing was indexed, the marks are released
          self->state.tiers->disk_written(*job);
        });
  }
}

void fail(board_ptr self, const board_job& j, int status, const std::string& msg) {
  stream_event ev;
  ev.what = stream_event::kind::failed;
  ev.id = j.id;
  ev.error = api_error{status, status >= 500 ? "server_error" : "invalid_request_error", msg, ""};
  self->send(j.sink, std::move(ev));
  ledger_entry e;
  e.id = j.id;
  e.route = j.route;
  e.session_key = j.session_key;
  e.prompt_tokens = static_cast<long>(j.prompt.size());
  e.finish_reason = "error";
  self->send(self->state.conductor, done_atom::value, std::move(e));
}

// Where the request starts: the tiers' offer restored into the engine, or a cold reset. A
// restore that fails for any reason is the cold path. Sets j.cache and j.prompt (the served
// prompt) and returns the offer taken.
resume_offer start_state(board_ptr self, board_job& j) {
  auto& st = self->state;
  const std::int64_t t0 = steady_ns();
  std::vector<token_id> prompt(j.prompt.begin(), j.prompt.end());
  request_info info;
  info.session_key = j.session_key;
  info.max_tokens = static_cast<std::size_t>(std::max(0L, j.max_tokens));
  if (j.reasoning_budget >= 0) info.hidden_reserve = reasoning_close_length();
  info.side_slot_free = !st.side_slots.empty();
  if (j.user_start >= 0) info.user_start = static_cast<std::size_t>(j.user_start);
  resume_offer o = st.tiers->plan(prompt, info);
  st.active = o.via == cache_via::side ? st.side_slots.front().get() : st.eng.get();
  st.active->abandon_prefill();  // a request cancelled inside its prefill left its queue
  if (o.source != cache_source::cold) {
    try {
      st.tiers->restore(st.active->cache_state(), o);
    } catch (const std::exception&) {
      o = cold_after_failure(self, o, std::move(prompt));
    }
  }
  if (o.source == cache_source::cold) st.active->reset();
  j.prompt.assign(o.served.begin(), o.served.end());
  j.cache = x_cache_info{};
  j.cache.source = to_string(o.source);
  j.cache.resumed_at = static_cast<long>(o.at);
  j.cache.restore_ms = static_cast<double>(steady_ns() - t0) / 1e6;
  return o;
}

std::size_t checkpoint_every(board_ptr self) {
  auto* d = self->state.tiers->disk();
  return d ? d->options().checkpoint_tokens : 0;
}

// A generation cut short (a restart, a client gone) by an identical request: its durable
// checkpoint restored whole into slot 0 and the session resumed from it, the output so far
// replayed. False (nothing changed but the checkpoint's deletion when it failed its checks)
// when there is none to take.
bool resume_checkpoint(board_ptr self, board_job& j) {
  auto& st = self->state;
  auto* d = st.tiers->disk();
  if (!d || checkpoint_every(self) == 0) return false;
  const auto hit = d->store().find_checkpoint(st.job_key);
  if (!hit) return false;
  const std::int64_t t0 = steady_ns();
  const std::vector<token_id> prompt(j.prompt.begin(), j.prompt.end());
  engine& e = *st.eng;
  e.abandon_prefill();
  checkpoint_meta meta;
  disk_store::restore_result r;
  try {
    r = d->store().restore_checkpoint(*hit, prompt, e.cache_state(), meta);
  } catch (const std::exception& ex) {  // an allocation or a copy failed midway: slot 0 is unknown
    std::cerr << "anchorage: restoring a generation checkpoint failed (" << ex.what() << ")\n";
    st.tiers->clear(cache_tier::resident);
    e.reset();
    return false;
  }
  if (!r.ok) {
    std::cerr << "anchorage: a generation checkpoint failed its checks (" << r.error << "); deleted\n";
    return false;
  }
  request_info info;
  info.session_key = j.session_key;
  if (j.user_start >= 0) info.user_start = static_cast<std::size_t>(j.user_start);
  st.tiers->expect(info);
  // The rows are the checkpoint's now: the resident prefix's are gone.
  st.tiers->clear(cache_tier::resident);
  st.active = &e;
  j.seed = meta.seed;
  generation_job g = to_generation_job(j);
  g.resume_output.assign(meta.tokens.begin() + static_cast<long>(meta.prompt_tokens), meta.tokens.end());
  try {
    st.session = std::make_unique<generation_session>(e, std::move(g));
  } catch (const std::exception& ex) {
    std::cerr << "anchorage: a generation checkpoint does not resume (" << ex.what() << ")\n";
    d->store().remove_checkpoints(st.job_key);
    e.reset();
    return false;
  }
  resume_offer o;
  o.source = cache_source::checkpoint;
  o.at = prompt.size();
  o.served = prompt;
  o.exact = false;
  o.rows_replaced = true;
  guarded(self, [&] { st.tiers->begin(o, e.cache_state()); });
  d->generation_started(st.job_key);
  j.cache = x_cache_info{};
  j.cache.source = to_string(cache_source::checkpoint);
  j.cache.resumed_at = static_cast<long>(e.length());
  j.cache.restore_ms = static_cast<double>(steady_ns() - t0) / 1e6;
  st.next_checkpoint = st.session->output_ids().size() + checkpoint_every(self);
  return true;
}

// Every --generation-checkpoint-tokens output tokens of a decode on slot 0: the whole state
// staged and written behind.
void maybe_checkpoint(board_ptr self) {
  auto& st = self->state;
  const std::size_t every = checkpoint_every(self);
  // A served prompt the end alignment changed is not the one an identical request sends: its
  // checkpoint could never be found again.
  if (every == 0 || st.active != st.eng.get() || !st.served_as_asked || !st.session->checkpointable()) return;
  const auto& ids = st.session->output_ids();
  if (ids.size() < st.next_checkpoint) return;
  st.next_checkpoint = ids.size() + every;
  checkpoint_meta meta;
  meta.key_hash = st.job_key;
  meta.seed = st.job.seed;
  meta.seed_explicit = st.job.seed_explicit;
  meta.prompt_tokens = st.job.prompt.size();
  meta.tokens.assign(st.job.prompt.begin(), st.job.prompt.end());
  meta.tokens.insert(meta.tokens.end(), ids.begin(), ids.end());
  if (st.active->length() + 1 != meta.tokens.size()) return;
  try {
    st.tiers->disk()->stage_checkpoint(st.active->cache_state(), meta);
  } catch (const std::exception& e) {
    std::cerr << "anchorage: staging a generation checkpoint failed (" << e.what() << ")\n";
  }
  flush_disk(self);
}

void finish(board_ptr self) {
  auto& st = self->state;
  const auto& s = *st.session;
  engine& e = *st.active;
  // A generation that ended (not one cut short) needs its checkpoints no more.
  if (checkpoint_every(self) > 0 && s.finish_reason() != "cancelled") st.tiers->disk()->generation_finished(st.job_key);
  // The tiers keep what this request leaves: the end anchor and the session snapshot, once the
  // whole prompt was forwarded (a request cancelled inside its prefill leaves its anchors only).
  if (e.length() >= st.job.prompt.size()) {
    const std::vector<token_id> served(st.job.prompt.begin(), st.job.prompt.end());
    generation_outcome g;
    g.served = &served;
    g.output = &s.output_ids();
    g.hidden = s.hidden_spans();
    g.reasoning_end = s.reasoning_end();
    g.starts_in_reasoning = st.job.starts_in_reasoning;
    g.rows = e.length();
    guarded(self, [&] { st.tiers->end_generation(e.cache_state(), e.where(), build_end_record(g)); });
  }
  guarded(self, [&] { st.tiers->finish(e.cache_state()); });
  flush_disk(self);
  send_tiers(self);
  const auto now = steady_ns();
  stream_event ev;
  ev.what = stream_event::kind::finished;
  ev.id = st.job.id;
  ev.finish_reason = s.finish_reason();
  ev.output = s.output();
  ev.prompt_tokens = s.prompt_tokens();
  ev.cache = st.job.cache;
  ev.cache.prefilled_tokens = s.prefilled_tokens();
  const std::int64_t first = st.first_token_ns ? st.first_token_ns : now;
  ev.cache.ttft_ms = static_cast<double>(first - st.job.received_ns) / 1e6;
  ev.usage = usage_info{s.prompt_tokens(), s.output_tokens(), s.prompt_tokens() - s.prefilled_tokens()};
  auto& l = ev.ledger;
  l.id = st.job.id;
  l.session_key = st.job.session_key;
  l.route = st.job.route;
  l.prompt_tokens = s.prompt_tokens();
  l.source = st.source;
  l.resumed_at = ev.cache.resumed_at;
  l.prefilled = s.prefilled_tokens();
  l.restore_ms = ev.cache.restore_ms;
  l.ttft_ms = ev.cache.ttft_ms;
  l.total_ms = static_cast<double>(now - st.job.received_ns) / 1e6;
  l.output_tokens = s.output_tokens();
  l.finish_reason = s.finish_reason();
  l.seed = st.job.seed;
  self->send(st.conductor, done_atom::value, l);
  self->send(st.job.sink, std::move(ev));
  st.session.reset();
  st.job = board_job{};
}

}  // namespace

board_actor::behavior_type board(board_ptr self, std::shared_ptr<engine> eng, board_options opts,
                                 done_receiver conductor) {
  self->state.eng = std::move(eng);
  self->state.decode_block = opts.decode_block;
  self->state.tiers = std::make_unique<cache_tiers>(opts.cache, self->state.eng->where());
  if (opts.disk && opts.cache.enabled) {
    auto& st = self->state;
    st.disk_env = opts.disk_env ? opts.disk_env : std::make_shared<uring_env>();
    st.clock = std::make_unique<system_eviction_clock>();
    auto tier = std::make_unique<disk_tier>(*st.disk_env, st.eng->layout(), *st.clock, *opts.disk);
    const disk_scan_report r = tier->start();
    std::cerr << "anchorage: disk tier in " << tier->store().folder() << ": " << r.indexed << " files indexed, "
              << r.tmp_reaped << " unfinished writes reaped, " << r.foreign_swept << " of another engine swept, "
              << r.damaged_removed << " damaged removed\n";
    st.tiers->attach_disk(std::move(tier));
    st.writer = self->spawn<caf::linked>(disk_writer, st.eng->layout(),
                                          opts.writer_env ? opts.writer_env : std::make_shared<uring_env>());
  }
  self->state.side_slots = std::move(opts.side_slots);
  self->state.active = self->state.eng.get();
  self->state.conductor = std::move(conductor);
  send_tiers(self);  // the conductor's stats show the tiers (empty) before the first request
  return {
      [=](run_atom, board_job& j) {
        auto& st = self->state;
        if (st.session) return fail(self, j, 503, "the board is busy");
        const std::vector<std::int32_t> asked = j.prompt;
        st.job_key = checkpoint_every(self) > 0 ? generation_key(j) : 0;
        st.next_checkpoint = checkpoint_every(self);
        auto take_early_cancel = [&st] {
          auto early = std::find(st.early_cancels.begin(), st.early_cancels.end(), st.job.id);
          if (early == st.early_cancels.end()) return;
          st.early_cancels.erase(early);
          st.session->cancel();
        };
        if (resume_checkpoint(self, j)) {
          st.served_as_asked = true;
          st.source = cache_source::checkpoint;
          st.job = std::move(j);
          st.first_token_ns = 0;
          take_early_cancel();
          self->send(self, step_atom::value);
          return;
        }
        resume_offer o = start_state(self, j);
        try {
          st.session = std::make_unique<generation_session>(*st.active, to_generation_job(j));
        } catch (const std::exception& e) {
          if (o.source == cache_source::cold) return fail(self, j, 400, e.what());
          // The served prompt (an end alignment can lengthen it) did not fit: start cold. The
          // restore wrote sections (and, from the store, rows) the resident prefix does not know.
          o = cold_after_failure(self, o, std::vector<token_id>(asked.begin(), asked.end()));
          st.active->reset();
          j.prompt = asked;
          j.cache = x_cache_info{};
          try {
            st.session = std::make_unique<generation_session>(*st.active, to_generation_job(j));
          } catch (const std::exception& e2) {
            return fail(self, j, 400, e2.what());
          }
        }
        guarded(self, [&] { st.tiers->begin(o, st.active->cache_state()); });
        j.cache.via = to_string(st.tiers->running_via());
        st.served_as_asked = j.prompt == asked;
        st.source = o.source;
        st.job = std::move(j);
        st.first_token_ns = 0;
        take_early_cancel();
        self->send(self, step_atom::value);
      },
      [=](step_atom) {
        auto& st = self->state;
        if (!st.session) return;
        ++st.steps;
        const bool was_prefilling = st.session->prefilling();
        auto r = st.session->step(st.decode_block);
        engine& e = *st.active;
        if (was_prefilling) {
          guarded(self, [&] { st.tiers->after_prefill_step(e.cache_state(), e.where()); });
          flush_disk(self);
        }
        if (st.session->prefilling() || r.prefill_finished) {
          stream_event ev;
          ev.what = stream_event::kind::progress;
          ev.id = st.job.id;
          ev.prompt_tokens = st.session->prompt_tokens();
          ev.done_tokens = static_cast<long>(e.length());
          self->send(st.job.sink, std::move(ev));
        }
        if (r.tokens > 0 && st.first_token_ns == 0) st.first_token_ns = steady_ns();
        if (r.tokens > 0 && !st.session->done()) maybe_checkpoint(self);
        if (!r.deltas.empty()) {
          stream_event ev;
          ev.what = stream_event::kind::delta;
          ev.id = st.job.id;
          ev.deltas = std::move(r.deltas);
          self->send(st.job.sink, std::move(ev));
        }
        if (st.session->done()) return finish(self);
        self->send(self, step_atom::value);
      },
      [=](cancel_atom, const std::string& id) {
        auto& st = self->state;
        if (st.session && st.job.id == id) return st.session->cancel();
        st.early_cancels.push_back(id);
        if (st.early_cancels.size() > 16) st.early_cancels.pop_front();
      },
      [=](clear_atom, cache_tier tier) -> caf::result<std::string> {
        auto& st = self->state;
        // A tier this server does not have (the disk without --cache-dir) is the client's error.
        if (!st.tiers->has(tier)) return caf::make_error(error_code::unknown_tier);
        nlohmann::json j = {{"cleared", st.tiers->clear(tier)}, {"tier", tier}};
        send_tiers(self);
        return j.dump();
      },
  };
}

}  // namespace anchorage
