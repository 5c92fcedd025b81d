#pragma once
// The board's work over N slots (--parallel N, issue 13): each slot is a board_runner with its own
// engine, rows and resident prefix; the device tiers' budget is one for all of them. Requests run
// concurrently, one step of one slot at a time: a prefill chunk, or a block of decode tokens.
//
// start(job) puts a request on the slot slot_policy chooses (an idle one; the caller starts no
// more requests than there are idle slots). step() steps the next slot that asked for a step,
// round robin, so a slot waits at most one step of every other running slot between two of its
// own, and a request that arrives during a long prefill starts after that prefill's current
// chunk. The decoding slots decode together, one token each per batched step (decode_batch;
// their rows are decode rows, above the taint, as a solo decode's). Events come back tagged with
// their slot: the disk's replies go back to that slot.
//
// Not thread-safe: one owner (the board actor).
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "protocol/cache_settings.hpp"
#include "runtime/cache/memory_budget.hpp"
#include "runtime/board/board_runner.hpp"
#include "runtime/board/slot_policy.hpp"

namespace anchorage {

struct slot_events {
  std::size_t slot = 0;
  board_events events;
};

class slot_board {
 public:
  // One slot per engine (at least one).
  slot_board(std::vector<std::shared_ptr<engine>> engines, board_runner_options opts,
             slot_policy policy = {});

  std::size_t size() const { return runners_.size(); }
  std::size_t idle_slots() const;
  // Nothing runs on any slot (a request or idle work) and no request waits for one.
  bool quiet() const { return idle_slots() == size(); }
  // The slot a request would take now (nullopt: every slot busy).
  std::optional<slot_choice> choose(const board_job& job) const;
  // Starts `job` on the slot choose() names. Throws std::logic_error when every slot is busy.
  slot_events start(board_job job);
  // A request that would resume deeper from a conversation whose spill is in flight (staged and
  // not committed: spill_keeper) than from anything a slot holds waits for that commit instead
  // of being served cold (docs/SPILL.md, "In flight"): admit() holds it and returns nullopt,
  // else starts it (requests that do not wait start at once). spill_committed() starts every held
  // request that waits no more, in arrival order. A held request takes no slot (idle_slots() counts it as
  // taken); a cancel reaches it when it starts (every runner remembers an early cancel).
  std::optional<slot_events> admit(board_job job);
  std::vector<slot_events> spill_committed();
  std::size_t waiting() const { return waiting_.size(); }
  // One step: of the next slot waiting for one, round robin; when that slot decodes and other
  // slots decode too (engines of one weight set), one batched decode token for all of them
  // (decode_batch: the weights read once). Empty when no slot waits for a step.
  std::vector<slot_events> step();
  bool wants_step() const;

  slot_events offered(std::size_t slot, disk_offer_reply reply);
  slot_events restored(std::size_t slot, disk_read_reply reply);
  slot_events planned(std::size_t slot, const disk_write_lines& lines);
  slot_events spill_fetched(std::size_t slot, spill_fetch_ptr f);
  slot_events encoded(std::size_t slot, vision_encode_ptr job);
  void disk_released(std::size_t slot, std::uint64_t bytes);
  void cancel(const std::string& id);
  // A clear of `all` drops the vision cache's entries too.
  std::optional<std::vector<cache_tier>> clear(cache_tier tier);
  // An operator's new device budgets, spill budget and vision cache budget (the disk's are the
  // disk actor's): set, and what they no longer allow evicted at once.
  void set_limits(const cache_settings& s);

  // The slots' tiers together (counters summed; the budget's limits are global) and each slot.
  cache_stats stats() const;
  bool has_disk() const { return runners_.front()->has_disk(); }
  board_runner& runner(std::size_t slot) { return *runners_.at(slot); }
  const board_runner& runner(std::size_t slot) const { return *runners_.at(slot); }
  // The session whose conversation slot k's rows hold (its resident prompt's: a guest or an
  // answer from the response cache leaves it as it was).
  const std::string& session_of(std::size_t k) const;
  // Whether slot k's request runs (any phase); the slot a running request id is on.
  std::optional<std::size_t> slot_of(const std::string& id) const;
  // A planned stop: every idle slot's resident and parked conversations, staged for the spill
  // writer (runtime/tiers/spill_keeper).
  std::vector<spill_job_ptr> spill_for_stop();
  const spill_keeper* spill() const { return spill_.get(); }
  spill_keeper* spill() { return spill_.get(); }
  // The compaction worker's idle work (board_runner::start_idle): on the first slot whose
  // conversation is a candidate, only when no slot is busy; nullopt when none is (or one is busy).
  std::optional<slot_events> start_idle(const board_job& tmpl, std::size_t min_tokens);
  // Any request or hold: the idle run (if one runs) stops now; its events carry the worker's answer.
  std::vector<slot_events> preempt_idle();
  bool idle_running() const;
  const compaction_prewrites& prewrites() const { return *prewrites_; }
  // The response cache the slots share; null when it is off.
  const response_cache* responses() const { return responses_.get(); }
  // Steps that decoded several slots in one batch.
  long batched_steps() const { return batched_steps_; }
  // Speculative decoding's counters over every slot.
  speculative_counters speculation() const {
    speculative_counters c;
    for (const auto& r : runners_) c.add(r->speculation());
    return c;
  }

 private:
  slot_events tagged(std::size_t slot, board_events ev);
  void read_back(const spill_keeper& keeper);
  std::vector<slot_events> batched_decode();
  bool waits_for_spill(const board_job& job) const;

  long batched_steps_ = 0;
  speculative_options speculative_;

  std::vector<std::unique_ptr<board_runner>> runners_;
  std::shared_ptr<memory_budget> budget_;
  std::shared_ptr<spill_keeper> spill_;
  std::shared_ptr<compaction_prewrites> prewrites_;
  std::shared_ptr<response_cache> responses_;
  std::shared_ptr<vision_tower> vision_;  // the model's vision tower (opts.vision), shared by the slots
  slot_policy policy_;
  std::vector<bool> wants_step_;          // by slot: its last events asked for one more step
  std::vector<std::uint64_t> last_used_;  // by slot: when it last took a request
  std::uint64_t clock_ = 0;
  std::size_t next_ = 0;           // where the round robin looks first
  std::deque<board_job> waiting_;  // held for a spill's commit, in arrival order
};

}  // namespace anchorage
