#include "runtime/board/slot_state.hpp"

#include "runtime/tiers/spill_keeper.hpp"

namespace anchorage {

slot_state::slot_state(std::shared_ptr<engine> e, const board_runner_options& o)
    : eng(std::move(e)), opts(o) {
  tiers = std::make_unique<cache_tiers>(opts.cache, eng->where(), opts.budget);
  if (opts.held) tiers->share_record(opts.held);
  if (opts.disk && opts.cache.enabled) {
    staging = std::make_unique<disk_staging>(eng->layout(), opts.disk->stage_bytes);
    tiers->attach_disk();
  }
  responses = opts.responses;
  if (!responses && opts.cache.enabled && opts.cache.response_cache_bytes > 0)
    responses = std::make_shared<response_cache>(opts.cache.response_cache_bytes);
  if (!opts.spill || !opts.cache.enabled) return;
  spill = opts.spill;
  // An eviction spills what the park cannot hold, before the rows are rewritten.
  tiers->attach_spill(
      spill, [this](const state_adapter& state, const resident_prefix& r, const std::string& session) {
        try {
          if (auto job = spill->stage_resident(r, state, eng->where(), session, opts.slot, false, "evict"))
            pending_spills.push_back(std::move(job));
        } catch (const std::exception& ex) {
          log_warn() << "staging a session spill failed (" << ex.what() << ")";
        }
      });
}

}  // namespace anchorage
