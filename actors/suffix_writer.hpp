#pragma once
#include <cstdint>
#include <memory>

#include <caf/stateful_actor.hpp>

#include "protocol/interfaces.hpp"
#include "runtime/suffix/suffix_feed.hpp"

namespace anchorage {

// The persistent suffix store's writer (docs/SUFFIX_STORE.md, "In the server"): it owns the
// store (opened when it starts, one log line: path, ids, bytes, torn bytes cut, or refused and
// why) and appends each finished request's ids on its own thread, where the batched suffix-array
// rebuilds and a forget's atomic rewrite run too; the board never waits for it. After the open
// and after each add it tells its subscriber (the board) what the board's view needs (a new
// snapshot or a delta) and its counters: at once when `board` is given at spawn (tests), else
// when the board subscribes at its start. Spawned detached by the server beside the other
// writers (a rebuild can take seconds); it quits on stop, which the board sends at its exit
// after its last add.
struct suffix_writer_state {
  std::unique_ptr<suffix_feed> feed;
  suffix_receiver board;
  static inline const char* name = "suffix-writer";
};

suffix_writer_actor::behavior_type suffix_writer(
    suffix_writer_actor::stateful_pointer<suffix_writer_state> self, suffix_store_options options,
    suffix_receiver board);

// The counters the stats route shows, from the store's (lookups and hits are the view's).
suffix_tier_stats suffix_writer_stats(const suffix_store& store);

}  // namespace anchorage
