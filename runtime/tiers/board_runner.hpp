#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/board_job.hpp"
#include "protocol/compaction_messages.hpp"
#include "protocol/cache_source.hpp"
#include "protocol/disk_messages.hpp"
#include "runtime/disk/disk_staging.hpp"
#include "runtime/disk/disk_tier_options.hpp"
#include "runtime/engine/engine.hpp"
#include "runtime/generation/generation_session.hpp"
#include "runtime/cache/response_cache.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/tiers/cache_tiers.hpp"
#include "runtime/tiers/compaction_prewrites.hpp"
#include "runtime/speculative/lookup_source.hpp"
#include "runtime/speculative/speculative_options.hpp"

namespace anchorage {

struct board_runner_options {
  int decode_block = 4;  // tokens per step of a decode
  cache_options cache;   // the device tiers
  // The disk tier (--cache-dir), an actor of its own: its options (the staging pool, the
  // checkpoint interval). Off without options or with the cache off.
  std::optional<disk_tier_options> disk;
  // The device tiers' budget when several slots share it (slot_board); null: the runner's own.
  std::shared_ptr<memory_budget> budget;
  // The session spill (--session-spill), one for every slot; null: none. `slot`: this
  // runner's slot, which its spills name.
  std::shared_ptr<spill_keeper> spill;
  int slot = 0;
  // The compaction worker's summaries (one for every slot); null: none are kept or used.
  std::shared_ptr<compaction_prewrites> prewrites;
  // The response cache (one for every slot, slot_board); null: the runner makes its own when
  // cache.response_cache_bytes > 0 and the cache is on, else there is none.
  std::shared_ptr<response_cache> responses;
  // Speculative decoding (--speculative, --draft-max; docs/SPECULATIVE.md), and the persistent
  // suffix store's read side for the lookup drafter (one for every slot, owned by the board
  // actor, which installs the writer's snapshots in it); null: the lookup drafter reads the
  // request's own tokens only.
  speculative_options speculative;
  std::shared_ptr<lookup_source> lookup;
};

// What one call of the runner asks its owner to send: the disk's messages (`disk_read` at high
// priority, its reply to restored(); `disk_plan`, its reply to planned(); each submission, its
// reply's released bytes to disk_released(); the generations started and finished), `events`
// to `sink` (the request's), `done` to the conductor, the tiers' stats when `tiers_changed`,
// and one more step() when `step_again`.
struct board_events {
  sink_actor sink;
  std::vector<stream_event> events;
  std::optional<ledger_entry> done;
  std::optional<disk_read_request> disk_read;
  std::optional<disk_plan_request> disk_plan;
  std::vector<disk_submission_ptr> disk_submissions;
  std::vector<std::uint64_t> generations_started, generations_finished;
  // Spills staged (an eviction): each goes to the spill writer, its reply to spill_written().
  std::vector<spill_job_ptr> spill_writes;
  // A spilled conversation to read and verify (the spill tier's planned offer): to the spill
  // reader, its reply to spill_fetched() (the runner waits in the restoring phase).
  spill_fetch_ptr spill_read;
  // A request ended: the ids the engine read and wrote for it (its prompt, then its output), for
  // the persistent suffix store's writer (docs/SUFFIX_STORE.md). Not set for idle work, a
  // replayed answer or a request that failed before its prompt was forwarded.
  std::shared_ptr<const std::vector<token_id>> suffix_add;
  // Idle work ended (finished or preempted): the compaction worker's answer.
  std::optional<idle_reply> idle;
  bool tiers_changed = false;
  bool step_again = false;
};

// The board's work on one slot, without the actor: one request at a time over the slot's engine
// (its rows are the resident prompt), the device tiers (and the disk tier) looked up when it starts,
// anchored after each prefill chunk, left the end anchor and the session snapshot when it ends;
// generation checkpoints staged every --generation-checkpoint-tokens and resumed by an identical
// request.
//
// start(job) -> [spill_fetched(spill reader's reply)] -> [restored(disk's read reply)] ->
// [planned(disk's write lines)] -> step()* until
// step_again is false (the finished event and the ledger entry come with the last one). With a
// disk tier, a request whose start the disk may serve (its queued offer beats the device tiers,
// or a generation checkpoint may exist) waits in the restoring phase for the read; a request
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
  // The disk's answer to start()'s disk_read (a failure when the disk could not be asked).
  board_events restored(disk_read_reply reply);
  // The disk's answer to disk_plan (empty lines when the disk could not be asked).
  board_events planned(const disk_write_lines& lines);
  // The spill reader's answer to start()'s spill_read (its outcome filled; a failed read, or
  // null when the reader could not be asked, is the tiers above or cold).
  board_events spill_fetched(spill_fetch_ptr f);
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
  long compactions_continued() const { return compactions_continued_; }
  long compactions_prewritten() const { return compactions_prewritten_; }
  long compactions_as_sent() const { return compactions_as_sent_; }

  // The compaction worker's idle work (docs/COMPACTION.md). idle_candidate: this slot is idle and
  // holds an opencode session's conversation of at least `min_tokens` tokens up to its end anchor
  // (and nothing above it), with no summary prewritten for it from `tmpl`'s continuation turn.
  // start_idle runs `tmpl` (its plan, sampling and max_tokens) as that conversation's
  // continuation, a guest in scratch rows above the end anchor, one chunk or block per step();
  // its events carry no stream events and no ledger entry, and the last one carries `idle`.
  // preempt_idle stops it at once (between two steps), leaving the conversation as it was.
  bool idle_candidate(const board_job& tmpl, std::size_t min_tokens) const;
  board_events start_idle(board_job tmpl);
  board_events preempt_idle();
  bool running_idle() const { return busy() && idle_; }
  long idle_started() const { return idle_started_; }
  long idle_preempted() const { return idle_preempted_; }
  long idle_finished() const { return idle_finished_; }

  // Speculative decoding's counters over every request this runner ran (the running one's so far).
  speculative_counters speculation() const;
  // The tiers' stats with the disk staging's.
  cache_stats stats() const;
  bool has_disk() const { return staging_ != nullptr; }
  phase current_phase() const { return phase_; }
  bool busy() const { return phase_ != phase::idle; }
  // The running request is answered from the response cache (it reads nothing of the engine).
  bool answering_from_response() const { return busy() && response_served_; }
  const response_cache* responses() const { return responses_.get(); }
  const std::string& running_id() const { return job_.id; }
  long steps() const { return steps_; }
  cache_tiers& tiers() { return *tiers_; }
  const cache_tiers& tiers() const { return *tiers_; }
  engine& slot0() { return *eng_; }
  // The running request's engine (the slot's).
  engine& active() { return *active_; }

 private:
  template <class F>
  void guarded(F&& f);
  generation_job session_job() const;
  resume_offer cold_after_failure(const resume_offer& failed, std::vector<token_id> prompt);
  board_events begin_request();
  void restore_start(resume_offer& o);
  bool resume_checkpoint(const verified_checkpoint& c, board_events& out);
  void maybe_checkpoint(board_events& out);
  void finish(board_events& out);
  void take_submissions(board_events& out);
  board_events run_now(board_events out);
  board_events after_step(generation_session::step_result r, bool was_prefilling);
  board_events after_step_events(generation_session::step_result r, bool was_prefilling);
  std::size_t checkpoint_every() const;
  board_events failed(const board_job& j, int status, const std::string& message);
  void take_early_cancel();

  std::shared_ptr<engine> eng_;
  int decode_block_ = 4;
  speculative_options speculative_;
  std::shared_ptr<lookup_source> lookup_;
  speculative_counters speculation_done_;
  std::unique_ptr<cache_tiers> tiers_;
  std::optional<disk_tier_options> disk_opts_;
  std::unique_ptr<disk_staging> staging_;  // with a disk tier
  bool staging_active_ = false;            // the running request writes to the disk
  engine* active_ = nullptr;
  phase phase_ = phase::idle;
  board_job job_;                // the request from start() on
  std::vector<token_id> asked_;  // its prompt as the client sent it
  resume_offer pending_;         // the plan made at start(), restored once the disk answered
  bool replan_ = false;          // a clear came while the disk read: the plan is stale
  bool fetching_spill_ = false;  // restoring: the spill reader reads the planned conversation
  void replan();
  bool cancel_pending_ = false;  // a cancel came before the session began
  std::int64_t start_ns_ = 0;
  cache_source source_ = cache_source::cold;
  std::unique_ptr<generation_session> session_;
  std::int64_t first_token_ns_ = 0;
  long steps_ = 0;
  std::uint64_t job_key_ = 0;              // the running generation's checkpoint key (generation_key)
  bool served_as_asked_ = true;            // the served prompt is the client's (no end alignment)
  std::size_t next_checkpoint_ = 0;        // output ids at which the next checkpoint is staged
  std::deque<std::string> early_cancels_;  // the last few cancels that found no request running
  std::shared_ptr<spill_keeper> spill_;
  int slot_ = 0;
  std::vector<spill_job_ptr> pending_spills_;  // staged by the eviction hook, not handed out yet
  // A compaction request served as the continuation of this slot's conversation (docs/COMPACTION.md).
  bool compaction_served_ = false;
  long compactions_continued_ = 0, compactions_as_sent_ = 0, compactions_prewritten_ = 0;
  void maybe_continue_compaction();
  void continue_from_end(const std::vector<token_id>& end_rows);
  std::optional<std::vector<token_id>> held_elsewhere(const compaction_plan& plan,
                                                      const tokenizer& tok) const;
  bool compaction_guest_ = true;  // the continuation runs as a guest (its conversation is in place)
  // The session whose conversation holds this slot's end anchor (its last request that was no
  // guest), and whether it is opencode's.
  std::string end_session_;
  bool end_opencode_ = false;
  // Idle work runs (job_.idle), and the summary a compaction request is answered from.
  std::shared_ptr<compaction_prewrites> prewrites_;
  bool idle_ = false;
  std::vector<token_id> idle_end_rows_;
  long idle_steps_ = 0;
  long idle_started_ = 0, idle_preempted_ = 0, idle_finished_ = 0;
  std::optional<prewritten_summary> prewritten_;
  board_events begin_prewritten();
  // The response cache: the running request's key (none: not a determined request, or no
  // cache), and whether its answer is the cache's.
  std::shared_ptr<response_cache> responses_;
  std::optional<response_key> response_key_;
  bool response_served_ = false;
  board_events begin_response(cached_response hit);
  bool replayed() const { return prewritten_.has_value() || response_served_; }
  void keep_response();
  void finish_idle(board_events& out, bool preempted);
  bool read_back_ = false;                      // the resident prompt came from the spill, unused since
  cache_source reported_ = cache_source::cold;  // the running request's source as reported
  void take_spills(board_events& out);
};

}  // namespace anchorage
