#include "actors/suffix_writer.hpp"

#include <caf/all.hpp>

#include "runtime/core/log.hpp"

namespace anchorage {

suffix_tier_stats suffix_writer_stats(const suffix_store& store) {
  const suffix_store_stats s = store.stats();
  suffix_tier_stats t;
  t.enabled = store.is_open();
  t.path = store.path();
  if (!store.is_open()) t.refused = store.why().error();
  t.bytes = s.bytes;
  t.ids = s.ids;
  t.segments = s.segments;
  t.appended = s.ids_appended;
  t.skipped = s.ids_skipped;
  t.adds = s.adds;
  t.forgets = s.forgets;
  t.torn_bytes_cut = s.torn_bytes_cut;
  t.rebuilds = s.rebuilds;
  t.indexed_ids = s.indexed_ids;
  t.write_failures = s.write_failures;
  return t;
}

suffix_writer_actor::behavior_type suffix_writer(
    suffix_writer_actor::stateful_pointer<suffix_writer_state> self, suffix_store_options options,
    suffix_receiver board) {
  auto& st = self->state;
  st.board = std::move(board);
  st.feed = std::make_unique<suffix_feed>(std::move(options));
  const suffix_store& store = st.feed->store();
  if (store.is_open()) {
    const suffix_store_stats s = store.stats();
    log_info() << "suffix store: " << s.ids << " ids, " << s.segments << " segments, " << s.bytes
               << " bytes in " << store.path() << " (" << s.torn_bytes_cut << " torn bytes cut)";
  } else {
    log_info() << "suffix store: refused, " << store.why().error() << "; drafting without it";
  }
  // What the store holds, to the subscriber: at once when it was given, else when it subscribes.
  auto tell_all = [self] {
    auto& s = self->state;
    suffix_update u;
    u.snapshot = s.feed->snapshot();
    u.stats = suffix_writer_stats(s.feed->store());
    self->send(s.board, suffix_update_atom::value, std::move(u));
  };
  if (st.board) tell_all();
  return {
      [self, tell_all](suffix_subscribe_atom, suffix_receiver to) {
        self->state.board = std::move(to);
        tell_all();
      },
      [self](suffix_add_atom, const suffix_ids_ptr& ids) {
        auto& s = self->state;
        if (!ids) return;
        suffix_feed_out out = s.feed->add(*ids);
        suffix_update u;
        u.snapshot = std::move(out.snapshot);
        u.delta = std::move(out.delta);
        u.stats = suffix_writer_stats(s.feed->store());
        if (s.board) self->send(s.board, suffix_update_atom::value, std::move(u));
      },
      // After every add sent before it (one sender, so in order): nothing queued is lost.
      [self](suffix_stop_atom) { self->quit(); },
      // Every add before it is written and its update sent: the answer comes after them.
      [](quiesce_atom) { return true; },
      [self](clear_atom) -> suffix_update {
        auto& s = self->state;
        bool ok = false;
        suffix_feed_out out = s.feed->clear(&ok);
        if (!ok && s.feed->store().is_open()) log_info() << "suffix store: the clear failed to write";
        suffix_update u;
        u.snapshot = std::move(out.snapshot);
        u.stats = suffix_writer_stats(s.feed->store());
        return u;
      },
  };
}

}  // namespace anchorage
