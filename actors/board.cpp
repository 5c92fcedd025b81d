#include "actors/board.hpp"

#include <caf/all.hpp>

#include "actors/board_outbox.hpp"

namespace anchorage {

board_actor::behavior_type board(board_ptr self, std::shared_ptr<engine> eng, board_options opts,
                                 done_receiver conductor) {
  auto& init = self->state;
  board_runner_options ro;
  ro.decode_block = opts.decode_block;
  ro.speculative = opts.speculative;
  ro.cache = opts.cache;
  ro.disk = opts.disk;
  ro.spill = opts.spill;
  ro.vision = opts.vision;
  init.spill_writer = opts.spill_writer;
  init.spill_reader = opts.spill_reader;
  init.vision_encoder = opts.vision_encoder;
  if (opts.suffix_writer) {
    init.suffix_view = std::make_shared<suffix_lookup>();
    ro.lookup = init.suffix_view;
    init.suffix_stats = suffix_tier_stats{};
    init.suffix_stats->path = opts.suffix_path;
    // The board is its writer's one client: it subscribes now (the writer sends what the store
    // holds) and, at its exit, tells it to stop after the adds already sent, so a planned stop
    // writes them all (the actor system's shutdown waits for it).
    init.suffix_writer = opts.suffix_writer;
    self->send(init.suffix_writer, suffix_subscribe_atom::value, caf::actor_cast<suffix_receiver>(self));
    self->attach_functor(
        [w = init.suffix_writer](const caf::error&) { caf::anon_send(w, suffix_stop_atom::value); });
  } else if (!opts.suffix_off.empty()) {
    init.suffix_stats = suffix_tier_stats{};
    init.suffix_stats->refused = opts.suffix_off;
  }
  std::vector<std::shared_ptr<engine>> engines = {std::move(eng)};
  for (auto& e : opts.slots) engines.push_back(std::move(e));
  init.slots = std::make_unique<slot_board>(std::move(engines), std::move(ro));
  if (init.slots->has_disk()) init.disk = opts.disk_handle;
  init.conductor = std::move(conductor);
  send_tiers(self);  // the conductor's stats show the tiers (empty) before the first request
  return {
      [=](run_atom, board_job& j) {
        preempt_idle(self);
        if (auto ev = self->state.slots->admit(std::move(j))) send_all(self, std::move(*ev));
      },
      [=](idle_atom, idle_request& rq) -> caf::result<idle_reply> {
        auto& st = self->state;
        if (st.idle) return idle_reply{idle_reply::outcome::refused, {}, 0, 0, 0};
        auto started = st.slots->start_idle(rq.job, rq.min_tokens);
        if (!started) {
          idle_reply r;
          r.what = st.slots->idle_slots() == st.slots->size() ? idle_reply::outcome::none
                                                              : idle_reply::outcome::refused;
          return r;
        }
        if (started->events.idle) return *started->events.idle;  // it could not begin
        auto rp = self->make_response_promise<idle_reply>();
        st.idle = rp;
        send_all(self, std::move(*started));
        return rp;
      },
      [=](step_atom) {
        auto& st = self->state;
        st.step_queued = false;
        if (!st.slots->wants_step()) return;
        ++st.steps;
        for (auto& ev : st.slots->step()) send_all(self, std::move(ev));
      },
      [=](cancel_atom, const std::string& id) { self->state.slots->cancel(id); },
      [=](suffix_update_atom, suffix_update& u) {
        install_suffix(self, u);
        send_tiers(self);
      },
      // A planned stop (the conductor asks once nothing runs), and a clear by name.
      [=](spill_atom) -> caf::result<spill_stop_reply> { return spill_for_stop(self); },
      [=](clear_atom, cache_tier tier) -> caf::result<clear_reply> { return clear_tier(self, tier); },
      // An operator's live limits: what they no longer allow is evicted before the reply, and the
      // conductor hears the stats they left first.
      [=](settings_atom, const cache_settings& s) {
        self->state.slots->set_limits(s);
        send_tiers(self);
        return true;
      },
      [=](quiesce_atom) -> caf::result<cache_stats> {
        auto rp = self->make_response_promise<cache_stats>();
        self->state.quiesces.push_back(rp);
        answer_quiesces(self);
        return rp;
      },
  };
}

}  // namespace anchorage
