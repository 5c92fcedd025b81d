#pragma once
// One request's life on a slot (runtime/board/slot_state.hpp): start() -> [offered()] ->
// [spill_fetched()] -> [restored()] -> [encoded()] -> [planned()] -> step()* until step_again is false; the
// finished event and the ledger entry come with the last step (run_report). One type per kind of request:
//   generation_run    the main path: the tiers' plan restored, prefilled, decoded; the tiers
//                     keep what it leaves (runtime/board/generation_run.hpp)
//   replayed_run      an answer replayed without the engine: the response cache's, or a summary
//                     the compaction worker prewrote (runtime/board/replayed_run.hpp)
//   continuation_run  a compaction request served above the held conversation's end anchor
//                     (runtime/board/continuation_run.hpp)
//   idle_run          the compaction worker's prewrite: a continuation that tells no client
//                     anything (runtime/board/idle_run.hpp)
// The slot (board_runner) chooses the run when a request arrives and drops it once it ended.
// Not thread-safe: one owner (the board actor).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/board/slot_state.hpp"

namespace anchorage {

// The session's job for a board job: its tokenizer, prompt, sampling, limits and what is parsed.
generation_job to_generation_job(const board_job& j);

// What the tiers are told of a request before it runs.
request_info info_of(const board_job& j);

// A request that cannot start: a failed event and an error entry at once.
board_events failed_events(const board_job& j, int status, const std::string& message);

class run {
 public:
  enum class phase { restoring, planning, running, ended };

  run(slot_state& slot, board_job job, std::int64_t start_ns);
  virtual ~run() = default;
  run(const run&) = delete;
  run& operator=(const run&) = delete;

  // The first events. A run that cannot start answers a failed event and is ended().
  virtual board_events start() = 0;
  // The disk's offer, the spill reader's answer, the disk's read and the disk's write lines
  // (the generation's).
  virtual board_events offered(disk_offer_reply) { return {}; }
  virtual board_events spill_fetched(spill_fetch_ptr) { return {}; }
  // The vision encoder's answer (the generation's images its prefill forwards).
  virtual board_events encoded(vision_encode_ptr) { return {}; }
  virtual board_events restored(disk_read_reply) { return {}; }
  virtual board_events planned(const disk_write_lines&) { return {}; }
  // The slot emptied tiers (`done`) while the run was in any phase.
  virtual void cleared(const std::vector<cache_tier>&) {}

  board_events step();
  std::optional<token_id> batch_token() const;
  board_events step_forwarded();
  std::vector<token_id> batch_rows(std::size_t max_rows);
  board_events step_rows();
  // Ends the run at its next step (a run still restoring or planning ends at its first).
  void cancel();

  phase current_phase() const { return phase_; }
  bool ended() const { return phase_ == phase::ended; }
  const board_job& job() const { return job_; }
  // The source the ledger reports (decided once the run restored or replayed).
  cache_source source() const { return source_; }
  // The engine the run reads and writes (the slot's).
  engine& active() { return *slot_.eng; }
  // Speculative decoding's counters of the run so far (counted into the slot's when it ends).
  speculative_counters speculation() const;
  // The run reads nothing of the engine (its answer is replayed).
  virtual bool replayed() const { return false; }
  // The compaction worker's run: stopped by any request, and its own answer at the end.
  virtual bool idle() const { return false; }

  // Where the prefill stands (the slots' view: its tokens, those in the state so far, those
  // restored); nullopt when the run is not prefilling.
  struct prefill_progress {
    long prompt_tokens = 0, done_tokens = 0, cached_tokens = 0;
  };
  std::optional<prefill_progress> progress() const;

  // A prefill forwarding more than this many tokens is logged every tenth (log_progress).
  static constexpr long progress_log_tokens = 8192;

 protected:
  // What a step leaves after the common part (progress, deltas, the end): a generation's tiers
  // anchor after a prefill chunk, a checkpoint after decoded tokens.
  virtual void after_prefill_chunk(board_events&) {}
  virtual void after_tokens(board_events&) {}
  // The end: what the run keeps, and the finished event and ledger entry (run_report) or the
  // worker's answer.
  virtual void finish(board_events& out) = 0;
  virtual board_events after_step(generation_session::step_result r, bool was_prefilling);
  // The finished event and the ledger entry (run_report.cpp).
  void report(board_events& out);
  board_events running_events();
  void log_progress(const stream_event& ev);

  slot_state& slot_;
  board_job job_;  // the served prompt once restored; its cache info once decided
  std::unique_ptr<generation_session> session_;
  phase phase_ = phase::running;
  bool cancel_pending_ = false;  // a cancel came before the session began
  std::int64_t start_ns_ = 0;
  std::int64_t first_token_ns_ = 0;
  long logged_tenths_ = 0;                    // log_progress: the tenths of this prefill logged so far
  cache_source source_ = cache_source::cold;  // as reported in the ledger
};

}  // namespace anchorage
