#pragma once
// The board actor's side of its messages (actors/board_outbox.cpp): internal to actors/board.
#include <functional>

#include <caf/typed_actor.hpp>

#include "actors/board.hpp"

namespace anchorage {

using board_ptr = board_actor::stateful_pointer<board_state>;

// What a slot asked for: the disk's messages, the spill's reads and writes, the stats, the
// suffix store's ids, the ledger entry before the sink's events (so the conductor knows a request
// ended before its client does), and one step message whenever some slot waits for a step.
void send_all(board_ptr self, slot_events tagged);
// The tiers' stats (the slots' and the suffix store's) now, and sent to the conductor.
cache_stats tiers_now(board_ptr self);
void send_tiers(board_ptr self);
// The quiesces waiting, answered with tiers_now() once the slots are quiet, no spill write or
// disk submission is out and the suffix store's writer has written every add sent before.
void answer_quiesces(board_ptr self);
// What the suffix store's writer sent, into the view the drafters read.
void install_suffix(board_ptr self, const suffix_update& u);
// A request or a hold needs the board: idle work stops first, between two of its steps.
void preempt_idle(board_ptr self);
// A planned stop's spill, answered once every conversation is written and indexed.
caf::result<spill_stop_reply> spill_for_stop(board_ptr self);
// A clear by name, answered once the disk actor and the suffix writer cleared theirs.
caf::result<clear_reply> clear_tier(board_ptr self, cache_tier tier);

}  // namespace anchorage
