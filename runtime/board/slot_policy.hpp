#pragma once
// Which slot a request runs on (issue 13, "the tiers per slot"): a policy over what each slot
// holds, no engine, no actor.
//
// Each slot keeps its own resident prefix. A request goes, among the idle slots, to
//   1. the one whose resident prefix resumes it deepest (resident_prefix::offer: its end anchor,
//      a grid anchor, its parked or pinned prompt), the slot of the same session winning a tie.
//      Tokens shared below every anchor (two system prompts that both start "You are ") resume
//      nothing, so they are no reason to take a slot;
//   2. else a guest (a short side request: a title, a subagent's probe) or any request to an
//      empty slot, which costs nobody anything;
//   3. else the slot whose resident prompt is worth least: the one used least recently (fewer
//      resident tokens break a tie), whose prompt the request then replaces (the slot's tiers park
//      it first).
// A busy slot is never chosen; with every slot busy there is no choice and the request waits.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/core/token.hpp"

namespace anchorage {

struct slot_view {
  bool busy = false;                                // serving a request now
  const std::vector<token_id>* resident = nullptr;  // the tokens its rows hold (null: none)
  std::string session_key;                          // the session it served last
  std::uint64_t last_used = 0;                      // when it last took a request (larger: later)
  std::size_t resumes = 0;  // where its resident prefix would resume the prompt (0: nowhere)
};

enum class slot_reason { shared, empty, least_worth };

struct slot_choice {
  std::size_t slot = 0;
  slot_reason why = slot_reason::empty;
  std::size_t shared = 0;  // where the slot resumes the prompt (slot_view::resumes)
};

struct slot_policy {
  // `slots`: every slot's view for one request, its `resumes` filled in for that request's prompt.
  std::optional<slot_choice> choose(const std::string& session_key,
                                    const std::vector<slot_view>& slots) const;
};

const char* to_string(slot_reason r);

}  // namespace anchorage
