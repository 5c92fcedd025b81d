#pragma once
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_response_promise.hpp>

#include "actors/compaction_worker.hpp"
#include "protocol/disk_interface.hpp"
#include "protocol/interfaces.hpp"
#include "runtime/server/ledger.hpp"
#include "runtime/server/metrics.hpp"
#include "runtime/text/prompt_render.hpp"
#include "runtime/text/tokenizer.hpp"

namespace anchorage {

struct conductor_options {
  render_limits limits;
  tokenizer tok;  // renders and tokenizes the prompts (--tokenizer; the byte tokenizer by default)
  int max_queue = 16;
  int slots = 1;  // --parallel: requests the board runs at once
  std::string ledger_path;
  // The disk tier's actor (none without --cache-dir): asked for its offer while a request
  // waits, for its stats, and for its drain. The two options are reported in its stats.
  disk_actor disk;
  std::size_t disk_min_tokens = 0;
  // --compaction: a compaction request is planned as the continuation of the conversation its
  // session holds (docs/COMPACTION.md); the board serves it so when the guard holds.
  bool compaction = true;
  // The compaction worker (--compaction-idle-s above 0, with compaction on): spawned by the
  // conductor, told of every request, given the continuation to prewrite from (opencode 1.18.33's
  // at the start, then each compaction request's), its summaries --compaction-max-tokens long.
  std::optional<compaction_worker_options> worker;
  long compaction_max_tokens = 2048;
  // The session spill is on: a drain asks the board to spill the slots' conversations once
  // nothing runs, before the disk's drain.
  bool spill = false;
  std::size_t checkpoint_tokens = 0;
};

// The conductor renders each request, queues it, and hands the board up to --parallel requests
// at a time, in arrival order (the board looks the device tiers up when it takes it: docs/CACHES.md, "Where
// the lookup runs"); while a request waits, the disk actor's offer for it is asked for and
// rides along in its job (a request is handed over once its offer came). It keeps the ledger,
// the metrics and the tiers' latest stats (the board's and the disk actor's).
struct conductor_state {
  conductor_options opts;
  std::unique_ptr<ledger> book;
  metrics counters;
  board_actor board;
  compaction_worker_actor worker;  // none without opts.worker
  std::deque<board_job> queue;
  std::vector<std::string> awaiting_offer;  // queued ids whose disk offer has not come yet
  std::vector<std::string> running;         // handed to the board, at most opts.slots
  std::uint64_t sequence = 0;
  // Drains waiting (answered true once nothing runs, nothing is queued and the disk tier's
  // staging is written), and that staging as the board last reported it.
  std::vector<caf::typed_response_promise<bool>> drains;
  std::uint64_t disk_staged_bytes = 0;
  bool disk_drain_out = false;  // the disk actor was asked for its drain
  enum class spill_step { not_asked, out, done } spill_drain = spill_step::not_asked;
  spill_stop_reply spilled;  // what the planned stop's spill wrote
  // The tiers as the board last reported them, and the disk actor's stats.
  cache_stats tiers;
  disk_stats disk;
  static inline const char* name = "conductor";
};

// The board is spawned by the conductor (it needs the conductor's handle): `make_board`
// receives the conductor and returns the board.
conductor_actor::behavior_type conductor(conductor_actor::stateful_pointer<conductor_state> self,
                                         conductor_options opts,
                                         std::function<board_actor(done_receiver)> make_board);

}  // namespace anchorage
