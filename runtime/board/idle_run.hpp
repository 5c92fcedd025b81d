#pragma once
// The compaction worker's idle work (docs/COMPACTION.md; runtime/board/run.hpp): the held
// conversation's continuation from its end anchor, a guest in scratch rows above it, run one
// chunk or block per step like a request. It tells no client anything (no stream events, no
// ledger entry, no suffix ids, the slot's end session unchanged); its last events carry the
// worker's answer, and a finished run's summary is kept in the slot's prewrites. preempt() stops
// it at once (between two steps), leaving the conversation as it was.
#include <vector>

#include "runtime/board/continuation_run.hpp"

namespace anchorage {

class idle_run final : public continuation_run {
 public:
  // `job`: continuation_job's of the worker's template; `end_rows`: the conversation it
  // continues, up to its end anchor.
  idle_run(slot_state& slot, board_job job, std::int64_t start_ns, std::vector<token_id> end_rows);

  bool idle() const override { return true; }
  board_events preempt();

 protected:
  bool leaves_conversation() const override { return false; }
  board_events after_step(generation_session::step_result r, bool was_prefilling) override;
  void finish(board_events& out) override;

 private:
  void finish_idle(board_events& out, bool preempted);

  std::vector<token_id> end_rows_;
  long first_step_ = 0;  // the slot's step count when the run started
};

}  // namespace anchorage
