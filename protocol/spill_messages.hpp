#pragma once
// The session spill's messages (docs/SPILL.md):
//
//   board     -> spill writer (spill_write_atom, spill_job_ptr) -> spill_job_ptr (results filled)
//   board     -> spill reader (spill_read_atom, spill_fetch_ptr) -> spill_fetch_ptr (read and
//                                                             verified, or the failure named)
//   conductor -> board        (spill_atom) -> spill_stop_reply  a planned stop's spill, answered
//                                                             once every job is written and indexed
//
// Local types only (shared pointers), whitelisted like the others.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/type_id.hpp>

#include "protocol/disk_messages.hpp"
#include "protocol/probe.hpp"

namespace anchorage {

// A staged spill (runtime/tiers/spill_keeper.hpp), handed from the board to the spill writer and
// back; only its holder at the time touches it.
struct spill_job;
using spill_job_ptr = std::shared_ptr<spill_job>;

// A planned read of one spilled conversation (runtime/spill/spill_store.hpp), handed from the
// board to the spill reader and back with its outcome; only its holder at the time touches it.
struct spill_fetch;
using spill_fetch_ptr = std::shared_ptr<spill_fetch>;

// What a planned stop's spill did.
struct spill_stop_reply {
  std::size_t conversations = 0;  // spills staged
  std::size_t written = 0;        // written and indexed
  std::size_t failed = 0;         // a file failed (the previous spill of that conversation stays)
  std::uint64_t bytes = 0;        // bytes written
  double seconds = 0;             // from the first staging to the last commit

  static constexpr auto fields() {
    using s = spill_stop_reply;
    return std::make_tuple(probe::sum("conversations", &s::conversations), probe::sum("written", &s::written),
                           probe::sum("failed", &s::failed), probe::sum("bytes", &s::bytes),
                           probe::keep("seconds", &s::seconds));
  }
};

}  // namespace anchorage

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::spill_job_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::spill_stop_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::spill_fetch_ptr)

CAF_BEGIN_TYPE_ID_BLOCK(anchorage_spill, caf::id_block::anchorage_disk::end)
CAF_ADD_TYPE_ID(anchorage_spill, (anchorage::spill_job_ptr))
CAF_ADD_TYPE_ID(anchorage_spill, (anchorage::spill_stop_reply))
CAF_ADD_TYPE_ID(anchorage_spill, (anchorage::spill_fetch_ptr))
CAF_ADD_ATOM(anchorage_spill, anchorage, spill_write_atom, "spillwrite")
CAF_ADD_ATOM(anchorage_spill, anchorage, spill_atom, "spill")
CAF_ADD_ATOM(anchorage_spill, anchorage, spill_read_atom, "spillread")
CAF_END_TYPE_ID_BLOCK(anchorage_spill)
