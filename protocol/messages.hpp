#pragma once
// The actors' vocabulary: every message type and atom in one CAF type-id block.
//
//   edge      -> conductor  (generate_atom, request_envelope)
//   edge      -> conductor  (cancel_atom, id)                       high priority
//   conductor -> board      (run_atom, board_job)
//   conductor -> board      (cancel_atom, id)                       high priority
//   board     -> board      (step_atom)                             one chunk or block each
//   board     -> sink       stream_event                            progress, deltas, end
//   board     -> conductor  (done_atom, ledger_entry)
//   board     -> conductor  (tiers_atom, cache_stats)               the tiers' stats, after each change
//   conductor -> board      (clear_atom, cache_tier) -> clear_reply or error
//   admin     -> conductor  (stats_atom) -> std::string (JSON)
//   admin     -> conductor  (metrics_atom) -> std::string (Prometheus text)
//   admin     -> conductor  (clear_atom, cache_tier) -> clear_reply or error
//   edge      -> admin      (clear_atom, token, tier) -> std::string (the route's JSON) or error
//   edge      -> conductor  (drain_atom) -> bool (idle)
//   edge      -> admin      (settings_atom) -> std::string (the settings' JSON)
//   edge      -> admin      (settings_atom, token, body) -> std::string (the settings' JSON) or error
//   admin     -> conductor  (settings_atom, cache_settings) -> bool, once every owner applied them
//   conductor -> disk       (settings_atom, cache_settings) -> disk_stats (evicted to the new cap)
//   conductor -> board      (settings_atom, cache_settings) -> bool (evicted to the new caps)
//   edge      -> admin      (disk_entries_atom, limit) -> std::string (the disk's anchors' JSON)
//   admin     -> conductor  (disk_entries_atom, limit) -> disk_entry_list, or unknown_tier
//   conductor -> disk       (disk_entries_atom, limit) -> disk_entry_list
//   edge      -> admin      (holdings_atom) -> std::string (what the replica holds: hashes and
//                                              token counts, runtime/server/holdings.hpp)
//   board     -> disk writer (disk_write_atom, disk_job_ptr) -> disk_job_ptr (results filled)
//
// The structs carry shared pointers, actor handles and JSON, and travel inside one process
// only: they are whitelisted as local message types rather than given serializers.
#include <cstdint>
#include <memory>
#include <string>

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/type_id.hpp>

#include "protocol/board_job.hpp"
#include "protocol/cache_settings.hpp"
#include "protocol/cache_source.hpp"
#include "protocol/cache_stats.hpp"
#include "protocol/clear_reply.hpp"
#include "protocol/ledger_entry.hpp"
#include "protocol/openai_types.hpp"

namespace anchorage {

// A staged write of the disk tier (runtime/disk/disk_tier_options.hpp), handed from the board to the disk
// writer and back; only its owner at the time touches it.
struct disk_job;
using disk_job_ptr = std::shared_ptr<disk_job>;

// A parsed client request on its way to the conductor.
struct request_envelope {
  std::string id;
  std::shared_ptr<const completion_request> request;
  std::int64_t received_ns = 0;
  sink_actor sink;
};

}  // namespace anchorage

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::request_envelope)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::board_job)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::stream_event)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::ledger_entry)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_job_ptr)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::cache_tier)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::clear_reply)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::cache_stats)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::cache_settings)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(anchorage::disk_entry_list)

CAF_BEGIN_TYPE_ID_BLOCK(anchorage, caf::first_custom_type_id)
CAF_ADD_TYPE_ID(anchorage, (anchorage::request_envelope))
CAF_ADD_TYPE_ID(anchorage, (anchorage::board_job))
CAF_ADD_TYPE_ID(anchorage, (anchorage::stream_event))
CAF_ADD_TYPE_ID(anchorage, (anchorage::ledger_entry))
CAF_ADD_TYPE_ID(anchorage, (anchorage::disk_job_ptr))
CAF_ADD_TYPE_ID(anchorage, (anchorage::cache_tier))
CAF_ADD_TYPE_ID(anchorage, (anchorage::clear_reply))
CAF_ADD_TYPE_ID(anchorage, (anchorage::cache_stats))
CAF_ADD_TYPE_ID(anchorage, (anchorage::cache_settings))
CAF_ADD_TYPE_ID(anchorage, (anchorage::disk_entry_list))
CAF_ADD_ATOM(anchorage, anchorage, generate_atom, "generate")
CAF_ADD_ATOM(anchorage, anchorage, cancel_atom, "cancel")
CAF_ADD_ATOM(anchorage, anchorage, run_atom, "run")
CAF_ADD_ATOM(anchorage, anchorage, step_atom, "step")
CAF_ADD_ATOM(anchorage, anchorage, done_atom, "done")
CAF_ADD_ATOM(anchorage, anchorage, stats_atom, "stats")
CAF_ADD_ATOM(anchorage, anchorage, metrics_atom, "metrics")
CAF_ADD_ATOM(anchorage, anchorage, clear_atom, "clear")
CAF_ADD_ATOM(anchorage, anchorage, drain_atom, "drain")
CAF_ADD_ATOM(anchorage, anchorage, tiers_atom, "tiers")
CAF_ADD_ATOM(anchorage, anchorage, disk_write_atom, "diskwrite")
CAF_ADD_ATOM(anchorage, anchorage, quiesce_atom, "quiesce")
CAF_ADD_ATOM(anchorage, anchorage, started_atom, "started")
CAF_ADD_ATOM(anchorage, anchorage, idle_runs_atom, "idleruns")
CAF_ADD_ATOM(anchorage, anchorage, settings_atom, "settings")
CAF_ADD_ATOM(anchorage, anchorage, disk_entries_atom, "dskentries")
CAF_ADD_ATOM(anchorage, anchorage, holdings_atom, "holdings")
CAF_END_TYPE_ID_BLOCK(anchorage)
