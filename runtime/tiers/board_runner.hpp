#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/board_job.hpp"
#include "protocol/cache_source.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/generation/generation_session.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/tiers/cache_tiers.hpp"

namespace anchorage {

struct board_runner_options {
  int decode_block = 4;  // tokens per step of a decode
  cache_options cache;   // the device tiers
  // --parallel N: N - 1 side slots, engines of the same model with their own buffers. A guest
  // runs on one and leaves slot 0 (the resident prompt) untouched.
  std::vector<std::shared_ptr<engine>> side_slots;
  // The disk tier (--cache-dir): its options and the env of its reads (a uring_env when not
  // given; tests pass fault_envs). Off without options or with the cache off.
  std::optional<disk_tier_options> disk;
  std::shared_ptr<file_env> disk_env;
};

// What one call of the runner asks its owner to send, in this order: `events` to `sink` (the
// request's), `done` to the conductor, `disk_jobs` to the disk writer (each comes back through
// disk_written()); then the tiers' stats when `tiers_changed`, and one more step() when
// `step_again`.
struct board_events {
  sink_actor sink;
  std::vector<stream_event> events;
  std::optional<ledger_entry> done;
  std::vector<std::shared_ptr<disk_job>> disk_jobs;
  bool tiers_changed = false;
  bool step_again = false;
};

// The board's work, without the actor: one request at a time over slot 0 (the resident prompt's
// engine) or a side slot, the device tiers (and the disk tier) looked up when it starts,
// anchored after each prefill chunk, left the end anchor and the session snapshot when it ends;
// generation checkpoints staged every --generation-checkpoint-tokens and resumed by an identical
// request.
//
// start(job) -> step()* until step_again is false (the finished event and the ledger entry come
// with the last one). A request that cannot start answers a failed event and an error entry at
// once. cancel(id) between two steps ends the running request at its next step; a cancel that
// found no such request (it passed its job in the mailbox) ends that job as soon as it starts.
// A tier call that throws (an allocation that failed mid-copy) is a refusal: the request goes
// on, and slot 0's resident prefix, whose state is then uncertain, starts over.
// Not thread-safe: one owner (the board actor).
class board_runner {
 public:
  board_runner(std::shared_ptr<engine> eng, board_runner_options opts);
  board_runner(const board_runner&) = delete;
  board_runner& operator=(const board_runner&) = delete;

  // The disk tier's startup scan (nullopt without a disk tier).
  std::optional<disk_scan_report> start_disk();

  board_events start(board_job job);
  board_events step();
  void cancel(const std::string& id);
  // Empties a tier; nullopt when this server has no such tier (the disk without --cache-dir).
  std::optional<std::vector<cache_tier>> clear(cache_tier tier);
  // A disk job back from the writer (results filled), or lost with it (results empty).
  void disk_written(const disk_job& job);

  bool busy() const { return session_ != nullptr; }
  const std::string& running_id() const { return job_.id; }
  long steps() const { return steps_; }
  cache_tiers& tiers() { return *tiers_; }
  const cache_tiers& tiers() const { return *tiers_; }
  engine& slot0() { return *eng_; }
  // The running request's engine: slot 0 or a side slot.
  engine& active() { return *active_; }

 private:
  template <class F>
  void guarded(F&& f);
  resume_offer cold_after_failure(const resume_offer& failed, std::vector<token_id> prompt);
  resume_offer start_state(board_job& j);
  bool resume_checkpoint(board_job& j);
  void maybe_checkpoint(board_events& out);
  void finish(board_events& out);
  void take_disk_jobs(board_events& out);
  std::size_t checkpoint_every() const;
  board_events failed(const board_job& j, int status, const std::string& message);
  void take_early_cancel();

  std::shared_ptr<engine> eng_;
  int decode_block_ = 4;
  // Declared before the tiers, which use them until they are destroyed.
  std::shared_ptr<file_env> disk_env_;
  std::unique_ptr<eviction_clock> clock_;
  std::unique_ptr<cache_tiers> tiers_;
  std::vector<std::shared_ptr<engine>> side_slots_;
  engine* active_ = nullptr;
  board_job job_;
  cache_source source_ = cache_source::cold;
  std::unique_ptr<generation_session> session_;
  std::int64_t first_token_ns_ = 0;
  long steps_ = 0;
  std::uint64_t job_key_ = 0;              // the running generation's checkpoint key (generation_key)
  bool served_as_asked_ = true;            // the served prompt is the client's (no end alignment)
  std::size_t next_checkpoint_ = 0;        // output ids at which the next checkpoint is staged
  std::deque<std::string> early_cancels_;  // the last few cancels that found no request running
};

}  // namespace anchorage
