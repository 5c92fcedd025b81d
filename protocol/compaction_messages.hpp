#pragma once
// The compaction worker's messages (docs/COMPACTION.md, "The compaction worker"):
//
//   conductor -> worker    (activity_atom)                  a request came (or an admin hold)
//   conductor -> worker    (compaction_template_atom, board_job)  what to prewrite from: the
//                          continuation turn and sampling of the latest compaction request
//   worker    -> itself    (tick_atom, uint64)              the idle time since activity n passed
//   worker    -> conductor (idle_atom, idle_request) -> idle_reply   idle work, answered when it
//                          ends (finished, preempted) or at once (nothing to do, refused)
//   conductor -> board     the same, delegated when nothing runs or waits
#include <cstddef>
#include <cstdint>
#include <string>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/type_id.hpp>

#include "protocol/board_job.hpp"
#include "protocol/messages.hpp"
#include "protocol/spill_messages.hpp"

namespace anchorage {

// Idle work: the continuation `job` (a board_job of kind idle_prewrite, with its compaction plan) for a
// slot whose resident conversation is an opencode session of at least `min_tokens` tokens up to
// its end anchor, and has no summary prewritten for this turn yet.
struct idle_request {
  board_job job;
  std::size_t min_tokens = 32768;
};

struct idle_reply {
  enum class outcome {
    none,       // no slot holds a conversation to prewrite for
    refused,    // the board was busy (a request runs or waits)
    finished,   // the summary is written and kept
    preempted,  // a request or a hold stopped it at a chunk or block boundary
  };
  outcome what = outcome::none;
  std::string session_key;     // the conversation's
  std::size_t end_tokens = 0;  // its rows up to the end anchor
  long output_tokens = 0;      // the summary's tokens (so far, when preempted)
  long steps = 0;              // chunks and blocks the run took
};

constexpr const char* to_string(idle_reply::outcome o) {
  switch (o) {
    case idle_reply::outcome::none:
      return "none";
    case idle_reply::outcome::refused:
      return "refused";
    case idle_reply::outcome::finished:
      return "finished";
    case idle_reply::outcome::preempted:
      return "preempted";
  }
  return "?";
}

}  // namespace anchorage

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::idle_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::idle_reply)

CAF_BEGIN_TYPE_ID_BLOCK(anchorage_compaction, caf::id_block::anchorage_spill::end)
CAF_ADD_TYPE_ID(anchorage_compaction, (anchorage::idle_request))
CAF_ADD_TYPE_ID(anchorage_compaction, (anchorage::idle_reply))
CAF_ADD_ATOM(anchorage_compaction, anchorage, idle_atom, "idle")
CAF_ADD_ATOM(anchorage_compaction, anchorage, activity_atom, "activity")
CAF_ADD_ATOM(anchorage_compaction, anchorage, compaction_template_atom, "cmptmpl")
CAF_ADD_ATOM(anchorage_compaction, anchorage, tick_atom, "tick")
CAF_END_TYPE_ID_BLOCK(anchorage_compaction)
