#include "actors/conductor_waits.hpp"

#include <utility>
#include <vector>

#include <caf/all.hpp>

namespace anchorage {
namespace {

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

// A promise queued in `waits` (with `args`, e.g. the count it waits for), then `answer` run.
template <class Waits, class... Args>
caf::result<bool> queued(conductor_ptr self, Waits& waits, void (*answer)(conductor_ptr), Args... args) {
  auto rp = self->make_response_promise<bool>();
  if constexpr (sizeof...(Args) == 0)
    waits.push_back(rp);
  else
    waits.emplace_back(args..., rp);
  answer(self);
  return rp;
}

}  // namespace

caf::result<bool> await_drain(conductor_ptr self) { return queued(self, self->state.drains, answer_drains); }
caf::result<bool> await_quiesce(conductor_ptr self) {
  return queued(self, self->state.quiesces, answer_quiesces);
}
caf::result<bool> await_start(conductor_ptr self, std::size_t running) {
  return queued(self, self->state.startings, answer_startings, running);
}
caf::result<bool> await_idle_runs(conductor_ptr self, long finished) {
  return queued(self, self->state.idle_waits, answer_idle_waits, finished);
}

void answer_startings(conductor_ptr self) {
  answer_reached(self->state.startings, self->state.queue->running());
}

void answer_idle_waits(conductor_ptr self) {
  const auto& c = self->state.queue->tiers().compaction;
  answer_reached(self->state.idle_waits, c ? c->worker.finished : 0L);
}

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

void answer_quiesces(conductor_ptr self) {
  auto& st = self->state;
  if (st.quiesces.empty() || !st.queue->quiet(false) || (st.disk && !st.disk_heard)) return;
  auto deliver = [waiting = std::move(st.quiesces)](bool ok) mutable {
    for (auto& rp : waiting) rp.deliver(ok);
  };
  st.quiesces.clear();
  // The board's quiesce, then the disk's drain: what the disk does behind its commits (the
  // remote pusher's copies) is done too. The disk sends its stats before that reply.
  self->request(st.board, caf::infinite, quiesce_atom::value)
      .then(
          [self, deliver](cache_stats& tiers) mutable {
            self->state.queue->set_tiers(std::move(tiers));
            if (!self->state.disk) return deliver(true);
            self->request(self->state.disk, caf::infinite, drain_atom::value)
                .then([deliver](disk_stats&) mutable { deliver(true); },
                      [deliver](caf::error&) mutable { deliver(false); });
          },
          [deliver](caf::error&) mutable { deliver(false); });
}

}  // namespace anchorage
