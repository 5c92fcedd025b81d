// The board runner's generation checkpoints (docs/DISK_TIER.md): staged every
// --generation-checkpoint-tokens output tokens of a decode on slot 0, and a generation cut short
// resumed from its checkpoint by an identical request.
#include "runtime/disk/disk_service.hpp"
#include "runtime/tiers/board_runner.hpp"
#include "runtime/tiers/board_runner_detail.hpp"

namespace anchorage {

std::size_t board_runner::checkpoint_every() const { return disk_opts_ ? disk_opts_->checkpoint_tokens : 0; }

// A generation cut short (a restart, a client gone) by an identical request: its durable
// checkpoint, read and verified by the disk, applied whole into slot 0 and the session resumed
// from it, the output so far replayed. False (slot 0 reset, the checkpoint dropped when it
// does not resume) when it cannot be taken.
bool board_runner::resume_checkpoint(const verified_checkpoint& c, board_events& out) {
  engine& e = *eng_;
  e.abandon_prefill();
  try {
    disk_service::apply_checkpoint(c, e.cache_state());
  } catch (const std::exception& ex) {  // an allocation or a copy failed midway: slot 0 is unknown
    log_warn() << "restoring a generation checkpoint failed (" << ex.what() << ")";
    tiers_->clear(cache_tier::resident);
    e.reset();
    return false;
  }
  const checkpoint_meta& meta = c.read.meta;
  tiers_->expect(info_of(job_));
  // The rows are the checkpoint's now: the resident prefix's are gone.
  tiers_->clear(cache_tier::resident);
  active_ = &e;
  job_.seed = meta.seed;
  generation_job g = session_job();
  g.resume_output.assign(meta.tokens.begin() + static_cast<long>(meta.prompt_tokens), meta.tokens.end());
  try {
    session_ = std::make_unique<generation_session>(e, std::move(g));
  } catch (const std::exception& ex) {
    log_warn() << "a generation checkpoint does not resume (" << ex.what() << ")";
    out.generations_finished.push_back(job_key_);  // its checkpoints go
    e.reset();
    return false;
  }
  resume_offer o;
  o.source = cache_source::checkpoint;
  o.at = asked_.size();
  o.served = asked_;
  o.exact = false;
  o.rows_replaced = true;
  guarded([&] { tiers_->begin(o, e.cache_state()); });
  out.generations_started.push_back(job_key_);
  job_.cache = x_cache_info{};
  job_.cache.source = to_string(cache_source::checkpoint);
  job_.cache.resumed_at = static_cast<long>(e.length());
  job_.cache.restore_ms = static_cast<double>(steady_ns() - start_ns_) / 1e6;
  next_checkpoint_ = session_->output_ids().size() + checkpoint_every();
  served_as_asked_ = true;
  source_ = cache_source::checkpoint;
  return true;
}

// Every --generation-checkpoint-tokens output tokens of a decode on slot 0: the whole state
// staged and written behind.
void board_runner::maybe_checkpoint(board_events& out) {
  const std::size_t every = checkpoint_every();
  // A served prompt the end alignment changed is not the one an identical request sends: its
  // checkpoint could never be found again.
  if (every == 0 || active_ != eng_.get() || !served_as_asked_ || !session_->checkpointable()) return;
  const auto& ids = session_->output_ids();
  if (ids.size() < next_checkpoint_) return;
  next_checkpoint_ = ids.size() + every;
  checkpoint_meta meta;
  meta.key_hash = job_key_;
  meta.seed = job_.seed;
  meta.seed_explicit = job_.seed_explicit;
  meta.prompt_tokens = job_.prompt.size();
  meta.tokens.assign(job_.prompt.begin(), job_.prompt.end());
  meta.tokens.insert(meta.tokens.end(), ids.begin(), ids.end());
  if (active_->length() + 1 != meta.tokens.size()) return;
  try {
    staging_->stage_checkpoint(active_->cache_state(), meta);
  } catch (const std::exception& e) {
    log_warn() << "staging a generation checkpoint failed (" << e.what() << ")";
  }
  take_submissions(out);
}

}  // namespace anchorage
