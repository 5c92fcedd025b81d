#pragma once
// The persistent suffix store's messages (docs/SUFFIX_STORE.md, "In the server"):
//
//   board  -> writer (suffix_subscribe_atom, suffix_receiver) the board's start: the writer (the
//                                                           server's, spawned before the board)
//                                                           sends it the store's snapshot and
//                                                           counters at once, and its updates after
//   board  -> writer (suffix_add_atom, suffix_ids_ptr)       a finished request's ids (prompt, output)
//   board  -> writer (clear_atom) -> suffix_update          empty the store; the reply carries the
//                                                           empty snapshot and the counters
//   board  -> writer (suffix_stop_atom)                      the board's exit: write what came
//                                                           before, then quit
//   writer -> board  (suffix_update_atom, suffix_update)    after the open and each add: a new
//                                                           snapshot (a rebuild or a rewrite), or a
//                                                           delta of the ids appended, and the counters
//
// Local types only (shared pointers to immutable data), whitelisted like the others.
#include <cstdint>
#include <memory>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/replies_to.hpp>
#include <caf/type_id.hpp>
#include <caf/typed_actor.hpp>

#include "protocol/compaction_messages.hpp"
#include "protocol/suffix_stats.hpp"

namespace anchorage {

// runtime/suffix/suffix_snapshot.hpp: made by the writer, never changed once sent.
struct suffix_snapshot;
struct suffix_delta;

using suffix_ids_ptr = std::shared_ptr<const std::vector<std::int32_t>>;

struct suffix_update {
  std::shared_ptr<const suffix_snapshot> snapshot;  // null: keep the one installed
  std::shared_ptr<const suffix_delta> delta;        // null: nothing appended
  suffix_tier_stats stats;                          // the writer's (lookups and hits are the board's)
};

}  // namespace anchorage

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::suffix_ids_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::suffix_update)

CAF_BEGIN_TYPE_ID_BLOCK(anchorage_suffix, caf::id_block::anchorage_compaction::end)
CAF_ADD_TYPE_ID(anchorage_suffix, (anchorage::suffix_ids_ptr))
CAF_ADD_TYPE_ID(anchorage_suffix, (anchorage::suffix_update))
CAF_ADD_ATOM(anchorage_suffix, anchorage, suffix_add_atom, "suffixadd")
CAF_ADD_ATOM(anchorage_suffix, anchorage, suffix_update_atom, "suffixupd")
CAF_ADD_ATOM(anchorage_suffix, anchorage, suffix_stop_atom, "suffixstop")
CAF_ADD_ATOM(anchorage_suffix, anchorage, suffix_subscribe_atom, "suffixsub")
CAF_END_TYPE_ID_BLOCK(anchorage_suffix)

namespace anchorage {

// What the suffix store's writer tells its subscriber (the board): its snapshots, deltas and
// counters.
using suffix_receiver = caf::typed_actor<caf::reacts_to<suffix_update_atom, suffix_update>>;

}  // namespace anchorage

CAF_BEGIN_TYPE_ID_BLOCK(anchorage_suffix_handles, caf::id_block::anchorage_suffix::end)
CAF_ADD_TYPE_ID(anchorage_suffix_handles, (anchorage::suffix_receiver))
CAF_END_TYPE_ID_BLOCK(anchorage_suffix_handles)
