#pragma once
// The disk tier actor's vocabulary (actors/disk.hpp, runtime/disk/disk_service.hpp): its own CAF
// type-id block, after protocol/messages.hpp's.
//
//   board     -> disk  (disk_offer_atom, disk_offer_request) -> disk_offer_reply   high priority
//   board     -> disk  (disk_read_atom, disk_read_request) -> disk_read_reply      high priority
//   board     -> disk  (disk_plan_atom, disk_plan_request) -> disk_write_lines     admission
//   board     -> disk  (disk_submit_atom, disk_submission_ptr) -> disk_write_reply staged job
//   board     -> disk  (generation_started_atom | generation_finished_atom, key hash) -> true
//   anyone    -> disk  (stats_atom) -> disk_stats
//   conductor -> disk  (stats_atom, disk_stats_receiver)  subscribes: told the stats at once and
//                                                          after every change, before any reply
//   disk      -> subscriber (stats_atom, disk_stats)        the stats flow one way
//   anyone    -> disk  (clear_atom) -> disk_clear_reply
//   server    -> disk  (drain_atom) -> disk_stats         answered once no write is out
//   disk      -> disk writer (disk_write_atom, disk_job_ptr) -> disk_job_ptr   (messages.hpp)
//   disk      -> remote pusher (remote_push_atom, remote_push_job_ptr) -> remote_stats
//   board     -> disk  (remote_push_atom, remote_push_job_ptr)   a spill committed: its files to
//                                                               the pusher (with a remote level)
//
// An offer carries the tier's generation (its clear count): a read of an offer made before a
// clear fails cleanly instead of restoring what the clear removed. Replies that carry buffers
// (verified bytes, staged rows) hold them by shared pointer and never leave the process: they
// are whitelisted as local message types, as messages.hpp's are.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/replies_to.hpp>
#include <caf/type_id.hpp>
#include <caf/typed_actor.hpp>

#include "protocol/disk_types.hpp"
#include "protocol/messages.hpp"

namespace anchorage {

// Defined by runtime/disk (disk_store.hpp, disk_service.hpp); only their owner at the time
// touches them.
struct verified_read;        // a prefix restore's bytes, every crc and id checked
struct verified_checkpoint;  // a generation checkpoint's bytes, checked
struct disk_submission;      // a staged write as the board hands it over
using disk_submission_ptr = std::shared_ptr<disk_submission>;

// Asks for the disk's offer: the prompt, where the tiers above resume (`floor`: the disk must
// start later), and the board's measured prefill rate (0: unmeasured, the disk is read).
struct disk_offer_request {
  std::vector<std::int32_t> prompt;
  std::size_t floor = 0;
  double prefill_tokens_per_s = 0;
  // The request's session (with a remote level, its spilled conversation is looked up by it and
  // the prompt's head, as the spill names a conversation).
  std::string session_key;
};

// A spilled conversation the remote level brought to this replica's spill folder: its block and
// anchor files written there (by name), its manifest's bytes not yet a file. The board's spill
// store adopts it (checks every file's header as its start-up scan does, writes the manifest,
// indexes it) or removes the files it wrote; a read then verifies every byte as any other.
struct fetched_spill {
  std::uint64_t id = 0;
  std::vector<unsigned char> manifest;
  std::vector<std::string> written;  // file names in the spill folder
};
struct disk_offer_reply {
  std::optional<disk_offer> offer;  // none: no anchor, not later than the floor, or declined
  // The line of an anchor found but declined, its read slower than the prefill (the miss
  // reasons' cost_rule); 0: none declined. Anchors lie above the floor, so a line is never 0.
  std::size_t declined_line = 0;
  bool declined() const { return declined_line != 0; }
  // The deepest grid line of the prompt, above the floor and any offer, that only another
  // engine's folder under the tier's root holds (by its chunk's name); 0: none. The miss
  // reasons' other_fingerprint: a cache built by other weights or another grid.
  std::size_t foreign_line = 0;
  // With a remote level: the request's spilled conversation, fetched (null: none).
  std::shared_ptr<const fetched_spill> spill;
};

// A request's start: a checkpoint of `checkpoint_key` when there is one (whole state), else
// the offer's prefix. The prompt is the one the offer was made for.
struct disk_read_request {
  std::vector<std::int32_t> prompt;
  std::optional<disk_offer> offer;
  std::optional<std::uint64_t> checkpoint_key;
};

enum class disk_read_kind { none, prefix, checkpoint };

// Verified buffers ready for the board to apply (disk_service::apply / apply_checkpoint), or a
// failure (kind none) with what failed: the board then starts from what is in place, or cold.
struct disk_read_reply {
  disk_read_kind kind = disk_read_kind::none;
  std::shared_ptr<verified_read> prefix;            // kind prefix
  std::shared_ptr<verified_checkpoint> checkpoint;  // kind checkpoint
  std::size_t line = 0;                             // the length the apply leaves (the checkpoint's rows)
  std::uint64_t bytes_read = 0;
  double read_ms = 0;
  std::string error;     // what failed (also a checkpoint's failure before a prefix read)
  bool damaged = false;  // the prefix's files were found and failed their checks (else: stale)
};

// What a request's prefill will write (admission, decided before it runs).
struct disk_plan_request {
  std::vector<std::int32_t> prompt;  // the served prompt
  std::size_t resume = 0;            // where the prefill starts
  bool exact = true;                 // an inexact start (a session resume) writes nothing
  std::string session_key;
  std::optional<std::size_t> user_start;  // where the last user message starts, when known
};
struct disk_write_lines {
  std::vector<std::size_t> chunks;   // ascending; empty: nothing to write
  std::vector<std::size_t> anchors;  // ascending, a subset of chunks
  std::size_t rows_from = 0;         // the lowest row the disk lacks at planning (rows below it
                                     // need no staging); chunks.back() when it lacks none
};

// A submitted job's outcome: the board releases `released_bytes` of its staging pool.
struct disk_write_reply {
  std::uint64_t released_bytes = 0;
  std::size_t files_written = 0;
  std::uint64_t bytes_written = 0;
  bool refused = false;  // over the entry cap, or no room: nothing written
  bool failed = false;   // a file failed, or the writer went away
  std::string error;
};

struct disk_clear_reply {
  std::size_t files_removed = 0;
  std::uint64_t generation = 0;  // the new one: offers made before it no longer read
};

// The files of anchors just committed, for the disk actor's remote pusher
// (actors/remote_pusher.hpp): paths in the store's folder, every chunk of an anchor's chain
// before the anchor; or (`spill`) a spill's files in the spill folder, the manifest among them.
struct remote_push_job {
  std::string folder;
  std::vector<std::string> paths;
  bool spill = false;
};
using remote_push_job_ptr = std::shared_ptr<const remote_push_job>;

// Whoever keeps the disk's latest stats (the conductor): told them after every change.
using disk_stats_receiver = caf::typed_actor<caf::reacts_to<stats_atom, disk_stats>>;

}  // namespace anchorage

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_offer_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_offer_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_read_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_read_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_plan_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_write_lines)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_submission_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_write_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_stats)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_clear_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::remote_push_job_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::remote_stats)

CAF_BEGIN_TYPE_ID_BLOCK(anchorage_disk, caf::id_block::anchorage::end)
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::disk_offer_request))
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::disk_offer_reply))
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::disk_read_request))
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::disk_read_reply))
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::disk_plan_request))
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::disk_write_lines))
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::disk_submission_ptr))
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::disk_write_reply))
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::disk_stats))
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::disk_clear_reply))
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::disk_stats_receiver))
CAF_ADD_ATOM(anchorage_disk, anchorage, disk_offer_atom, "dskoffer")
CAF_ADD_ATOM(anchorage_disk, anchorage, disk_read_atom, "dskread")
CAF_ADD_ATOM(anchorage_disk, anchorage, disk_plan_atom, "dskplan")
CAF_ADD_ATOM(anchorage_disk, anchorage, disk_submit_atom, "dsksubmit")
CAF_ADD_ATOM(anchorage_disk, anchorage, generation_started_atom, "genstart")
CAF_ADD_ATOM(anchorage_disk, anchorage, generation_finished_atom, "genend")
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::remote_push_job_ptr))
CAF_ADD_TYPE_ID(anchorage_disk, (anchorage::remote_stats))
CAF_ADD_ATOM(anchorage_disk, anchorage, remote_push_atom, "rmtpush")
CAF_END_TYPE_ID_BLOCK(anchorage_disk)
