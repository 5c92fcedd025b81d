#include "actors/conductor.hpp"

#include "actors/conductor_waits.hpp"

#include <caf/all.hpp>

namespace anchorage {
namespace {

void send_all(conductor_ptr self, queue_outbox out) {
  auto& st = self->state;
  for (auto& [sink, ev] : out.events) self->send(sink, std::move(ev));
  for (auto& j : out.runs) self->send(st.board, run_atom::value, std::move(j));
  if (out.cancel_running)
    self->send<caf::message_priority::high>(st.board, cancel_atom::value, *out.cancel_running);
  if (out.worker_template && st.worker)
    self->send(st.worker, compaction_template_atom::value, std::move(*out.worker_template));
  answer_startings(self);
}

}  // namespace

conductor_actor::behavior_type conductor(conductor_ptr self, conductor_options opts,
                                         std::function<board_actor(done_receiver)> make_board) {
  auto& init = self->state;  // each handler below takes its own reference, `st`
  init.disk = opts.disk;
  if (init.disk) self->send(init.disk, stats_atom::value, caf::actor_cast<disk_stats_receiver>(self));
  const bool worker = opts.worker && opts.compaction;
  init.queue = std::make_unique<request_queue>(opts, static_cast<bool>(opts.disk), worker);
  init.board = make_board(caf::actor_cast<done_receiver>(self));
  self->link_to(init.board);
  if (worker) {
    init.worker = self->spawn(compaction_worker, *opts.worker, caf::actor_cast<conductor_actor>(self));
    self->link_to(init.worker);
    if (auto t = init.queue->opencode_template())
      self->send(init.worker, compaction_template_atom::value, std::move(*t));
  }
  return {
      [=](generate_atom, request_envelope& env) {
        if (self->state.worker) self->send(self->state.worker, activity_atom::value);
        send_all(self, self->state.queue->admit(env));
      },
      [=](cancel_atom, const std::string& id) { send_all(self, self->state.queue->cancel(id)); },
      [=](done_atom, const ledger_entry& e) {
        send_all(self, self->state.queue->finished(e));
        answer_drains(self);
        answer_quiesces(self);
      },
      [=](tiers_atom, cache_stats& tiers) {
        self->state.queue->set_tiers(std::move(tiers));
        answer_drains(self);
        answer_idle_waits(self);
      },
      [=](stats_atom, disk_stats& d) {
        self->state.queue->set_disk(std::move(d));
        self->state.disk_heard = true;
        answer_quiesces(self);
      },
      // Answered at once from what the board and the disk last sent: never waiting for a restore.
      [=](stats_atom) { return self->state.queue->stats_text(); },
      [=](metrics_atom) { return self->state.queue->metrics_text(); },
      [=](clear_atom, cache_tier tier) -> caf::result<clear_reply> {
        // The names are checked by the admin; the board owns the device tiers. A hold: the
        // worker waits for a quiet spell again.
        if (self->state.worker) self->send(self->state.worker, activity_atom::value);
        return self->delegate(self->state.board, clear_atom::value, tier);
      },
      // Idle work, only while nothing runs or waits (the board refuses too when a slot is busy).
      [=](idle_atom, idle_request& rq) -> caf::result<idle_reply> {
        auto& st = self->state;
        if (!st.queue->quiet(!st.drains.empty())) {
          idle_reply r;
          r.what = idle_reply::outcome::refused;
          return r;
        }
        return self->delegate(st.board, idle_atom::value, std::move(rq));
      },
      // The typed waits (actors/conductor_waits.hpp); whoever waits bounds the wait itself.
      [=](quiesce_atom) { return await_quiesce(self); },
      [=](started_atom, std::size_t n) { return await_start(self, n); },
      [=](idle_runs_atom, long n) { return await_idle_runs(self, n); },
      [=](drain_atom) { return await_drain(self); },
  };
}

}  // namespace anchorage
