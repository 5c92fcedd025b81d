#include "runtime/board/request_queue.hpp"

#include <algorithm>

#include "runtime/compaction/compaction_plan.hpp"
#include "runtime/compaction/opencode_compaction.hpp"

namespace anchorage {

request_queue::request_queue(request_queue_options opts, bool disk, bool worker)
    : opts_(std::move(opts)), disk_(disk), worker_(worker) {
  book_ = std::make_unique<ledger>(opts_.ledger_path);
}

void request_queue::reject(queue_outbox& out, const request_envelope& env, api_error err) {
  counters_.on_rejected(err.status);
  stream_event ev;
  ev.what = stream_event::kind::failed;
  ev.id = env.id;
  ev.error = std::move(err);
  out.events.emplace_back(env.sink, std::move(ev));
}

void request_queue::dispatch(queue_outbox& out) {
  while (static_cast<int>(running_.size()) < std::max(1, opts_.slots) && !queue_.empty()) {
    board_job j = std::move(queue_.front());
    queue_.pop_front();
    running_.push_back(j.id);
    out.runs.push_back(std::move(j));
  }
}

// A compaction request's continuation and sampling, as the worker's next template.
board_job request_queue::worker_template_of(const board_job& j) const {
  board_job t = j;
  t.id.clear();
  t.prompt.clear();
  t.kind = idle_prewrite{*j.compaction()};
  t.sink = sink_actor{};
  t.sampling.max_tokens = opts_.compaction_max_tokens;
  return t;
}

queue_outbox request_queue::admit(const request_envelope& env) {
  queue_outbox out;
  const long waiting = static_cast<long>(queue_.size());
  if (static_cast<int>(running_.size()) >= opts_.slots && waiting >= opts_.max_queue) {
    reject(out, env,
           api_error{429, "rate_limit_error",
                     "the server is busy: " + std::to_string(waiting) +
                         " requests are already waiting; retry later",
                     ""});
    return out;
  }
  auto rendered = render_request(*env.request, opts_.limits, opts_.tok, ++sequence_);
  if (auto* err = std::get_if<api_error>(&rendered)) {
    reject(out, env, std::move(*err));
    return out;
  }
  board_job j = std::move(std::get<board_job>(rendered));
  if (opts_.compaction) {
    if (auto plan = plan_compaction(*env.request, opts_.limits.renderer, opts_.tok)) {
      j.client()->compaction = std::move(*plan);
      if (worker_) out.worker_template = worker_template_of(j);
    }
  }
  j.id = env.id;
  j.sink = env.sink;
  j.received_ns = env.received_ns;
  // Every tier is looked up on the board when it takes the job (the disk's offer too: the
  // board's run asks the disk for it, so one actor talks to the disk about a request).
  stream_event ev;
  ev.what = stream_event::kind::accepted;
  ev.id = env.id;
  ev.prompt_tokens = static_cast<long>(j.prompt.size());
  out.events.emplace_back(env.sink, std::move(ev));
  queue_.push_back(std::move(j));
  dispatch(out);
  return out;
}

queue_outbox request_queue::cancel(const std::string& id) {
  queue_outbox out;
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (it->id != id) continue;
    stream_event ev;
    ev.what = stream_event::kind::failed;
    ev.id = id;
    ev.error = api_error{499, "cancelled", "the client went away", ""};
    out.events.emplace_back(it->sink, std::move(ev));
    queue_.erase(it);
    dispatch(out);
    return out;
  }
  if (std::find(running_.begin(), running_.end(), id) != running_.end()) out.cancel_running = id;
  return out;
}

queue_outbox request_queue::finished(const ledger_entry& e) {
  queue_outbox out;
  if (e.finish_reason != run_finish::error) counters_.on_finished(e);
  book_->record(e);
  running_.erase(std::remove(running_.begin(), running_.end(), e.id), running_.end());
  dispatch(out);
  return out;
}

// The metrics' tiers: the board's, with the disk tier's made of the disk actor's stats and the
// board's staging.
void request_queue::publish_tiers() {
  cache_stats c = tiers_;
  if (disk_ && c.disk_staging)
    c.disk = disk_tier_stats{disk_stats_, *c.disk_staging, opts_.disk_min_tokens, opts_.checkpoint_tokens};
  counters_.set_tiers(std::move(c));
}

void request_queue::set_tiers(cache_stats tiers) {
  tiers_ = std::move(tiers);
  publish_tiers();
}

void request_queue::set_disk(disk_stats disk) {
  disk_stats_ = std::move(disk);
  publish_tiers();
}

// Every drain waiting is answered once the server is idle: nothing running or queued, and no
// staged disk write left unwritten (the board reports its staging after each write comes back,
// and its tiers before the ledger entry of the request that staged them). The planned stop's
// spill first (the board answers once it is written); with a disk tier, the disk actor last: it
// answers once no write is out (committed).
request_queue::drain_move request_queue::next_drain() {
  drain_asked_ = true;
  if (!running_.empty() || !queue_.empty() || tiers_.disk_staged_bytes != 0) return drain_move::wait;
  if (opts_.spill && spill_drain_ != spill_step::done) {
    if (spill_drain_ == spill_step::out) return drain_move::wait;
    spill_drain_ = spill_step::out;
    return drain_move::ask_spill;
  }
  if (!disk_) {
    drain_done_ = true;
    return drain_move::idle;
  }
  if (disk_drain_out_) return drain_move::wait;
  disk_drain_out_ = true;
  return drain_move::ask_disk;
}

void request_queue::spill_done(std::optional<spill_stop_reply> r) {
  spill_drain_ = spill_step::done;
  if (r) spilled_ = *r;
}

void request_queue::disk_drained(std::optional<disk_stats> d) {
  disk_drain_out_ = false;
  drain_done_ = true;
  if (d) set_disk(std::move(*d));
}

nlohmann::json request_queue::drain_progress() const {
  // The drain's steps in order; "disk_writes": the disk's drain asked for, or about to be.
  const char* step = drain_done_                            ? "done"
                     : !drain_asked_                        ? "serving"
                     : !running_.empty() || !queue_.empty() ? "requests"
                     : tiers_.disk_staged_bytes != 0        ? "staged_writes"
                     : spill_drain_ == spill_step::out      ? "spill"
                                                            : "disk_writes";
  return {{"step", step},
          {"running", running_.size()},
          {"waiting", queue_.size()},
          {"staged_bytes", tiers_.disk_staged_bytes},
          {"disk_writes_out", disk_ ? disk_stats_.writes_out : 0},
          {"spilled", spilled_}};
}

std::string request_queue::stats_text() const {
  nlohmann::json j;
  j["tiers"] = counters_.tiers();  // one object per cache tier, as last reported
  j["requests"] = book_->totals();
  j["queue"] = {{"waiting", queue_.size()},
                {"running", running_.size()},
                {"slots", opts_.slots},
                {"max_queue", opts_.max_queue}};
  j["slots"] = tiers_.slots;
  j["drain"] = drain_progress();
  nlohmann::json recent = nlohmann::json::array();
  for (const auto& e : book_->recent()) recent.push_back(to_json(e));
  j["ledger"] = std::move(recent);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string request_queue::metrics_text() const {
  return counters_.text(static_cast<long>(queue_.size()), static_cast<long>(running_.size()));
}

std::optional<board_job> request_queue::opencode_template() const {
  completion_request r;
  r.kind = request_kind::chat;
  chat_message sys;
  sys.role = "system";
  sys.content = opencode_compaction_system_text();
  chat_message user;
  user.role = "user";
  user.content = opencode_compaction_instructions();
  r.messages = {sys, user};
  r.max_tokens = opts_.compaction_max_tokens;
  auto rendered = render_request(r, opts_.limits, opts_.tok, 0);
  auto* j = std::get_if<board_job>(&rendered);
  auto plan = plan_continuation(sys.content, user.content, opts_.limits.renderer, opts_.tok);
  if (!j || !plan) return std::nullopt;
  plan->shape = "opencode-1.18.33";
  j->kind = idle_prewrite{std::move(*plan)};
  return std::move(*j);
}

}  // namespace anchorage
