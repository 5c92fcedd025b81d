#pragma once
// An answer replayed without the engine (runtime/board/run.hpp): the session replays known
// output ids (the deltas, the parser, stop strings and max_tokens as a live run has them) with
// their finish reason; nothing is prefilled or decoded, the engine is not read, the tiers are not
// asked and keep nothing of it. Two sources:
//   - the response cache (docs/CACHES.md): an identical determined request's answer; `source`
//     response, resumed at the whole prompt;
//   - a summary the compaction worker prewrote (docs/COMPACTION.md): the compaction request's
//     continuation answered from it; `source` end, `via` prewritten.
// The constructor throws when the ids do not replay (not this job's output after all): the slot
// then serves the request live.
#include <string>
#include <vector>

#include "runtime/board/run.hpp"

namespace anchorage {

class replayed_run final : public run {
 public:
  // The response cache's answer.
  replayed_run(slot_state& slot, board_job job, std::int64_t start_ns, cached_response hit);
  // A prewritten summary; `job`: the compaction request's continuation (continuation_job).
  replayed_run(slot_state& slot, board_job job, std::int64_t start_ns, const prewritten_summary& s);

  board_events start() override { return running_events(); }
  bool replayed() const override { return true; }

 protected:
  void finish(board_events& out) override { report(out); }
};

}  // namespace anchorage
