// The slot: its state built once, the run each request gets, and the calls handed to it.
#include "runtime/board/board_runner.hpp"

#include <algorithm>

#include "runtime/board/continuation_run.hpp"
#include "runtime/board/generation_run.hpp"
#include "runtime/board/idle_run.hpp"
#include "runtime/board/replayed_run.hpp"
#include "runtime/core/log.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/tiers/spill_keeper.hpp"

namespace anchorage {

board_runner::board_runner(std::shared_ptr<engine> eng, board_runner_options opts)
    : slot_(std::move(eng), opts) {}

speculative_counters board_runner::speculation() const {
  speculative_counters c = slot_.counters.speculation;
  if (run_) c.add(run_->speculation());  // an ended run's are counted already
  return c;
}

cache_stats board_runner::stats() const {
  cache_stats s = slot_.tiers->stats();
  if (slot_.staging) {
    s.disk_staging = slot_.staging->stats();
    // The slot's measured rate, published with the disk's stats (the conductor's disk offers use it).
    s.disk_staging->prefill_tokens_per_s = slot_.tiers->prefill_tokens_per_s();
    s.disk_staged_bytes = slot_.staging->staged_bytes();
  }
  return s;
}

compaction_stats board_runner::compaction() const {
  const slot_counters& n = slot_.counters;
  compaction_stats c;
  c.continuations = n.compactions_continued;
  c.as_sent = n.compactions_as_sent;
  c.prewritten = n.compactions_prewritten;
  c.worker = {n.idle_started, n.idle_preempted, n.idle_finished};
  return c;
}

board_runner::phase board_runner::current_phase() const {
  if (!run_) return phase::idle;
  switch (run_->current_phase()) {
    case run::phase::restoring:
      return phase::restoring;
    case run::phase::planning:
      return phase::planning;
    case run::phase::running:
      return phase::running;
    case run::phase::ended:
      break;
  }
  return phase::idle;
}

const std::string& board_runner::running_id() const {
  static const std::string none;
  return run_ ? run_->job().id : none;
}

void board_runner::disk_released(std::uint64_t bytes) {
  if (slot_.staging) slot_.staging->released(bytes);
}

bool board_runner::take_early_cancel(const std::string& id) {
  auto early = std::find(early_cancels_.begin(), early_cancels_.end(), id);
  if (early == early_cancels_.end()) return false;
  early_cancels_.erase(early);
  return true;
}

board_events board_runner::launch(std::unique_ptr<run> r) {
  board_events out = r->start();
  if (!r->ended()) run_ = std::move(r);
  return out;
}

board_events board_runner::ended_or_running(board_events out) {
  if (run_ && run_->ended()) run_.reset();
  return out;
}

// A compaction request (docs/COMPACTION.md) whose guard holds against a conversation this slot
// holds is served as that conversation's continuation; a summary the compaction worker prewrote
// for this session, end and turn answers it without the engine when the request's sampling
// allows. Otherwise it is served as sent.
std::unique_ptr<run> board_runner::compaction_run(board_job j, std::int64_t start_ns) {
  auto choice = choose_continuation(slot_, j);
  auto& n = slot_.counters;
  if (!choice) {
    ++n.compactions_as_sent;
    return std::make_unique<generation_run>(slot_, std::move(j), start_ns, std::nullopt);
  }
  j.compaction()->turn.assign(choice->turn.begin(), choice->turn.end());
  board_job c = continuation_job(std::move(j), choice->end_rows, slot_.capacity());
  if (choice->in_place && slot_.opts.prewrites) {
    const prewritten_summary* s =
        slot_.opts.prewrites->find(c.session_key, choice->end_rows, c.compaction()->turn);
    if (s && compaction_prewrites::answers(*s, c)) {
      try {
        auto r = std::make_unique<replayed_run>(slot_, c, start_ns, *s);
        ++n.compactions_prewritten;
        return r;
      } catch (const std::exception& ex) {
        // Not this request's output after all: served as a continuation instead.
        log_warn() << "a prewritten summary does not replay (" << ex.what() << ")";
      }
    }
  }
  ++n.compactions_continued;
  return std::make_unique<continuation_run>(slot_, std::move(c), start_ns, choice->in_place);
}

board_events board_runner::start(board_job j) {
  if (busy()) return failed_events(j, 503, "the board is busy");
  const std::int64_t start_ns = steady_ns();
  const bool cancelled = take_early_cancel(j.id);
  std::optional<response_key> key;
  if (slot_.responses) key = response_key_of(j, slot_.eng->layout().fingerprint);
  std::unique_ptr<run> r;
  if (key) {
    if (auto hit = slot_.responses->find(*key)) {
      try {
        r = std::make_unique<replayed_run>(slot_, j, start_ns, std::move(*hit));
      } catch (const std::exception& ex) {
        log_warn() << "a cached response does not replay (" << ex.what() << ")";
      }
    }
  }
  if (!r && j.compaction()) r = compaction_run(std::move(j), start_ns);
  if (!r) r = std::make_unique<generation_run>(slot_, std::move(j), start_ns, std::move(key));
  if (cancelled) r->cancel();
  return launch(std::move(r));
}

board_events board_runner::offered(disk_offer_reply reply) {
  if (!run_) return {};
  return ended_or_running(run_->offered(std::move(reply)));
}

board_events board_runner::restored(disk_read_reply reply) {
  if (!run_) return {};
  return ended_or_running(run_->restored(std::move(reply)));
}

board_events board_runner::planned(const disk_write_lines& lines) {
  if (!run_) return {};
  return ended_or_running(run_->planned(lines));
}

board_events board_runner::spill_fetched(spill_fetch_ptr f) {
  if (!run_) return {};
  return ended_or_running(run_->spill_fetched(std::move(f)));
}

board_events board_runner::encoded(vision_encode_ptr job) {
  if (!run_) return {};
  return ended_or_running(run_->encoded(std::move(job)));
}

board_events board_runner::step() {
  if (!run_) return {};
  return ended_or_running(run_->step());
}

std::optional<token_id> board_runner::batch_token() const {
  return run_ ? run_->batch_token() : std::nullopt;
}

board_events board_runner::step_forwarded() {
  if (!run_) throw std::logic_error("board_runner: no request to step");
  return ended_or_running(run_->step_forwarded());
}

std::vector<token_id> board_runner::batch_rows(std::size_t max_rows) {
  if (!run_) throw std::logic_error("board_runner: no request to step");
  return run_->batch_rows(max_rows);
}

board_events board_runner::step_rows() {
  if (!run_) throw std::logic_error("board_runner: no request to step");
  return ended_or_running(run_->step_rows());
}

void board_runner::cancel(const std::string& id) {
  if (run_ && run_->job().id == id) return run_->cancel();
  early_cancels_.push_back(id);
  if (early_cancels_.size() > 16) early_cancels_.pop_front();
}

std::optional<std::vector<cache_tier>> board_runner::clear(cache_tier tier) {
  if (!slot_.tiers->has(tier)) return std::nullopt;
  std::vector<cache_tier> done = slot_.tiers->clear(tier);
  if (slot_.staging && std::find(done.begin(), done.end(), cache_tier::disk) != done.end())
    slot_.staging->clear();
  if (run_) run_->cleared(done);
  return done;
}

bool board_runner::idle_candidate(const board_job& tmpl, std::size_t min_tokens) const {
  if (busy() || !slot_.end_opencode || !tmpl.compaction() || !slot_.tiers->options().enabled) return false;
  const resident_prefix& r = slot_.tiers->resident();
  const end_record* e = r.end();
  // Nothing above the end anchor: the guest's stash holds no row, so it cannot be refused (a
  // refused stash would make the run an ordinary request over the conversation's rows).
  if (!e || e->rows.empty() || e->rows.size() < min_tokens || r.tokens() != e->rows) return false;
  if (e->rows.size() + tmpl.compaction()->turn.size() + 2 >= slot_.capacity()) return false;
  return !slot_.opts.prewrites ||
         !slot_.opts.prewrites->has(slot_.end_session, e->rows, tmpl.compaction()->turn);
}

// The worker's continuation, started like a compaction request whose guard held: a guest from
// the end anchor (the tiers' plan finds it there; nothing is read from the disk).
board_events board_runner::start_idle(board_job tmpl) {
  if (!tmpl.idle()) throw std::logic_error("board_runner: idle work needs an idle_prewrite job");
  if (!idle_candidate(tmpl, 0)) throw std::logic_error("board_runner: no conversation to prewrite for");
  tmpl.session_key = slot_.end_session;
  tmpl.sink = sink_actor{};
  tmpl.id = "idle-compaction-" + std::to_string(slot_.opts.slot) + "-" +
            std::to_string(slot_.counters.idle_started + 1);
  std::vector<token_id> end_rows = slot_.tiers->resident().end()->rows;
  ++slot_.counters.idle_started;
  board_job c = continuation_job(std::move(tmpl), end_rows, slot_.capacity());
  board_events out =
      launch(std::make_unique<idle_run>(slot_, std::move(c), steady_ns(), std::move(end_rows)));
  if (!busy()) {  // it could not begin: nothing for the conductor or a client
    out.events.clear();
    out.done.reset();
    out.idle = idle_reply{};
    out.idle->what = idle_reply::outcome::refused;
  }
  return out;
}

board_events board_runner::preempt_idle() {
  if (!running_idle()) return {};
  return ended_or_running(static_cast<idle_run&>(*run_).preempt());
}

}  // namespace anchorage
