#pragma once
// The disk tier actor's interface (actors/disk.hpp): what it accepts and answers.
#include <cstdint>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "protocol/disk_messages.hpp"

namespace anchorage {

// The disk tier: owns the index, admission, eviction, the start-up scan and the checkpoints.
// Reads are answered at once from its own env (senders send them at high priority, so they pass
// queued submissions); a submission is planned, handed to its disk writer and answered once
// its results are committed; a generation's start or end (its checkpoint kept, or removed) is
// answered once done, so a board's quiesce can wait for it; a drain is answered once no write is
// out. A subscriber (the conductor) is told the stats at once and again after every message that
// may change them, before that message's reply: whatever follows a reply causally sees the stats
// it left. Settings (the budget, lifetime and free-space floor given) are applied at once, what
// they no longer allow evicted, and answered with the stats they left. With a remote level, a
// committed spill's files (from the board) go to the pusher, and an offer also brings the
// request's spilled conversation from Redis (disk_offer_reply::spill).
using disk_actor = caf::typed_actor<
    caf::replies_to<disk_offer_atom, disk_offer_request>::with<disk_offer_reply>,
    caf::replies_to<disk_read_atom, disk_read_request>::with<disk_read_reply>,
    caf::replies_to<disk_plan_atom, disk_plan_request>::with<disk_write_lines>,
    caf::replies_to<disk_submit_atom, disk_submission_ptr>::with<disk_write_reply>,
    caf::replies_to<generation_started_atom, std::uint64_t>::with<bool>,
    caf::replies_to<generation_finished_atom, std::uint64_t>::with<bool>,
    caf::replies_to<stats_atom>::with<disk_stats>, caf::reacts_to<stats_atom, disk_stats_receiver>,
    caf::replies_to<clear_atom>::with<disk_clear_reply>, caf::replies_to<drain_atom>::with<disk_stats>,
    caf::replies_to<settings_atom, cache_settings>::with<disk_stats>,
    caf::replies_to<disk_entries_atom, std::size_t>::with<disk_entry_list>,
    caf::reacts_to<remote_push_atom, remote_push_job_ptr>>;

// The disk tier's remote pusher (actors/remote_pusher.hpp, --remote-cache): copies a committed
// anchor's files to Redis behind the disk's writes, on its own thread and connection, and
// answers with its push counters.
using remote_pusher_actor =
    caf::typed_actor<caf::replies_to<remote_push_atom, remote_push_job_ptr>::with<remote_stats>>;

}  // namespace anchorage
