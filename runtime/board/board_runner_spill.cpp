// The slot's part of the session spill (docs/SPILL.md) outside any run: a planned stop's spill
// and the read-back at the start.
#include "runtime/board/board_runner.hpp"
#include "runtime/core/log.hpp"
#include "runtime/tiers/spill_keeper.hpp"

namespace anchorage {

std::vector<spill_job_ptr> board_runner::spill_for_stop() {
  std::vector<spill_job_ptr> out;
  if (!slot_.spill || busy()) return out;
  const resident_prefix& r = slot_.tiers->resident();
  const device_tier& d = slot_.tiers->device();
  const state_adapter& state = slot_.eng->cache_state();
  const auto where = slot_.eng->where();
  try {
    if (auto j = slot_.spill->stage_resident(r, state, where, d.resident_session(), slot_.opts.slot, true,
                                             "drain"))
      out.push_back(std::move(j));
    if (auto j = slot_.spill->stage_parked(r, state, where, d.parked_session(), slot_.opts.slot, "drain"))
      out.push_back(std::move(j));
  } catch (const std::exception& e) {
    log_warn() << "staging a session spill failed (" << e.what() << ")";
  }
  for (auto& j : slot_.pending_spills) out.push_back(std::move(j));
  slot_.pending_spills.clear();
  return out;
}

bool board_runner::read_back(std::uint64_t id) {
  if (!slot_.spill || busy() || !slot_.tiers->spill()) return false;
  auto read = slot_.spill->read(id);
  if (!read) return false;
  try {
    // The engine stands where the conversation stood.
    slot_.tiers->spill()->take_in(slot_.eng->cache_state(), *read, std::nullopt);
  } catch (const std::exception& e) {
    log_warn() << "reading a session spill back failed (" << e.what() << "); the slot starts empty";
    slot_.tiers->clear(cache_tier::resident);
    slot_.eng->reset();
    return false;
  }
  slot_.read_back = true;
  // The conversation's session, as it was spilled; opencode's ids open with "ses_".
  slot_.end_session = slot_.tiers->device().resident_session();
  slot_.end_opencode = slot_.end_session.rfind("header:ses_", 0) == 0;
  return true;
}

}  // namespace anchorage
