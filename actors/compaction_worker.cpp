#include "actors/compaction_worker.hpp"

#include <caf/all.hpp>

namespace anchorage {
namespace {

using worker_ptr = compaction_worker_actor::stateful_pointer<compaction_worker_state>;

void arm(worker_ptr self) {
  self->delayed_send(self, self->state.opts.idle, tick_atom::value, self->state.activity);
}

void ask(worker_ptr self, std::uint64_t at) {
  auto& st = self->state;
  if (at != st.activity || st.asking || !st.tmpl) return;
  st.asking = true;
  ++st.asked;
  idle_request rq;
  rq.job = *st.tmpl;
  rq.min_tokens = st.opts.min_tokens;
  self->request(st.conductor, caf::infinite, idle_atom::value, std::move(rq))
      .then(
          [self, at](idle_reply& r) {
            auto& s = self->state;
            s.asking = false;
            if (r.what == idle_reply::outcome::preempted) ++s.preempted;
            // Busy when it asked (a request ran past the quiet spell): ask again after another
            // quiet spell, unless a request came meanwhile (its activity re-armed the timer).
            if (r.what == idle_reply::outcome::refused && at == s.activity) return arm(self);
            if (r.what != idle_reply::outcome::finished) return;
            ++s.finished;
            if (at == s.activity) self->send(self, tick_atom::value, at);  // another slot's turn
          },
          [self](caf::error&) { self->state.asking = false; });
}

}  // namespace

compaction_worker_actor::behavior_type compaction_worker(worker_ptr self, compaction_worker_options opts,
                                                         conductor_actor conductor) {
  self->state.opts = opts;
  self->state.conductor = std::move(conductor);
  arm(self);  // a conversation read back at the start is prewritten for after a quiet spell too
  return {
      [=](activity_atom) {
        ++self->state.activity;
        arm(self);
      },
      [=](compaction_template_atom, board_job& j) { self->state.tmpl = std::move(j); },
      [=](tick_atom, std::uint64_t at) { ask(self, at); },
  };
}

}  // namespace anchorage
