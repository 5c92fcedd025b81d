// The board runner's part of the session spill (docs/SPILL.md): the spills its eviction hook
// staged, a planned stop's spill, and the read-back at the start.
#include "runtime/core/log.hpp"
#include "runtime/tiers/board_runner.hpp"

namespace anchorage {

void board_runner::take_spills(board_events& out) {
  for (auto& j : pending_spills_) out.spill_writes.push_back(std::move(j));
  pending_spills_.clear();
}

std::vector<spill_job_ptr> board_runner::spill_for_stop() {
  std::vector<spill_job_ptr> out;
  if (!spill_ || busy()) return out;
  const resident_prefix& r = tiers_->resident();
  const device_tier& d = tiers_->device();
  const state_adapter& state = eng_->cache_state();
  try {
    if (auto j = spill_->stage_resident(r, state, eng_->where(), d.resident_session(), slot_, true, "drain"))
      out.push_back(std::move(j));
    if (auto j = spill_->stage_parked(r, state, eng_->where(), d.parked_session(), slot_, "drain"))
      out.push_back(std::move(j));
  } catch (const std::exception& e) {
    log_warn() << "staging a session spill failed (" << e.what() << ")";
  }
  for (auto& j : pending_spills_) out.push_back(std::move(j));
  pending_spills_.clear();
  return out;
}

bool board_runner::read_back(std::uint64_t id) {
  if (!spill_ || busy() || !tiers_->spill()) return false;
  auto read = spill_->read(id);
  if (!read) return false;
  try {
    // The engine stands where the conversation stood.
    tiers_->spill()->take_in(eng_->cache_state(), *read, std::nullopt);
  } catch (const std::exception& e) {
    log_warn() << "reading a session spill back failed (" << e.what() << "); the slot starts empty";
    tiers_->clear(cache_tier::resident);
    eng_->reset();
    return false;
  }
  read_back_ = true;
  // The conversation's session, as it was spilled; opencode's ids open with "ses_".
  end_session_ = tiers_->device().resident_session();
  end_opencode_ = end_session_.rfind("header:ses_", 0) == 0;
  return true;
}

}  // namespace anchorage
