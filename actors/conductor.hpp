#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/compaction_worker.hpp"
#include "protocol/disk_interface.hpp"
#include "protocol/interfaces.hpp"
#include "runtime/board/request_queue.hpp"

namespace anchorage {

// The request queue's options (runtime/board/request_queue.hpp), held whole, and the actors
// the conductor talks to besides the board.
struct conductor_options : request_queue_options {
  // The disk tier's actor (none without --cache-dir): its stats (it publishes them) and its
  // drain; nothing about a single request (the board asks the disk about those).
  disk_actor disk;
  // The compaction worker (--compaction-idle-s above 0, with compaction on): spawned by the
  // conductor, told of every request, given the continuation to prewrite from (opencode 1.18.33's
  // at the start, then each compaction request's), its summaries --compaction-max-tokens long.
  std::optional<compaction_worker_options> worker;
};

// The conductor wires its request queue (runtime/board/request_queue.hpp: admission, the
// ledger, the metrics, the drain's moves) to the edge, the board, the disk actor and the
// compaction worker: it renders each request, queues it, and hands the board up to --parallel
// requests at a time, in arrival order (the board looks every tier up, the disk's offer
// included, when it takes it: docs/CACHES.md, "Where the lookup runs").
struct conductor_state {
  std::unique_ptr<request_queue> queue;
  disk_actor disk;
  bool disk_heard = false;  // the disk's stats came at least once (it sends them as they change)
  board_actor board;
  compaction_worker_actor worker;  // none without opts.worker
  // Drains waiting: answered true once nothing runs, nothing is queued and the disk tier's
  // staging is written.
  std::vector<caf::typed_response_promise<bool>> drains;
  // Quiesces waiting (quiesce_atom): answered once nothing runs or waits, the board has reported
  // every write committed and the disk actor's stats have come.
  std::vector<caf::typed_response_promise<bool>> quiesces;
  // Waits for requests to start (started_atom): each answered once that many run at once.
  std::vector<std::pair<std::size_t, caf::typed_response_promise<bool>>> startings;
  // Waits for the compaction worker's idle runs (idle_runs_atom): each answered once the board's
  // stats show that many finished.
  std::vector<std::pair<long, caf::typed_response_promise<bool>>> idle_waits;
  static inline const char* name = "conductor";
};

// The board is spawned by the conductor (it needs the conductor's handle): `make_board`
// receives the conductor and returns the board.
conductor_actor::behavior_type conductor(conductor_actor::stateful_pointer<conductor_state> self,
                                         conductor_options opts,
                                         std::function<board_actor(done_receiver)> make_board);

}  // namespace anchorage
