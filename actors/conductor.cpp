#include "actors/conductor.hpp"

#include "actors/conductor_waits.hpp"
#include "protocol/error_code.hpp"

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
      // The live limits: the disk's to the disk actor, then the rest to the board; answered once
      // both applied them (each sent its stats first).
      [=](settings_atom, const cache_settings& s) -> caf::result<bool> {
        auto& st = self->state;
        if (!st.disk || !s.any_disk()) return self->delegate(st.board, settings_atom::value, s);
        auto rp = self->make_response_promise<bool>();
        self->request(st.disk, caf::infinite, settings_atom::value, s)
            .then(
                [self, rp, s](disk_stats&) mutable {
                  self->request(self->state.board, caf::infinite, settings_atom::value, s)
                      .then([rp](bool ok) mutable { rp.deliver(ok); },
                            [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
                },
                [rp](caf::error& e) mutable { rp.deliver(std::move(e)); });
        return rp;
      },
      // The disk's anchors for the operator: the disk actor's to list (none: no disk tier).
      [=](disk_entries_atom, std::size_t limit) -> caf::result<disk_entry_list> {
        if (!self->state.disk) return caf::make_error(error_code::unknown_tier);
        return self->delegate(self->state.disk, disk_entries_atom::value, limit);
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
