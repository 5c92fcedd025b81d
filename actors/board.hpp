#pragma once
#include <memory>
#include <optional>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "protocol/disk_interface.hpp"
#include "protocol/interfaces.hpp"
#include "runtime/speculative/suffix_lookup.hpp"
#include "runtime/suffix/suffix_store.hpp"
#include "runtime/board/slot_board.hpp"

namespace anchorage {

struct board_options {
  int decode_block = 4;             // tokens per decode message
  cache_options cache;              // the device tiers
  speculative_options speculative;  // --speculative, --draft-max
  // --parallel N: slots 1 .. N - 1 (slot 0 is the engine the board is spawned with), engines of
  // the same weights with their own rows; requests run on them concurrently (slot_board).
  std::vector<std::shared_ptr<engine>> slots;
  // The disk tier (--cache-dir): its options (the staging pool, the checkpoint interval) and
  // the disk actor (actors/disk.hpp) that reads, plans and writes.
  std::optional<disk_tier_options> disk;
  disk_actor disk_handle;
  // The session spill (--session-spill): the keeper (its store scanned; the board reads the
  // conversations a planned stop left back into their slots before its first request) and the
  // writer actor that writes its jobs, and the reader actor that reads and verifies a
  // request's spilled conversation (none: the board reads it itself, as in tests without actors).
  std::shared_ptr<spill_keeper> spill;
  spill_writer_actor spill_writer;
  spill_reader_actor spill_reader;
  // The persistent suffix store (--suffix-store, docs/SUFFIX_STORE.md): its writer (the
  // server's), to which the board subscribes at its start, installing what it sends in the view
  // the slots' drafters read, and the store's folder. None: off, and `suffix_off` says why (the
  // stats show it).
  suffix_writer_actor suffix_writer;
  std::string suffix_path;
  std::string suffix_off;
  // The model's vision tower and its cache (docs/IMAGES.md); null: the model has none. The
  // vision encoder actor encodes a request's images off the board's thread (none: the board
  // encodes them itself, as in tests without actors).
  std::shared_ptr<vision_tower> vision;
  vision_encoder_actor vision_encoder;
};

// The board: the only owner of the engines and of the device tiers (each slot's resident prefix
// is its engine's own rows). The work is its slot_board's (runtime/board/slot_board.hpp): one
// board_runner per slot. The actor runs one step of one slot per message (a prefill chunk or a
// decode block), sending itself the next step, so a message that arrives meanwhile (a new
// request, a cancel at high priority, a clear) is handled between two steps. The disk actor's
// replies (a read, a plan, a write's release) come back the same way, to their slot: the board
// never waits for the disk.
//
// Idle work (the compaction worker's, docs/COMPACTION.md) is below every request: it starts only
// when no slot is busy, runs one chunk or block per step message like a request, and stops at
// once when a request, a clear or a planned stop's spill arrives, before that message is handled.
struct board_state {
  std::unique_ptr<slot_board> slots;
  bool step_queued = false;  // a step message is on its way
  disk_actor disk;
  done_receiver conductor;
  spill_writer_actor spill_writer;
  spill_reader_actor spill_reader;
  vision_encoder_actor vision_encoder;
  // The suffix store's writer (none when it is off), the view it feeds (the slots' lookup
  // source) and its latest counters.
  suffix_writer_actor suffix_writer;
  std::shared_ptr<suffix_lookup> suffix_view;
  std::optional<suffix_tier_stats> suffix_stats;
  // The compaction worker's idle work running now: answered when it finishes or is preempted.
  std::optional<caf::typed_response_promise<idle_reply>> idle;
  // Spill writes, disk submissions and generation marks sent and not yet answered; the quiesces
  // waiting for them and for the slots to be quiet (board_outbox.hpp, answer_quiesces).
  long writes_out = 0;
  std::vector<caf::typed_response_promise<cache_stats>> quiesces;
  long steps = 0;  // steps run, for tests
  static inline const char* name = "board";
};

board_actor::behavior_type board(board_actor::stateful_pointer<board_state> self, std::shared_ptr<engine> eng,
                                 board_options opts, done_receiver conductor);

}  // namespace anchorage
