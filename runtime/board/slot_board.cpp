#include "runtime/board/slot_board.hpp"

#include "runtime/core/log.hpp"
#include "runtime/core/token_prefix.hpp"
#include "runtime/engine/engine_batch.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/compaction/compaction_plan.hpp"

#include <algorithm>
#include <stdexcept>

namespace anchorage {
namespace {

const char* phase_name(board_runner::phase p) {
  switch (p) {
    case board_runner::phase::idle:
      return "idle";
    case board_runner::phase::restoring:
      return "restoring";
    case board_runner::phase::planning:
      return "planning";
    case board_runner::phase::running:
      return "running";
  }
  return "?";
}

}  // namespace

slot_board::slot_board(std::vector<std::shared_ptr<engine>> engines, board_runner_options opts,
                       slot_policy policy)
    : budget_(opts.budget ? opts.budget : std::make_shared<memory_budget>()), policy_(policy) {
  if (engines.empty()) throw std::invalid_argument("slot_board: no slot");
  opts.budget = budget_;
  if (!opts.held) opts.held = std::make_shared<held_record>();
  spill_ = opts.spill;
  if (!opts.prewrites) opts.prewrites = std::make_shared<compaction_prewrites>();
  prewrites_ = opts.prewrites;
  if (!opts.responses && opts.cache.enabled && opts.cache.response_cache_bytes > 0)
    opts.responses = std::make_shared<response_cache>(opts.cache.response_cache_bytes);
  responses_ = opts.responses;
  vision_ = opts.vision;
  speculative_ = opts.speculative;
  if (opts.disk && engines.size() > 1) {
    // The staging pool is the server's, not each slot's.
    opts.disk->stage_bytes = std::max<std::uint64_t>(1, opts.disk->stage_bytes / engines.size());
  }
  for (auto& e : engines) {
    opts.slot = static_cast<int>(runners_.size());
    runners_.push_back(std::make_unique<board_runner>(std::move(e), opts));
  }
  wants_step_.assign(runners_.size(), false);
  last_used_.assign(runners_.size(), 0);
  if (opts.spill && opts.cache.enabled) read_back(*opts.spill);
}

// The conversations a planned stop left resident, newest first, each back on its slot (or the
// first free one), before the first request.
void slot_board::read_back(const spill_keeper& keeper) {
  struct wanted {
    std::uint64_t id;
    int slot;
    std::size_t tokens;
  };
  std::vector<wanted> all;
  for (const spill_manifest* m : keeper.resident_manifests())
    all.push_back({m->id, m->slot, m->tokens.size()});
  std::vector<bool> used(runners_.size(), false);
  for (const wanted& w : all) {
    std::size_t k = w.slot >= 0 && static_cast<std::size_t>(w.slot) < runners_.size() && !used[w.slot]
                        ? static_cast<std::size_t>(w.slot)
                        : static_cast<std::size_t>(std::find(used.begin(), used.end(), false) - used.begin());
    if (k >= runners_.size()) break;
    const std::int64_t t0 = steady_ns();
    if (!runners_[k]->read_back(w.id)) continue;
    used[k] = true;
    log_info() << "session spill: slot " << k << " holds its conversation again (" << w.tokens << " tokens, "
               << static_cast<double>(steady_ns() - t0) / 1e6 << " ms)";
  }
}

const std::string& slot_board::session_of(std::size_t k) const {
  return runners_[k]->tiers().device().resident_session();
}

std::size_t slot_board::idle_slots() const {
  std::size_t n = 0;
  for (const auto& r : runners_) n += r->busy() ? 0 : 1;
  return n - std::min(n, waiting_.size());
}

bool slot_board::waits_for_spill(const board_job& job) const {
  if (!spill_ || job.idle() || spill_->in_flight() == 0) return false;
  // A compaction request shares no token with its conversation: its session says.
  if (job.compaction()) return spill_->in_flight_session(job.session_key);
  std::size_t held = 0;  // the deepest any slot's rows or park share with the prompt
  for (const auto& r : runners_) {
    const resident_prefix& res = r->tiers().resident();
    held = std::max(held, common_prefix(res.tokens(), job.prompt));
    if (const saved_prompt* pk = res.saved(cache_via::park))
      held = std::max(held, common_prefix(pk->tokens, job.prompt));
  }
  return spill_->in_flight_share(job.prompt) > held;
}

std::optional<slot_events> slot_board::admit(board_job job) {
  if (waits_for_spill(job)) {
    spill_->count_wait();
    waiting_.push_back(std::move(job));
    return std::nullopt;
  }
  return start(std::move(job));
}

std::vector<slot_events> slot_board::spill_committed() {
  std::vector<slot_events> out;
  std::deque<board_job> still;
  for (auto& job : waiting_) {
    if (waits_for_spill(job)) {
      still.push_back(std::move(job));
    } else {
      out.push_back(start(std::move(job)));
    }
  }
  waiting_ = std::move(still);
  return out;
}

std::optional<slot_choice> slot_board::choose(const board_job& job) const {
  // A compaction request shares no token with the conversation it summarises: it goes to the
  // idle slot of its session, else to one whose conversation passes its guard, else to one whose
  // parked conversation does.
  if (const compaction_plan* plan = job.compaction()) {
    const tokenizer tok = job.tok ? *job.tok : tokenizer();
    for (int pass = 0; pass < 3; ++pass)
      for (std::size_t k = 0; k < runners_.size(); ++k) {
        if (runners_[k]->busy()) continue;
        const resident_prefix& r = runners_[k]->tiers().resident();
        const saved_prompt* pk = r.saved(cache_via::park);
        bool fits = false;
        if (pass == 0) fits = !job.session_key.empty() && session_of(k) == job.session_key;
        if (pass == 1) fits = r.end() && compaction_guard_holds(*plan, tok, r.end()->rows);
        if (pass == 2) fits = pk && pk->end && compaction_guard_holds(*plan, tok, pk->end->rows);
        if (fits) return slot_choice{k, slot_reason::shared, r.tokens().size()};
      }
  }
  std::vector<slot_view> views(runners_.size());
  for (std::size_t k = 0; k < runners_.size(); ++k) {
    views[k].busy = runners_[k]->busy();
    views[k].resident = &runners_[k]->tiers().resident().tokens();
    views[k].session_key = session_of(k);
    views[k].last_used = last_used_[k];
    if (views[k].busy) continue;
    if (const auto o = runners_[k]->tiers().resident().offer(job.prompt)) views[k].resumes = o->at;
  }
  return policy_.choose(job.session_key, views);
}

// tiers.speculative in the stats: the mode and, per drafter, its rounds, drafts and acceptance.
speculative_stats speculative_probe(const speculative_options& o, const speculative_counters& c) {
  auto drafter = [](const drafter_counters& d) {
    drafter_stats s;
    s.rounds = d.rounds;
    s.drafted = d.drafted;
    s.accepted = d.accepted;
    s.mean_accepted = d.rounds ? static_cast<double>(d.accepted) / static_cast<double>(d.rounds) : 0.0;
    return s;
  };
  speculative_stats s;
  s.mode = to_string(o.mode);
  s.draft_max = o.draft_max;
  s.rounds = c.rounds;
  s.plain_steps = c.plain_steps;
  s.pauses = c.pauses;
  s.drafters = {drafter(c.forced), drafter(c.lookup), drafter(c.store), drafter(c.mtp)};
  return s;
}

slot_events slot_board::start(board_job job) {
  const auto c = choose(job);
  if (!c) throw std::logic_error("slot_board: every slot is busy");
  const std::uint64_t used = last_used_[c->slot];
  last_used_[c->slot] = ++clock_;
  slot_events out = tagged(c->slot, runners_[c->slot]->start(std::move(job)));
  // An answer from the response cache leaves the slot's rows as they were.
  if (runners_[c->slot]->answering_from_response()) last_used_[c->slot] = used;
  return out;
}

bool slot_board::wants_step() const {
  for (std::size_t k = 0; k < runners_.size(); ++k)
    if (wants_step_[k] && runners_[k]->current_phase() == board_runner::phase::running) return true;
  return false;
}

std::vector<slot_events> slot_board::step() {
  const std::size_t n = runners_.size();
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = (next_ + i) % n;
    if (!wants_step_[k] || runners_[k]->current_phase() != board_runner::phase::running) continue;
    next_ = (k + 1) % n;
    if (runners_[k]->batch_token()) {
      auto batch = batched_decode();
      if (!batch.empty()) return batch;
    }
    wants_step_[k] = false;
    return {tagged(k, runners_[k]->step())};
  }
  return {};
}

// Every slot waiting for a plain decode token, on one weight set, decoded in one batch; empty
// when fewer than two are.
std::vector<slot_events> slot_board::batched_decode() {
  std::vector<std::size_t> slots;
  std::vector<engine*> engines;
  for (std::size_t k = 0; k < runners_.size(); ++k) {
    if (!wants_step_[k]) continue;
    const auto t = runners_[k]->batch_token();
    if (!t) continue;
    engine& e = runners_[k]->active();
    if (!engines.empty() && e.weights() != engines.front()->weights()) continue;
    slots.push_back(k);
    engines.push_back(&e);
  }
  if (slots.size() < 2) return {};
  // Each slot's verify round (its pending token and its drafts) within an even share of the
  // grid's rows, which the lead engine's activation buffers hold.
  const std::size_t share = static_cast<std::size_t>(engines.front()->config().grid) / slots.size();
  std::vector<std::vector<token_id>> rows;
  for (std::size_t k : slots) rows.push_back(runners_[k]->batch_rows(share));
  forward_batch(engines, rows);
  ++batched_steps_;
  std::vector<slot_events> out;
  for (std::size_t k : slots) {
    wants_step_[k] = false;
    out.push_back(tagged(k, runners_[k]->step_rows()));
  }
  return out;
}

slot_events slot_board::offered(std::size_t slot, disk_offer_reply reply) {
  return tagged(slot, runners_.at(slot)->offered(std::move(reply)));
}

slot_events slot_board::restored(std::size_t slot, disk_read_reply reply) {
  return tagged(slot, runners_.at(slot)->restored(std::move(reply)));
}

slot_events slot_board::planned(std::size_t slot, const disk_write_lines& lines) {
  return tagged(slot, runners_.at(slot)->planned(lines));
}

slot_events slot_board::spill_fetched(std::size_t slot, spill_fetch_ptr f) {
  return tagged(slot, runners_.at(slot)->spill_fetched(std::move(f)));
}

slot_events slot_board::encoded(std::size_t slot, vision_encode_ptr job) {
  return tagged(slot, runners_.at(slot)->encoded(std::move(job)));
}

void slot_board::disk_released(std::size_t slot, std::uint64_t bytes) {
  runners_.at(slot)->disk_released(bytes);
}

void slot_board::cancel(const std::string& id) {
  // The slot running it ends it; with none running it, every slot remembers the early cancel
  // (the job may still be on its way).
  if (auto k = slot_of(id)) return runners_[*k]->cancel(id);
  for (auto& r : runners_) r->cancel(id);
}

std::optional<std::vector<cache_tier>> slot_board::clear(cache_tier tier) {
  // The response cache is the slots' together (none when it is off).
  if (tier == cache_tier::response) {
    if (!responses_) return std::nullopt;
    responses_->clear();
    return std::vector<cache_tier>{cache_tier::response};
  }
  std::optional<std::vector<cache_tier>> done;
  for (auto& r : runners_) done = r->clear(tier);
  // A summary is of a conversation the resident tier held.
  if (done && (tier == cache_tier::resident || tier == cache_tier::all)) prewrites_->clear();
  if (done && tier == cache_tier::all && responses_) {
    responses_->clear();
    done->push_back(cache_tier::response);
  }
  // The vision encoder's output by digest goes with everything else (no tier of its own).
  if (done && tier == cache_tier::all && vision_) vision_->clear();
  return done;
}

void slot_board::set_limits(const cache_settings& s) {
  for (auto& r : runners_) r->tiers().set_limits(s.resident_bytes, s.store_bytes);
  if (spill_ && s.spill_budget_bytes) spill_->set_budget(*s.spill_budget_bytes);
  if (vision_ && s.image_cache_bytes) vision_->set_limit(*s.image_cache_bytes);
}

std::optional<slot_events> slot_board::start_idle(const board_job& tmpl, std::size_t min_tokens) {
  if (!waiting_.empty()) return std::nullopt;
  for (const auto& r : runners_)
    if (r->busy()) return std::nullopt;
  for (std::size_t k = 0; k < runners_.size(); ++k)
    if (runners_[k]->idle_candidate(tmpl, min_tokens)) return tagged(k, runners_[k]->start_idle(tmpl));
  return std::nullopt;
}

std::vector<slot_events> slot_board::preempt_idle() {
  std::vector<slot_events> out;
  for (std::size_t k = 0; k < runners_.size(); ++k)
    if (runners_[k]->running_idle()) {
      wants_step_[k] = false;
      out.push_back(tagged(k, runners_[k]->preempt_idle()));
    }
  return out;
}

bool slot_board::idle_running() const {
  for (const auto& r : runners_)
    if (r->running_idle()) return true;
  return false;
}

std::optional<std::size_t> slot_board::slot_of(const std::string& id) const {
  for (std::size_t k = 0; k < runners_.size(); ++k)
    if (runners_[k]->busy() && runners_[k]->running_id() == id) return k;
  return std::nullopt;
}

std::vector<spill_job_ptr> slot_board::spill_for_stop() {
  std::vector<spill_job_ptr> out;
  for (auto& r : runners_)
    for (auto& j : r->spill_for_stop()) out.push_back(std::move(j));
  return out;
}

cache_stats slot_board::stats() const {
  cache_stats total = runners_.front()->stats();
  total.compaction = runners_.front()->compaction();
  for (std::size_t k = 1; k < runners_.size(); ++k) {
    const cache_stats s = runners_[k]->stats();
    probe::merge_into(total.resident, s.resident);
    probe::merge_into(total.store, s.store);
    probe::merge_into(total.miss_reasons, s.miss_reasons);
    total.disk_staged_bytes += s.disk_staged_bytes;
    if (total.disk_staging && s.disk_staging) probe::merge_into(*total.disk_staging, *s.disk_staging);
    probe::merge_into(*total.compaction, runners_[k]->compaction());
  }
  total.compaction->prewrites_kept = prewrites_->size();
  if (responses_) total.response = responses_->stats();
  if (vision_) total.vision = vision_->stats();
  total.speculative = speculative_probe(speculative_, speculation());
  for (std::size_t k = 0; k < runners_.size(); ++k) {
    slot_stats st;
    st.slot = k;
    st.state = runners_[k]->running_idle() ? "compacting" : phase_name(runners_[k]->current_phase());
    const resident_prefix& r = runners_[k]->tiers().resident();
    st.resident_tokens = r.tokens().size();
    for (const auto& [pos, stamp] : r.anchors().positions()) st.anchors.push_back(pos);
    st.end_anchor = r.has_end_anchor() ? r.end_position() : 0;
    if (const auto p = runners_[k]->prefill_progress()) {
      st.prefill_total = p->prompt_tokens;
      st.prefill_done = p->done_tokens;
      st.prefill_cached = p->cached_tokens;
    }
    if (runners_[k]->busy()) st.request = runners_[k]->running_id();
    st.session_key = session_of(k);
    total.slots.push_back(std::move(st));
  }
  return total;
}

slot_events slot_board::tagged(std::size_t slot, board_events ev) {
  if (ev.step_again) wants_step_[slot] = true;
  ev.step_again = false;  // the owner asks wants_step()
  for (auto& e : ev.events)
    if (e.what == stream_event::kind::finished) {
      e.cache.slot = static_cast<long>(slot);
      e.ledger.slot = static_cast<int>(slot);
    }
  if (ev.done) ev.done->slot = static_cast<int>(slot);
  return slot_events{slot, std::move(ev)};
}

}  // namespace anchorage
