#include "actors/conductor.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>

#include "runtime/disk/disk_stats_json.hpp"
#include "runtime/text/compaction_plan.hpp"
#include "runtime/text/opencode_compaction.hpp"

namespace anchorage {
namespace {

using conductor_ptr = conductor_actor::stateful_pointer<conductor_state>;

bool awaiting(const conductor_state& st, const std::string& id) {
  return std::find(st.awaiting_offer.begin(), st.awaiting_offer.end(), id) != st.awaiting_offer.end();
}

void forget_offer(conductor_state& st, const std::string& id) {
  st.awaiting_offer.erase(std::remove(st.awaiting_offer.begin(), st.awaiting_offer.end(), id),
                          st.awaiting_offer.end());
}

// The metrics' tiers: the board's, with the wire's disk object made of the disk actor's stats
// and the board's staging.
void publish_tiers(conductor_ptr self) {
  auto& st = self->state;
  cache_stats c = st.tiers;
  if (st.opts.disk && c.disk_staging) {
    c.disk = disk_stats_json(st.disk, *c.disk_staging, st.opts.disk_min_tokens, st.opts.checkpoint_tokens);
    c.disk["enabled"] = true;
  }
  st.counters.set_tiers(c);
}

void reject(conductor_actor::stateful_pointer<conductor_state> self, const request_envelope& env,
            api_error err) {
  self->state.counters.on_rejected(err.status);
  stream_event ev;
  ev.what = stream_event::kind::failed;
  ev.id = env.id;
  ev.error = std::move(err);
  self->send(env.sink, std::move(ev));
}

void dispatch(conductor_actor::stateful_pointer<conductor_state> self) {
  auto& st = self->state;
  while (static_cast<int>(st.running.size()) < std::max(1, st.opts.slots) && !st.queue.empty() &&
         !awaiting(st, st.queue.front().id)) {
    board_job j = std::move(st.queue.front());
    st.queue.pop_front();
    st.running.push_back(j.id);
    self->send(st.board, run_atom::value, std::move(j));
  }
}

// Every drain waiting is answered once the server is idle: nothing running or queued, and no
// staged disk write left unwritten (the board reports its staging after each write comes back,
// and its tiers before the ledger entry of the request that staged them).
// With a disk tier, the disk actor is asked last: it answers once no write is out (committed).
void answer_drains(conductor_actor::stateful_pointer<conductor_state> self) {
  auto& st = self->state;
  if (st.drains.empty() || !st.running.empty() || !st.queue.empty() || st.disk_staged_bytes != 0) return;
  auto deliver = [self](bool idle) {
    for (auto& rp : self->state.drains) rp.deliver(idle);
    self->state.drains.clear();
  };
  // The planned stop's spill first (the board answers once it is written), then the disk.
  using step = conductor_state::spill_step;
  if (st.opts.spill && st.spill_drain != step::done) {
    if (st.spill_drain == step::out) return;
    st.spill_drain = step::out;
    self->request(st.board, caf::infinite, spill_atom::value)
        .then(
            [self](spill_stop_reply& r) {
              self->state.spill_drain = step::done;
              self->state.spilled = r;
              answer_drains(self);
            },
            [self](caf::error&) {
              self->state.spill_drain = step::done;
              answer_drains(self);
            });
    return;
  }
  if (!st.opts.disk) return deliver(true);
  if (st.disk_drain_out) return;
  st.disk_drain_out = true;
  self->request(st.opts.disk, caf::infinite, drain_atom::value)
      .then(
          [self, deliver](disk_stats& d) {
            self->state.disk_drain_out = false;
            self->state.disk = d;
            deliver(true);
          },
          [self, deliver](caf::error&) {
            self->state.disk_drain_out = false;
            deliver(false);
          });
}

std::string stats_text(conductor_state& st) {
  nlohmann::json j;
  j["tiers"] = st.counters.tiers();  // one object per cache tier, as last reported
  j["requests"] = st.book->totals();
  j["queue"] = {{"waiting", st.queue.size()},
                {"running", st.running.size()},
                {"slots", st.opts.slots},
                {"max_queue", st.opts.max_queue}};
  j["slots"] = st.tiers.slots;
  nlohmann::json recent = nlohmann::json::array();
  for (const auto& e : st.book->recent()) recent.push_back(to_json(e));
  j["ledger"] = std::move(recent);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A stats or metrics answer made once the disk actor's own stats are fresh: at once without a
// disk tier; with what was last known when the disk actor does not answer within
// disk_stats_wait (it is busy with a read: the stats never wait for a restore).
constexpr std::chrono::milliseconds disk_stats_wait{100};

template <class F>
caf::result<std::string> with_disk_stats(conductor_ptr self, F make) {
  auto& st = self->state;
  if (!st.opts.disk) return make();
  auto rp = self->make_response_promise<std::string>();
  self->request(st.opts.disk, disk_stats_wait, stats_atom::value)
      .then(
          [self, rp, make](disk_stats& d) mutable {
            self->state.disk = std::move(d);
            publish_tiers(self);
            rp.deliver(make());
          },
          [rp, make](caf::error&) mutable { rp.deliver(make()); });
  return rp;
}

// The disk's offer for a queued request, asked for now; the request is handed over once it came.
void ask_disk_offer(conductor_actor::stateful_pointer<conductor_state> self, const board_job& j) {
  auto& st = self->state;
  if (!st.opts.disk) return;
  disk_offer_request rq;
  rq.prompt = j.prompt;
  rq.prefill_tokens_per_s = st.tiers.disk_staging ? st.tiers.disk_staging->prefill_tokens_per_s : 0;
  st.awaiting_offer.push_back(j.id);
  auto got = [self, id = j.id](std::optional<disk_offer> offer) {
    auto& s = self->state;
    if (!awaiting(s, id)) return;  // cancelled meanwhile
    forget_offer(s, id);
    for (auto& q : s.queue)
      if (q.id == id) q.disk = std::move(offer);
    dispatch(self);
  };
  self->request(st.opts.disk, caf::infinite, disk_offer_atom::value, std::move(rq))
      .then([got](disk_offer_reply& r) { got(std::move(r.offer)); },
            [got](caf::error&) { got(std::nullopt); });
}

// What the worker prewrites from before any compaction request came: opencode 1.18.33's
// compaction agent and instructions, rendered as a compaction request of it would be.
std::optional<board_job> opencode_template(const conductor_options& o) {
  completion_request r;
  r.kind = request_kind::chat;
  chat_message sys;
  sys.role = "system";
  sys.content = opencode_compaction_system_text();
  chat_message user;
  user.role = "user";
  user.content = opencode_compaction_instructions();
  r.messages = {sys, user};
  r.max_tokens = o.compaction_max_tokens;
  auto rendered = render_request(r, o.limits, o.tok, 0);
  auto* j = std::get_if<board_job>(&rendered);
  auto plan = plan_continuation(sys.content, user.content, o.limits.renderer, o.tok);
  if (!j || !plan) return std::nullopt;
  plan->shape = "opencode-1.18.33";
  j->compaction = std::move(*plan);
  return std::move(*j);
}

// A compaction request's continuation and sampling, as the worker's next template.
void teach_worker(conductor_ptr self, const board_job& j) {
  auto& st = self->state;
  if (!st.worker || !j.compaction) return;
  board_job t = j;
  t.id.clear();
  t.prompt.clear();
  t.disk.reset();
  t.sink = sink_actor{};
  t.max_tokens = st.opts.compaction_max_tokens;
  self->send(st.worker, compaction_template_atom::value, std::move(t));
}

}  // namespace

conductor_actor::behavior_type conductor(conductor_actor::stateful_pointer<conductor_state> self,
                                         conductor_options opts,
                                         std::function<board_actor(done_receiver)> make_board) {
  auto& init = self->state;  // each handler below takes its own reference, `st`
  init.opts = std::move(opts);
  init.book = std::make_unique<ledger>(init.opts.ledger_path);
  init.board = make_board(caf::actor_cast<done_receiver>(self));
  self->link_to(init.board);
  if (init.opts.worker && init.opts.compaction) {
    init.worker = self->spawn(compaction_worker, *init.opts.worker, caf::actor_cast<conductor_actor>(self));
    self->link_to(init.worker);
    if (auto t = opencode_template(init.opts))
      self->send(init.worker, compaction_template_atom::value, std::move(*t));
  }
  return {
      [=](generate_atom, request_envelope& env) {
        auto& st = self->state;
        if (st.worker) self->send(st.worker, activity_atom::value);
        const long waiting = static_cast<long>(st.queue.size());
        if (static_cast<int>(st.running.size()) >= st.opts.slots && waiting >= st.opts.max_queue)
          return reject(self, env,
                        api_error{429, "rate_limit_error",
                                  "the server is busy: " + std::to_string(waiting) +
                                      " requests are already waiting; retry later",
                                  ""});
        auto rendered = render_request(*env.request, st.opts.limits, st.opts.tok, ++st.sequence);
        if (auto* err = std::get_if<api_error>(&rendered)) return reject(self, env, std::move(*err));
        board_job j = std::move(std::get<board_job>(rendered));
        if (st.opts.compaction) {
          if (auto plan = plan_compaction(*env.request, st.opts.limits.renderer, st.opts.tok)) {
            j.compaction = std::move(*plan);
            teach_worker(self, j);
          }
        }
        j.id = env.id;
        j.sink = env.sink;
        j.received_ns = env.received_ns;
        // The device tiers are looked up on the board when it takes the job: the resident rows
        // change with every request, so their offer made now would be stale by then. The
        // disk's index is its own: its offer is asked for now.
        stream_event ev;
        ev.what = stream_event::kind::accepted;
        ev.id = env.id;
        ev.prompt_tokens = static_cast<long>(j.prompt.size());
        self->send(env.sink, std::move(ev));
        ask_disk_offer(self, j);
        st.queue.push_back(std::move(j));
        dispatch(self);
      },
      [=](cancel_atom, const std::string& id) {
        auto& st = self->state;
        for (auto it = st.queue.begin(); it != st.queue.end(); ++it) {
          if (it->id != id) continue;
          stream_event ev;
          ev.what = stream_event::kind::failed;
          ev.id = id;
          ev.error = api_error{499, "cancelled", "the client went away", ""};
          self->send(it->sink, std::move(ev));
          st.queue.erase(it);
          forget_offer(st, id);
          dispatch(self);
          return;
        }
        if (std::find(st.running.begin(), st.running.end(), id) != st.running.end())
          self->send<caf::message_priority::high>(st.board, cancel_atom::value, id);
      },
      [=](done_atom, const ledger_entry& e) {
        auto& st = self->state;
        if (e.finish_reason != "error") st.counters.on_finished(e);
        st.book->record(e);
        st.running.erase(std::remove(st.running.begin(), st.running.end(), e.id), st.running.end());
        dispatch(self);
        answer_drains(self);
      },
      [=](tiers_atom, const cache_stats& tiers) {
        auto& st = self->state;
        st.disk_staged_bytes = tiers.disk_staged_bytes;
        st.tiers = tiers;
        publish_tiers(self);
        answer_drains(self);
        if (!st.opts.disk) return;
        // The disk actor's side of the same change (a write committed, a clear).
        self->request(st.opts.disk, caf::infinite, stats_atom::value)
            .then(
                [self](disk_stats& d) {
                  self->state.disk = std::move(d);
                  publish_tiers(self);
                },
                [](caf::error&) {});
      },
      [=](stats_atom) -> caf::result<std::string> {
        return with_disk_stats(self, [self] { return stats_text(self->state); });
      },
      [=](metrics_atom) -> caf::result<std::string> {
        return with_disk_stats(self, [self] {
          auto& st = self->state;
          return st.counters.text(static_cast<long>(st.queue.size()), static_cast<long>(st.running.size()));
        });
      },
      [=](clear_atom, cache_tier tier) -> caf::result<clear_reply> {
        // The names are checked by the admin; the board owns the device tiers. A hold: the
        // worker waits for a quiet spell again.
        if (self->state.worker) self->send(self->state.worker, activity_atom::value);
        return self->delegate(self->state.board, clear_atom::value, tier);
      },
      // Idle work, only while nothing runs or waits (the board refuses too when a slot is busy).
      [=](idle_atom, idle_request& rq) -> caf::result<idle_reply> {
        auto& st = self->state;
        if (!st.running.empty() || !st.queue.empty() || !st.drains.empty()) {
          idle_reply r;
          r.what = idle_reply::outcome::refused;
          return r;
        }
        return self->delegate(st.board, idle_atom::value, std::move(rq));
      },
      // Answered (true) once idle; whoever asks bounds the wait with its request's timeout.
      [=](drain_atom) -> caf::result<bool> {
        auto rp = self->make_response_promise<bool>();
        self->state.drains.push_back(rp);
        answer_drains(self);
        return rp;
      },
  };
}

}  // namespace anchorage
