#pragma once
// The actors' interfaces: what each one accepts and answers (CAF typed actors).
#include <string>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "protocol/compaction_messages.hpp"
#include "protocol/messages.hpp"
#include "protocol/spill_messages.hpp"
#include "protocol/suffix_messages.hpp"
#include "protocol/vision_messages.hpp"

namespace anchorage {

// sink_actor (a request's stream_events) is declared beside stream_event in board_job.hpp.

// What the board tells the conductor when a request ends, and its tiers' stats after anything
// changed them.
using done_receiver =
    caf::typed_actor<caf::reacts_to<done_atom, ledger_entry>, caf::reacts_to<tiers_atom, cache_stats>>;

// The board: the only owner of the engine. Quiesce is answered with its tiers' stats once no slot
// runs anything (a request or idle work) and every write it sent (spill, disk, suffix store) is
// committed.
using board_actor = caf::typed_actor<
    caf::reacts_to<run_atom, board_job>, caf::reacts_to<step_atom>, caf::reacts_to<cancel_atom, std::string>,
    caf::replies_to<clear_atom, cache_tier>::with<clear_reply>,
    caf::replies_to<settings_atom, cache_settings>::with<bool>,
    caf::replies_to<spill_atom>::with<spill_stop_reply>,
    caf::replies_to<idle_atom, idle_request>::with<idle_reply>,
    caf::reacts_to<suffix_update_atom, suffix_update>, caf::replies_to<quiesce_atom>::with<cache_stats>>;

// The suffix store's writer (actors/suffix_writer): owns the store; appends each finished
// request's ids on its own thread and tells its subscriber (the board) what its view needs; stop
// (sent by the board at its exit, after its last add) makes it quit once what came before is
// written; quiesce is answered once every add sent before it is written and its update sent.
using suffix_writer_actor =
    caf::typed_actor<caf::reacts_to<suffix_subscribe_atom, suffix_receiver>,
                     caf::reacts_to<suffix_add_atom, suffix_ids_ptr>,
                     caf::replies_to<clear_atom>::with<suffix_update>, caf::reacts_to<suffix_stop_atom>,
                     caf::replies_to<quiesce_atom>::with<bool>>;

// The disk writer: writes a staged job's files through its own env and hands the job back, in
// the order the jobs came (write-behind: the board never waits for it).
using disk_writer_actor =
    caf::typed_actor<caf::replies_to<disk_write_atom, disk_job_ptr>::with<disk_job_ptr>>;

// The spill writer: writes a staged spill's files through its own env and hands the job back,
// in the order the jobs came.
using spill_writer_actor =
    caf::typed_actor<caf::replies_to<spill_write_atom, spill_job_ptr>::with<spill_job_ptr>>;
// The spill reader: reads and verifies a planned read's files through its own env (off the
// board's thread) and hands the fetch back with its outcome.
using spill_reader_actor =
    caf::typed_actor<caf::replies_to<spill_read_atom, spill_fetch_ptr>::with<spill_fetch_ptr>>;
// The vision encoder: encodes a request's images with the tower's weights (off the board's
// thread) and hands the job back with their rows or the failure.
using vision_encoder_actor =
    caf::typed_actor<caf::replies_to<vision_encode_atom, vision_encode_ptr>::with<vision_encode_ptr>>;

// The conductor: renders, looks up, queues, dispatches; keeps the ledger and the metrics.
// Quiesce (tests and tools, in place of polling the stats): answered true once nothing runs or
// waits, every write is committed and the stats it serves say so (the board's and the disk's).
// Started (the same, for a request's start): answered true once at least n requests run on the
// board at once. Idle runs (for the compaction worker): answered true once the board's stats show
// at least n idle runs finished. The board's stats (tiers) and the disk's (stats, disk_stats)
// come to it as they change; it never asks for them.
using conductor_actor = caf::typed_actor<
    caf::reacts_to<generate_atom, request_envelope>, caf::reacts_to<cancel_atom, std::string>,
    caf::reacts_to<done_atom, ledger_entry>, caf::reacts_to<tiers_atom, cache_stats>,
    caf::reacts_to<stats_atom, disk_stats>, caf::replies_to<stats_atom>::with<std::string>,
    caf::replies_to<metrics_atom>::with<std::string>,
    caf::replies_to<clear_atom, cache_tier>::with<clear_reply>,
    caf::replies_to<settings_atom, cache_settings>::with<bool>, caf::replies_to<drain_atom>::with<bool>,
    caf::replies_to<disk_entries_atom, std::size_t>::with<disk_entry_list>,
    caf::replies_to<idle_atom, idle_request>::with<idle_reply>, caf::replies_to<quiesce_atom>::with<bool>,
    caf::replies_to<started_atom, std::size_t>::with<bool>,
    caf::replies_to<idle_runs_atom, long>::with<bool>>;

// The compaction worker: told of every request (activity) and of the continuation to prewrite
// from; after --compaction-idle-s without activity it asks the conductor for idle work.
using compaction_worker_actor =
    caf::typed_actor<caf::reacts_to<activity_atom>, caf::reacts_to<compaction_template_atom, board_job>,
                     caf::reacts_to<tick_atom, std::uint64_t>>;

// The admin: operator messages, token and tier checked (errors are error_code); the live
// settings (GET, and POST with the token and a JSON body).
using admin_actor =
    caf::typed_actor<caf::replies_to<clear_atom, std::string, std::string>::with<std::string>,
                     caf::replies_to<settings_atom>::with<std::string>,
                     caf::replies_to<settings_atom, std::string, std::string>::with<std::string>,
                     caf::replies_to<disk_entries_atom, std::size_t>::with<std::string>,
                     caf::replies_to<holdings_atom>::with<std::string>,
                     caf::replies_to<stats_atom>::with<std::string>,
                     caf::replies_to<metrics_atom>::with<std::string>>;

}  // namespace anchorage
