#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/board/run.hpp"
#include "runtime/board/slot_state.hpp"

namespace anchorage {

// The board's work on one slot, without the actor (the slot: slot_state's engine, tiers and
// staging, and one run at a time: runtime/board/run.hpp, whose type says what kind of request it
// is): one request at a time over the slot's engine
// (its rows are the resident prompt), the device tiers (and the disk tier) looked up when it starts,
// anchored after each prefill chunk, left the end anchor and the session snapshot when it ends;
// generation checkpoints staged every --generation-checkpoint-tokens and resumed by an identical
// request.
//
// start(job) -> [offered(disk's offer)] -> [spill_fetched(spill reader's reply)] ->
// [restored(disk's read reply)] -> [encoded(vision encoder's reply)] -> [planned(disk's write
// lines)] -> step()* until
// step_again is false (the finished event and the ledger entry come with the last one). With a
// disk tier, a client's request waits in the restoring phase for the disk's offer (asked for
// when it starts), then, when the disk may serve its start (the offer beats the device tiers, or
// a generation checkpoint may exist), for the read; a request whose prefill forwards images
// the vision cache does not hold waits there for the vision encoder; a request
// that will write to the disk waits in the planning phase for its admission. Cancel, clear and
// stats are handled in those phases like in any other. A request that cannot start answers a
// failed event and an error entry at once. cancel(id) between two steps ends the running request at its next
// step; a cancel that found no such request (it passed its job in the mailbox) ends that job as soon as it
// starts. A tier call that throws (an allocation that failed mid-copy) is a refusal: the request goes on, and
// slot 0's resident prefix, whose state is then uncertain, starts over. Not thread-safe: one owner (the board
// actor).
class board_runner {
 public:
  board_runner(std::shared_ptr<engine> eng, board_runner_options opts);
  board_runner(const board_runner&) = delete;
  board_runner& operator=(const board_runner&) = delete;

  enum class phase { idle, restoring, planning, running };

  board_events start(board_job job);
  // The disk's answer to start()'s disk_offer (an empty reply when the disk could not be asked).
  board_events offered(disk_offer_reply reply);
  // The disk's answer to disk_read (a failure when the disk could not be asked).
  board_events restored(disk_read_reply reply);
  // The disk's answer to disk_plan (empty lines when the disk could not be asked).
  board_events planned(const disk_write_lines& lines);
  // The spill reader's answer to start()'s spill_read (its outcome filled; a failed read, or
  // null when the reader could not be asked, is the tiers above or cold).
  board_events spill_fetched(spill_fetch_ptr f);
  board_events encoded(vision_encode_ptr job);
  board_events step();
  // A decode step batched with other slots' (slot_board): the running request's engine and the
  // token its next step forwards, when that step is a plain decode token (batch_token()); then
  // the step once the caller forwarded it with decode_batch. step_forwarded() gives the events
  // step() would have for a one-token step.
  std::optional<token_id> batch_token() const;
  board_events step_forwarded();
  // The same with a verify round (generation_session::batch_rows, step_rows): the rows to
  // forward (the pending token, then drafts; at most max_rows), and the step once forwarded.
  std::vector<token_id> batch_rows(std::size_t max_rows);
  board_events step_rows();
  void cancel(const std::string& id);
  // Empties a tier here (the device tiers; the disk tier's offer and staging); nullopt when this
  // server has no such tier (the disk without --cache-dir). The disk's files are the disk
  // actor's to clear.
  std::optional<std::vector<cache_tier>> clear(cache_tier tier);
  // A submission's reply came back (or failed): its staged bytes leave the pool.
  void disk_released(std::uint64_t bytes);

  // A planned stop: the resident conversation (marked to be read back at the next start) and
  // the parked one, staged for the spill writer; nothing while a request runs or without a
  // spill.
  std::vector<spill_job_ptr> spill_for_stop();
  // At the start, before any request: a conversation a planned stop spilled, read back and
  // verified, becomes this slot's resident prompt (its rows in the engine, its anchors and end
  // anchor in the resident prefix). False (the slot untouched) when it cannot be read.
  bool read_back(std::uint64_t manifest_id);

  // Compaction requests this slot served as continuations, from a prewritten summary, and as
  // sent (the guard failed or no conversation with an end anchor was held).
  long compactions_continued() const { return slot_.counters.compactions_continued; }
  long compactions_prewritten() const { return slot_.counters.compactions_prewritten; }
  long compactions_as_sent() const { return slot_.counters.compactions_as_sent; }

  // The compaction worker's idle work (docs/COMPACTION.md). idle_candidate: this slot is idle and
  // holds an opencode session's conversation of at least `min_tokens` tokens up to its end anchor
  // (and nothing above it), with no summary prewritten for it from `tmpl`'s continuation turn.
  // start_idle runs `tmpl` (an idle_prewrite job: its plan, sampling and max_tokens; throws otherwise) as
  // that conversation's continuation (an idle_run), one chunk or block per step(); its events carry no stream
  // events and no ledger entry, and the last one carries `idle`. preempt_idle stops it at once (between two
  // steps), leaving the conversation as it was.
  bool idle_candidate(const board_job& tmpl, std::size_t min_tokens) const;
  board_events start_idle(board_job tmpl);
  board_events preempt_idle();
  bool running_idle() const { return run_ && run_->idle(); }
  long idle_started() const { return slot_.counters.idle_started; }
  long idle_preempted() const { return slot_.counters.idle_preempted; }
  long idle_finished() const { return slot_.counters.idle_finished; }
  // All of the above as the stats' probe (prewrites_kept is the board's, left 0).
  compaction_stats compaction() const;

  // Speculative decoding's counters over every request this runner ran (the running one's so far).
  speculative_counters speculation() const;
  // The tiers' stats with the disk staging's.
  cache_stats stats() const;
  bool has_disk() const { return slot_.staging != nullptr; }
  phase current_phase() const;
  bool busy() const { return run_ != nullptr; }
  // The running request's prefill, while it prefills (run::progress).
  std::optional<run::prefill_progress> prefill_progress() const {
    return run_ ? run_->progress() : std::nullopt;
  }
  // The running request is answered from the response cache (it reads nothing of the engine).
  bool answering_from_response() const {
    return run_ && run_->replayed() && run_->source() == cache_source::response;
  }
  const response_cache* responses() const { return slot_.responses.get(); }
  const std::string& running_id() const;
  long steps() const { return slot_.counters.steps; }
  cache_tiers& tiers() { return *slot_.tiers; }
  const cache_tiers& tiers() const { return *slot_.tiers; }
  engine& slot0() { return *slot_.eng; }
  // The running request's engine (the slot's).
  engine& active() { return *slot_.eng; }

 private:
  // Puts `r` on the slot: its first events; it stays unless it ended at once.
  board_events launch(std::unique_ptr<run> r);
  std::unique_ptr<run> compaction_run(board_job j, std::int64_t start_ns);
  board_events ended_or_running(board_events out);
  bool take_early_cancel(const std::string& id);

  slot_state slot_;
  std::unique_ptr<run> run_;               // the running request; null: the slot is idle
  std::deque<std::string> early_cancels_;  // the last few cancels that found no request running
};

}  // namespace anchorage
