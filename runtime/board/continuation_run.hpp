#pragma once
// A compaction request served as the continuation of the conversation the board holds
// (docs/COMPACTION.md; runtime/board/run.hpp): its rows up to the end anchor, then the plan's one
// turn. In place it runs as a guest, so the conversation's rows, anchors and end anchor stay as
// they were and its next ordinary turn resumes at its end anchor; parked or spilled, it comes
// back into place like its next turn would and the continuation writes above that end. Its
// `via` is "compaction"; the disk keeps nothing of it, no checkpoint names it, and the tiers keep
// no end anchor of it (the conversation's own stays its end).
#include <optional>
#include <vector>

#include "runtime/board/generation_run.hpp"

namespace anchorage {

// Where a compaction request continues: the held conversation's tokens up to its end anchor, the
// turn appended there, and whether that conversation is the one in the slot's rows.
struct continuation_choice {
  std::vector<token_id> end_rows;
  std::vector<token_id> turn;
  bool in_place = false;
};

// The conversation a compaction request `job` continues on this slot, when its guard holds and
// the continuation fits: the one in place, else the parked one, else the newest spilled one of
// this session, else of any session. None: it is served as sent.
std::optional<continuation_choice> choose_continuation(const slot_state& slot, const board_job& job);

// `job` as its continuation: the held rows and the turn as its prompt, the plan's reasoning
// start, no reasoning budget, max_tokens within the rows left.
board_job continuation_job(board_job job, const std::vector<token_id>& end_rows, std::size_t capacity);

class continuation_run : public generation_run {
 public:
  // `job`: continuation_job's. `in_place`: the conversation is the one in the slot's rows.
  continuation_run(slot_state& slot, board_job job, std::int64_t start_ns, bool in_place);

 protected:
  bool checkpointed() const override { return false; }
  bool force_guest() const override { return in_place_; }
  bool stages_disk() const override { return false; }
  bool reads_disk() const override { return false; }
  cache_via served_via(cache_via) const override { return cache_via::compaction; }
  bool keeps_end() const override { return false; }

 private:
  bool in_place_ = true;
};

}  // namespace anchorage
