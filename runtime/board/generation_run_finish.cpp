// The generation run's steps and end: the tiers' anchors and the disk's staging after each
// prefill chunk, checkpoints while it decodes, and what the slot's stores keep at the end.
#include "runtime/board/generation_run.hpp"
#include "runtime/text/output/end_record_builder.hpp"

namespace anchorage {

void generation_run::after_prefill_chunk(board_events& out) {
  engine& e = *slot_.eng;
  slot_.guarded([&] { slot_.tiers->after_prefill_step(e.cache_state(), e.where()); });
  if (!staging_active_) return;
  try {
    slot_.staging->after_prefill_step(e.cache_state());
  } catch (const std::exception& ex) {
    log_warn() << "staging a disk write failed (" << ex.what() << ")";
  }
  slot_.take_submissions(out);
}

// Every --generation-checkpoint-tokens output tokens of a decode: the whole state staged and
// written behind.
void generation_run::after_tokens(board_events& out) {
  const std::size_t every = slot_.checkpoint_every();
  // A served prompt the end alignment changed is not the one an identical request sends: its
  // checkpoint could never be found again.
  if (every == 0 || job_key_ == 0 || !served_as_asked_ || !session_->checkpointable()) return;
  const auto& ids = session_->output_ids();
  if (ids.size() < next_checkpoint_) return;
  next_checkpoint_ = ids.size() + every;
  checkpoint_meta meta;
  meta.key_hash = job_key_;
  meta.seed = job_.sampling.seed;
  meta.seed_explicit = job_.sampling.seed_explicit;
  meta.prompt_tokens = job_.prompt.size();
  meta.tokens.assign(job_.prompt.begin(), job_.prompt.end());
  meta.tokens.insert(meta.tokens.end(), ids.begin(), ids.end());
  if (slot_.eng->length() + 1 != meta.tokens.size()) return;
  try {
    slot_.staging->stage_checkpoint(slot_.eng->cache_state(), meta);
  } catch (const std::exception& e) {
    log_warn() << "staging a generation checkpoint failed (" << e.what() << ")";
  }
  slot_.take_submissions(out);
}

// The tiers keep what this request leaves: the end anchor and the session snapshot, once the
// whole prompt was forwarded (a request cancelled inside its prefill leaves its anchors only).
void generation_run::keep_end() {
  engine& e = *slot_.eng;
  const generation_session& s = *session_;
  const std::vector<token_id> served(job_.prompt.begin(), job_.prompt.end());
  generation_outcome g;
  g.served = &served;
  g.output = &s.output_ids();
  g.hidden = s.hidden_spans();
  g.reasoning_end = s.reasoning_end();
  g.starts_in_reasoning = job_.rules.starts_in_reasoning;
  g.rows = e.length();
  g.tok = s.tok();
  slot_.guarded([&] { slot_.tiers->end_generation(e.cache_state(), e.where(), build_end_record(g)); });
}

// A finished generation of a determined request: its ids and finish reason kept for the next
// identical one. A cancelled one is not (its output was cut short).
void generation_run::keep_response() {
  if (!response_key_ || !slot_.responses) return;
  const run_finish reason = session_->finish_reason();
  if (reason == run_finish::stop || reason == run_finish::length)
    slot_.responses->put(std::move(*response_key_), cached_response{session_->output_ids(), reason});
  response_key_.reset();
}

void generation_run::keep(board_events& out) {
  const generation_session& s = *session_;
  engine& e = *slot_.eng;
  // A generation that ended (not one cut short) needs its checkpoints no more.
  if (slot_.checkpoint_every() > 0 && job_key_ != 0 && s.finish_reason() != run_finish::cancelled)
    out.generations_finished.push_back(job_key_);
  const bool forwarded = e.length() >= job_.prompt.size();
  if (keeps_end() && forwarded) keep_end();
  // What the engine read and wrote, for the suffix store (a continuation's too: its rows above the
  // end anchor were read and written like any request's).
  if (leaves_conversation() && forwarded) {
    auto ids = std::make_shared<std::vector<token_id>>(job_.prompt.begin(), job_.prompt.end());
    ids->insert(ids->end(), s.output_ids().begin(), s.output_ids().end());
    out.suffix_add = std::move(ids);
  }
  // The slot's end anchor is this request's conversation's now (a guest's leaves it as it was).
  if (leaves_conversation() && slot_.tiers->running_via() != cache_via::stash) {
    slot_.end_session = job_.session_key;
    slot_.end_opencode = job_.client() && job_.client()->opencode;
  }
  slot_.guarded([&] { slot_.tiers->finish(e.cache_state()); });
  keep_response();
}

void generation_run::finish_staging(board_events& out) {
  if (!staging_active_) return;
  try {
    slot_.staging->finish(slot_.eng->cache_state());
  } catch (const std::exception& ex) {
    log_warn() << "staging a disk write failed (" << ex.what() << ")";
  }
  slot_.take_submissions(out);
  staging_active_ = false;
}

void generation_run::finish(board_events& out) {
  keep(out);
  finish_staging(out);
  report(out);
}

}  // namespace anchorage
