// The generation run's start: the plan, the reads it waits for, the restore and the session.
#include "runtime/board/generation_run.hpp"

#include <algorithm>

#include "runtime/disk/disk_service.hpp"
#include "runtime/generation/generation_key.hpp"
#include "runtime/io/clock.hpp"
#include "runtime/tiers/spill_keeper.hpp"

namespace anchorage {

generation_run::generation_run(slot_state& slot, board_job job, std::int64_t start_ns,
                               std::optional<response_key> response)
    : run(slot, std::move(job), start_ns), response_key_(std::move(response)) {}

// The running request's live generation: to_generation_job's, with speculative decoding.
generation_job generation_run::session_job() const {
  generation_job g = to_generation_job(job_);
  g.speculative = slot_.opts.speculative;
  g.lookup = slot_.opts.lookup.get();
  return g;
}

request_info generation_run::plan_info() const {
  request_info info = info_of(job_);
  info.force_guest = force_guest();
  return info;
}

void generation_run::replan() { pending_ = slot_.tiers->plan(asked_, plan_info()); }

board_events generation_run::start() {
  asked_.assign(job_.prompt.begin(), job_.prompt.end());
  job_key_ = slot_.checkpoint_every() > 0 && checkpointed() ? generation_key(job_) : 0;
  next_checkpoint_ = slot_.checkpoint_every();
  cache_tiers& tiers = *slot_.tiers;
  if (auto* d = tiers.disk()) {
    d->expect(std::nullopt);
    // A client's request asks the disk for its offer first (at the slot's measured prefill
    // rate); the plan is made once it came, the disk's offer competing with the device tiers'.
    if (reads_disk() && job_.client()) {
      board_events out;
      out.sink = job_.sink;
      disk_offer_request rq;
      rq.prompt.assign(asked_.begin(), asked_.end());
      rq.floor = tiers.resident_floor(asked_);
      rq.prefill_tokens_per_s = tiers.prefill_tokens_per_s();
      rq.session_key = job_.session_key;
      out.disk_offer = std::move(rq);
      offering_ = true;
      phase_ = phase::restoring;
      return out;
    }
  }
  pending_ = tiers.plan(asked_, plan_info());
  return fetch();
}

board_events generation_run::offered(disk_offer_reply reply) {
  // A conversation the remote level brought: indexed before the plan, which may then take it
  // (and indexed even when this run went meanwhile: its files are in the folder).
  if (reply.spill && slot_.spill) slot_.spill->adopt(*reply.spill);
  if (phase_ != phase::restoring || !offering_) return {};
  offering_ = false;
  replan_ = false;  // a clear while the offer was asked for: the plan is made only now
  if (auto* d = slot_.tiers->disk())
    d->expect(std::move(reply.offer), reply.foreign_line, reply.declined_line);
  pending_ = slot_.tiers->plan(asked_, plan_info());
  return fetch();
}

// The reads the plan needs, each answered between the board's steps: the spilled conversation
// (the spill reader reads and verifies it off the board's thread), a checkpoint of this
// generation, the disk's prefix. None: the request begins now.
board_events generation_run::fetch() {
  fetching_spill_ = false;
  // Which read the plan's offer needs is its tier's answer (cache_tiers::fetch).
  const tier_fetch f = slot_.tiers->fetch(pending_);
  if (const auto* spill = std::get_if<spill_fetch_ptr>(&f)) {
    board_events out;
    out.sink = job_.sink;
    out.spill_read = *spill;
    fetching_spill_ = true;
    phase_ = phase::restoring;
    return out;
  }
  const auto* disk = std::get_if<disk_offer>(&f);
  if (!disk && job_key_ == 0) return begin_request();
  board_events out = checkpoint_read();
  if (disk) out.disk_read->offer = *disk;
  phase_ = phase::restoring;
  return out;
}

// The disk's read for this request: a checkpoint of this generation first, then the prefix.
board_events generation_run::checkpoint_read() {
  board_events out;
  out.sink = job_.sink;
  disk_read_request rq;
  rq.prompt.assign(asked_.begin(), asked_.end());
  if (job_key_ != 0) rq.checkpoint_key = job_key_;
  out.disk_read = std::move(rq);
  return out;
}

board_events generation_run::spill_fetched(spill_fetch_ptr f) {
  if (phase_ != phase::restoring || !fetching_spill_) return {};
  fetching_spill_ = false;
  if (replan_) {
    // A clear came while the spill was read: the plan again, without the disk's offer
    // (its bytes were never read); the read serves only if the same conversation is planned.
    replan_ = false;
    if (auto* d = slot_.tiers->disk()) d->expect(std::nullopt);
    replan();
  }
  if (f) slot_.tiers->take_fetched(f.get());
  if (job_key_ == 0 || pending_.source == cache_source::disk) return begin_request();
  // A checkpoint of this generation may still serve it: the disk reads that next.
  return checkpoint_read();
}

board_events generation_run::restored(disk_read_reply reply) {
  if (phase_ != phase::restoring) return {};
  board_events out;
  out.sink = job_.sink;
  if (!reply.error.empty()) log_warn() << "the disk read failed (" << reply.error << ")";
  if (reply.kind == disk_read_kind::checkpoint && reply.checkpoint &&
      resume_checkpoint(*reply.checkpoint, out)) {
    if (cancel_pending_) session_->cancel();
    phase_ = phase::running;
    out.step_again = true;
    return out;
  }
  auto* d = slot_.tiers->disk();
  if (!d) return begin_request();
  const std::shared_ptr<const verified_read> read =
      reply.kind == disk_read_kind::prefix ? std::move(reply.prefix) : nullptr;
  if (replan_) {
    // A clear came while the disk read: what the device tiers offered may be gone. The plan
    // again, with the disk's offer only if its bytes came (they were checked against the prompt).
    // Its bytes are in hand, so the cost rule does not weigh them again (disk_offer_tier::offer).
    const std::optional<disk_offer> taken = d->taken();
    d->expect(reply.kind == disk_read_kind::prefix ? taken : std::nullopt);
  }
  slot_.tiers->take_fetched(disk_fetched{read, reply.damaged});
  if (replan_) replan();
  board_events next = begin_request();
  next.generations_finished.insert(next.generations_finished.end(), out.generations_finished.begin(),
                                   out.generations_finished.end());
  return next;
}

// The cold path after a restore failed: what the restore wrote is unknown, so the resident rows
// are no longer trusted.
resume_offer generation_run::cold_after_failure(const resume_offer& failed) {
  slot_.tiers->clear(cache_tier::resident);
  resume_offer o;
  o.served = asked_;
  if (failed.via == cache_via::stash) o.via = failed.via;
  return o;
}

// The offer the plan made restored into the engine, or a cold reset. A restore that fails for
// any reason is the cold path. Sets job_.prompt (the served prompt) and job_.cache; returns the
// source as reported.
cache_source generation_run::restore_start(resume_offer& o) {
  engine& e = *slot_.eng;
  e.abandon_prefill();  // a request cancelled inside its prefill left its queue
  if (o.source != cache_source::cold) {
    try {
      slot_.tiers->restore(e.cache_state(), o);
    } catch (const std::exception&) {
      o = cold_after_failure(o);
    }
  }
  if (o.source == cache_source::cold) e.reset();
  // The first request that resumes in a conversation read back from the spill at the start
  // was served by the spill: its rows and anchors are the spill's.
  cache_source reported = o.source;
  if (slot_.read_back && o.via == cache_via::none &&
      (o.source == cache_source::end || o.source == cache_source::resident)) {
    reported = cache_source::spill;
    slot_.spill->count_hit(o.at);
  }
  if (o.via != cache_via::stash) slot_.read_back = false;
  job_.prompt.assign(o.served.begin(), o.served.end());
  job_.cache = x_cache_info{};
  job_.cache.source = reported;
  job_.cache.resumed_at = static_cast<long>(o.at);
  job_.cache.restore_ms = static_cast<double>(steady_ns() - start_ns_) / 1e6;
  return reported;
}

// The session over the served prompt; one that does not fit (an end alignment can lengthen it)
// starts cold instead. Throws when even that fails (or a cold one does not fit).
void generation_run::start_session(resume_offer& o) {
  try {
    slot_.set_media(job_, &encoded_);
    session_ = std::make_unique<generation_session>(*slot_.eng, session_job());
    return;
  } catch (const std::exception&) {
    if (o.source == cache_source::cold) throw;
    // The restore wrote sections (and, from the store, rows) the resident prefix does not know.
    o = cold_after_failure(o);
    slot_.eng->reset();
    job_.prompt.assign(asked_.begin(), asked_.end());
    job_.cache = x_cache_info{};
  }
  slot_.set_media(job_, &encoded_);
  session_ = std::make_unique<generation_session>(*slot_.eng, session_job());
}

// The images the prefill forwards from the planned resume that the vision cache does not hold
// go to the vision encoder first, off the board's thread (an encode takes seconds on a large
// tower, and the other slots decode meanwhile); the run waits in its restoring phase. nullopt:
// nothing to encode there (no images, all cached, a tower on the device, or the last answer
// failed: image_media then meets the failure in place and the request gets its 400).
std::optional<board_events> generation_run::encode_first() {
  vision_tower* tower = slot_.opts.vision.get();
  if (!tower || job_.images.empty() || encode_failed_) return std::nullopt;
  const bool cold = pending_.source == cache_source::cold;
  const std::vector<token_id>& served = cold || pending_.served.empty() ? asked_ : pending_.served;
  vision_encode_ptr job =
      tower->plan_encode(images_forwarded(served, cold ? 0 : pending_.at, job_.images, encoded_));
  if (!job) return std::nullopt;
  board_events out;
  out.sink = job_.sink;
  out.vision_encode = std::move(job);
  encoding_ = true;
  phase_ = phase::restoring;
  return out;
}

board_events generation_run::encoded(vision_encode_ptr job) {
  if (phase_ != phase::restoring || !encoding_) return {};
  encoding_ = false;
  if (job) {
    if (vision_tower* tower = slot_.opts.vision.get()) tower->take_encoded(*job);
    for (auto& [digest, rows] : job->by_digest()) encoded_[digest] = rows;
    if (!job->failure.empty()) encode_failed_ = true;
  } else {
    encode_failed_ = true;
  }
  if (replan_) {
    // A clear came while the images were encoded: the plan again, from the tiers as they are
    // (the reads the plan took stay with the tiers, which offer them only if still theirs).
    replan_ = false;
    if (auto* d = slot_.tiers->disk()) d->expect(std::nullopt);
    replan();
  }
  return begin_request();  // a replan that resumes lower may have more images to encode
}

// The request's start once the reads (if any) answered: the restore, the session, the tiers'
// begin, and (with a disk tier, for a request that is no guest) the admission of its writes.
board_events generation_run::begin_request() {
  if (auto encode = encode_first()) return std::move(*encode);
  resume_offer o = std::move(pending_);
  pending_ = resume_offer{};
  source_ = restore_start(o);
  try {
    start_session(o);
  } catch (const std::exception& e) {
    phase_ = phase::ended;
    return failed_events(job_, 400, e.what());
  }
  board_events out;
  out.sink = job_.sink;
  slot_.guarded([&] { slot_.tiers->begin(o, slot_.eng->cache_state()); });
  if (const auto& m = slot_.tiers->last_miss()) {
    job_.cache.miss = m->reason;
    job_.cache.miss_tokens = static_cast<long>(m->tokens);
  }
  slot_.take_spills(out);
  const cache_via via = slot_.tiers->running_via();
  job_.cache.via = served_via(via);
  served_as_asked_ =
      job_.prompt.size() == asked_.size() && std::equal(asked_.begin(), asked_.end(), job_.prompt.begin());
  if (cancel_pending_) session_->cancel();
  // A guest (a continuation) is nobody's prompt again: the disk keeps nothing of it.
  staging_active_ = slot_.staging && via != cache_via::stash && stages_disk();
  if (!staging_active_) {
    phase_ = phase::running;
    out.step_again = true;
    return out;
  }
  // What this prefill writes is the disk's to decide (its index): asked before the first step.
  disk_plan_request rq;
  rq.prompt = job_.prompt;
  rq.resume = o.at;
  rq.exact = o.exact;
  rq.session_key = job_.session_key;
  if (const client_request* c = job_.client(); c && c->user_start >= 0)
    rq.user_start = static_cast<std::size_t>(c->user_start);
  out.disk_plan = std::move(rq);
  phase_ = phase::planning;
  return out;
}

board_events generation_run::planned(const disk_write_lines& lines) {
  if (phase_ != phase::planning) return {};
  const std::vector<token_id> served(job_.prompt.begin(), job_.prompt.end());
  slot_.staging->begin(served, lines);
  phase_ = phase::running;
  board_events out;
  out.sink = job_.sink;
  out.step_again = true;
  return out;
}

void generation_run::cleared(const std::vector<cache_tier>& done) {
  if (phase_ == phase::restoring) replan_ = true;
  if (std::find(done.begin(), done.end(), cache_tier::disk) != done.end())
    staging_active_ = false;  // the running request writes nothing more
}

// A generation cut short (a restart, a client gone) by an identical request: its durable
// checkpoint, read and verified by the disk, applied whole into the slot's engine and the session
// resumed from it, the output so far replayed. False (the engine reset, the checkpoint dropped
// when it does not resume) when it cannot be taken.
bool generation_run::resume_checkpoint(const verified_checkpoint& c, board_events& out) {
  engine& e = *slot_.eng;
  e.abandon_prefill();
  try {
    disk_service::apply_checkpoint(c, e.cache_state());
  } catch (const std::exception& ex) {  // an allocation or a copy failed midway: the engine is unknown
    log_warn() << "restoring a generation checkpoint failed (" << ex.what() << ")";
    slot_.tiers->clear(cache_tier::resident);
    e.reset();
    return false;
  }
  const checkpoint_meta& meta = c.read.meta;
  slot_.tiers->expect(info_of(job_));
  // The rows are the checkpoint's now: the resident prefix's are gone.
  slot_.tiers->clear(cache_tier::resident);
  job_.sampling.seed = meta.seed;
  generation_job g = session_job();
  g.resume_output.assign(meta.tokens.begin() + static_cast<long>(meta.prompt_tokens), meta.tokens.end());
  try {
    slot_.set_media(job_, &encoded_);
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
  slot_.guarded([&] { slot_.tiers->begin(o, e.cache_state()); });
  out.generations_started.push_back(job_key_);
  job_.cache = x_cache_info{};
  job_.cache.source = cache_source::checkpoint;
  job_.cache.resumed_at = static_cast<long>(e.length());
  job_.cache.restore_ms = static_cast<double>(steady_ns() - start_ns_) / 1e6;
  next_checkpoint_ = session_->output_ids().size() + slot_.checkpoint_every();
  served_as_asked_ = true;
  source_ = cache_source::checkpoint;
  return true;
}

}  // namespace anchorage
