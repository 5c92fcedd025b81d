#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/board_job.hpp"
#include "protocol/cache_stats.hpp"
#include "protocol/disk_messages.hpp"
#include "protocol/messages.hpp"
#include "protocol/spill_messages.hpp"
#include "runtime/server/ledger.hpp"
#include "runtime/server/metrics.hpp"
#include "runtime/text/template/prompt_render.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

struct request_queue_options {
  render_limits limits;
  tokenizer tok;  // renders and tokenizes the prompts (--tokenizer; the byte tokenizer by default)
  int max_queue = 16;
  int slots = 1;  // --parallel: requests the board runs at once
  std::string ledger_path;
  std::size_t disk_min_tokens = 0;  // reported in the disk's stats
  // --compaction: a compaction request is planned as the continuation of the conversation its
  // session holds (docs/COMPACTION.md); the board serves it so when the guard holds.
  bool compaction = true;
  long compaction_max_tokens = 2048;  // the compaction worker's summaries
  // The session spill is on: a drain asks the board to spill the slots' conversations once
  // nothing runs, before the disk's drain.
  bool spill = false;
  std::size_t checkpoint_tokens = 0;  // reported in the disk's stats
};

// What one call of the request queue asks its owner (the conductor actor) to send.
struct queue_outbox {
  std::vector<std::pair<sink_actor, stream_event>> events;  // accepted, failed: to each sink
  std::vector<board_job> runs;                              // to the board, in this order
  std::optional<board_job> worker_template;   // a compaction request's continuation, for the worker
  std::optional<std::string> cancel_running;  // a running request to cancel (at high priority)
};

// The conductor's work without the actor: each request rendered, admitted (a 429 when the
// slots are busy and max_queue requests already wait), queued, and handed to the board up to
// `slots` at a time in arrival order (the tiers, the disk's included, are the board's to ask). It keeps the
// ledger, the metrics and the tiers' latest stats (the board's and the disk actor's), and says what a drain
// does next. Not thread-safe: one owner.
class request_queue {
 public:
  // `disk`: a disk tier answers stats and drains. `worker`: a compaction worker learns
  // each compaction request's continuation.
  request_queue(request_queue_options opts, bool disk, bool worker);

  queue_outbox admit(const request_envelope& env);
  queue_outbox cancel(const std::string& id);
  // A request ended on the board (its ledger entry): counted, recorded, its slot handed on.
  queue_outbox finished(const ledger_entry& e);
  void set_tiers(cache_stats tiers);
  void set_disk(disk_stats disk);
  // The idle work's condition: nothing runs or waits and no drain is asked for.
  bool quiet(bool drains) const { return running_.empty() && queue_.empty() && !drains; }

  // A drain's next move once asked for (docs/SERVER.md, the planned stop): wait (something
  // runs, is queued, staged or already asked), ask the board to spill the slots' conversations,
  // ask the disk actor for its drain, or answer now (idle).
  enum class drain_move { wait, ask_spill, ask_disk, idle };
  drain_move next_drain();
  void spill_done(std::optional<spill_stop_reply> r);
  void disk_drained(std::optional<disk_stats> d);
  // Where a drain stands (the stats' "drain"): its step ("serving" until one is asked for, then
  // "requests" while requests run or wait, "staged_writes" while the board stages disk bytes,
  // "spill" while the planned stop's spill is written, "disk_writes" while the disk actor
  // commits its last writes, "done"), and what each step waits on.
  nlohmann::json drain_progress() const;

  // The stats route's JSON text and the metrics route's text.
  std::string stats_text() const;
  std::string metrics_text() const;
  // What the worker prewrites from before any compaction request came: opencode 1.18.33's
  // compaction agent and instructions, rendered as a compaction request of it would be.
  std::optional<board_job> opencode_template() const;

  std::size_t waiting() const { return queue_.size(); }
  std::size_t running() const { return running_.size(); }
  // The board's stats as it last reported them.
  const cache_stats& tiers() const { return tiers_; }
  // The request that waits longest (null: none), and the ledger.
  const board_job* front() const { return queue_.empty() ? nullptr : &queue_.front(); }
  const ledger& book() const { return *book_; }

 private:
  void dispatch(queue_outbox& out);
  void reject(queue_outbox& out, const request_envelope& env, api_error err);
  void publish_tiers();
  board_job worker_template_of(const board_job& j) const;

  request_queue_options opts_;
  bool disk_ = false, worker_ = false;
  std::unique_ptr<ledger> book_;
  metrics counters_;
  std::deque<board_job> queue_;
  std::vector<std::string> running_;  // handed to the board, at most opts_.slots
  std::uint64_t sequence_ = 0;
  // The drain: the planned stop's spill (once) and the disk's drain, each asked for in turn.
  enum class spill_step { not_asked, out, done } spill_drain_ = spill_step::not_asked;
  bool disk_drain_out_ = false;
  bool drain_asked_ = false, drain_done_ = false;
  spill_stop_reply spilled_;  // what the planned stop's spill wrote
  // The tiers as the board last reported them, and the disk actor's stats.
  cache_stats tiers_;
  disk_stats disk_stats_;
};

}  // namespace anchorage
