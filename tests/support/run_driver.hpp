#pragma once
// A run (runtime/board/run.hpp) driven by hand over a slot_state, without the slot around it:
// drive() steps it to its end, collecting its events (no disk tier, no spill reads; an image's
// encode runs in place, as the vision encoder would run it).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/board/run.hpp"
#include "runtime/vision/vision_encode.hpp"
#include "tests/support/engine_fixture.hpp"

namespace anchorage::testing {

struct driven {
  std::vector<stream_event> events;
  std::optional<ledger_entry> done;
  std::optional<idle_reply> idle;
  std::string text;
  long steps = 0;
  bool tiers_changed = false;
  std::shared_ptr<const std::vector<token_id>> suffix_add;
  const stream_event* finished() const {
    return !events.empty() && events.back().what == stream_event::kind::finished ? &events.back() : nullptr;
  }
};

inline void collect(driven& d, board_events& out) {
  for (auto& ev : out.events) {
    for (const auto& x : ev.deltas) d.text += x.text;
    d.events.push_back(std::move(ev));
  }
  if (out.done) d.done = out.done;
  if (out.idle) d.idle = out.idle;
  if (out.suffix_add) d.suffix_add = out.suffix_add;
  d.tiers_changed = d.tiers_changed || out.tiers_changed;
}

// Steps `r` from `first` (its start()'s events) until it ends.
inline driven drive(run& r, board_events first) {
  driven d;
  board_events out = std::move(first);
  for (;;) {
    collect(d, out);
    if (out.vision_encode) {  // the vision encoder's part, in place
      vision_encode_ptr job = std::move(out.vision_encode);
      execute_vision_encode(*job);
      out = r.encoded(std::move(job));
      continue;
    }
    if (!out.step_again) return d;
    ++d.steps;
    out = r.step();
  }
}

}  // namespace anchorage::testing
