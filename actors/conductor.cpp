#include "actors/conductor.hpp"

#include <caf/all.hpp>

namespace anchorage {
namespace {

using conductor_ptr = conductor_actor::stateful_pointer<conductor_state>;

void send_all(conductor_ptr self, queue_outbox out);

// Answers (true) each wait whose count `now` reaches, keeping the others.
template <class N>
void answer_reached(std::vector<std::pair<N, caf::typed_response_promise<bool>>>& waits, N now) {
  for (auto it = waits.begin(); it != waits.end();) {
    if (now < it->first) {
      ++it;
      continue;
    }
    it->second.deliver(true);
    it = waits.erase(it);
  }
}

// Every wait for a start that the requests running now satisfy (started_atom).
void answer_startings(conductor_ptr self) {
  answer_reached(self->state.startings, self->state.queue->running());
}

// Every wait for idle runs that the board's last stats satisfy (idle_runs_atom).
void answer_idle_waits(conductor_ptr self) {
  const auto& c = self->state.queue->tiers().compaction;
  answer_reached(self->state.idle_waits, c ? c->worker.finished : 0L);
}

// The disk's offer for a queued request; the request is handed over once it came.
void ask_offer(conductor_ptr self, std::string id, disk_offer_request rq) {
  auto got = [self, id](std::optional<disk_offer> offer, std::size_t foreign_line) {
    send_all(self, self->state.queue->offer_came(id, std::move(offer), foreign_line));
  };
  self->request(self->state.disk, caf::infinite, disk_offer_atom::value, std::move(rq))
      .then([got](disk_offer_reply& r) { got(std::move(r.offer), r.foreign_line); },
            [got](caf::error&) { got(std::nullopt, 0); });
}

void send_all(conductor_ptr self, queue_outbox out) {
  auto& st = self->state;
  for (auto& [sink, ev] : out.events) self->send(sink, std::move(ev));
  for (auto& [id, rq] : out.offers) ask_offer(self, std::move(id), std::move(rq));
  for (auto& j : out.runs) self->send(st.board, run_atom::value, std::move(j));
  if (out.cancel_running)
    self->send<caf::message_priority::high>(st.board, cancel_atom::value, *out.cancel_running);
  if (out.worker_template && st.worker)
    self->send(st.worker, compaction_template_atom::value, std::move(*out.worker_template));
  answer_startings(self);
}

// Every drain waiting is answered once the queue says the server is idle; the planned stop's
// spill and the disk's drain are asked for on the way (request_queue::next_drain).
void answer_drains(conductor_ptr self) {
  auto& st = self->state;
  if (st.drains.empty()) return;
  auto deliver = [self](bool idle) {
    for (auto& rp : self->state.drains) rp.deliver(idle);
    self->state.drains.clear();
  };
  using move = request_queue::drain_move;
  switch (st.queue->next_drain()) {
    case move::wait:
      return;
    case move::idle:
      return deliver(true);
    case move::ask_spill:
      self->request(st.board, caf::infinite, spill_atom::value)
          .then(
              [self](spill_stop_reply& r) {
                self->state.queue->spill_done(r);
                answer_drains(self);
              },
              [self](caf::error&) {
                self->state.queue->spill_done(std::nullopt);
                answer_drains(self);
              });
      return;
    case move::ask_disk:
      self->request(st.disk, caf::infinite, drain_atom::value)
          .then(
              [self, deliver](disk_stats& d) {
                self->state.queue->disk_drained(std::move(d));
                deliver(true);
              },
              [self, deliver](caf::error&) {
                self->state.queue->disk_drained(std::nullopt);
                deliver(false);
              });
      return;
  }
}

// Every quiesce waiting is answered once the queue is quiet, the disk's first stats came (it
// scans its folder first), and the board is quiet (its slots idle and its writes committed; its
// stats come with the answer). The disk's stats are fresh by then: it sends them before it
// answers each of the board's writes.
void answer_quiesces(conductor_ptr self) {
  auto& st = self->state;
  if (st.quiesces.empty() || !st.queue->quiet(false) || (st.disk && !st.disk_heard)) return;
  auto deliver = [waiting = std::move(st.quiesces)](bool ok) mutable {
    for (auto& rp : waiting) rp.deliver(ok);
  };
  st.quiesces.clear();
  self->request(st.board, caf::infinite, quiesce_atom::value)
      .then(
          [self, deliver](cache_stats& tiers) mutable {
            self->state.queue->set_tiers(std::move(tiers));
            deliver(true);
          },
          [deliver](caf::error&) mutable { deliver(false); });
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
      [=](quiesce_atom) -> caf::result<bool> {
        auto rp = self->make_response_promise<bool>();
        self->state.quiesces.push_back(rp);
        answer_quiesces(self);
        return rp;
      },
      [=](started_atom, std::size_t n) -> caf::result<bool> {
        auto rp = self->make_response_promise<bool>();
        self->state.startings.emplace_back(n, rp);
        answer_startings(self);
        return rp;
      },
      [=](idle_runs_atom, long n) -> caf::result<bool> {
        auto rp = self->make_response_promise<bool>();
        self->state.idle_waits.emplace_back(n, rp);
        answer_idle_waits(self);
        return rp;
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
