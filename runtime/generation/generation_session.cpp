#include "runtime/generation/generation_session.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {
namespace {

// Whether the parser, before any output, leaves `t` undecided: whitespace (held) and the
// specials, reserved and undefined ids it drops. Anything else but <think> ends the chance to
// open reasoning.
bool keeps_output_undecided(const tokenizer& tok, token_id t) {
  const chat_ids& c = tok.ids();
  if (t == c.think_close || t == c.tool_call_open || t == c.tool_call_close) return false;
  if (tok.is_special(t) || !tok.is_defined(t)) return true;
  return tok.token_text(t).find_first_not_of(" \t\n\r") == std::string::npos;  // "" for reserved ids
}

// The longest prefix of s of at most n bytes that ends on a UTF-8 character boundary.
std::size_t utf8_cut(const std::string& s, std::size_t n) {
  if (n >= s.size()) return s.size();
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return n;
}

}  // namespace

std::size_t reasoning_close_length(const tokenizer& tok) {
  return tok.encode(reasoning_close_phrase, /*parse_special=*/true).size();
}

generation_session::generation_session(engine& e, generation_job job)
    : engine_(e),
      job_(std::move(job)),
      parser_(job_.rules.parse_reasoning, job_.rules.parse_tool_calls, job_.rules.starts_in_reasoning,
              job_.tok, job_.rules.tools ? *job_.rules.tools : nlohmann::ordered_json(nullptr)) {
  job_.gen.sampling.allowed = job_.tok.defined_mask();
  if (job_.rules.parse_reasoning && job_.rules.reasoning_budget >= 0 &&
      job_.tok.ids().think_close != no_token) {
    close_.ids = job_.tok.encode(reasoning_close_phrase, /*parse_special=*/true);
    close_.hidden = static_cast<std::size_t>(
        std::find(close_.ids.begin(), close_.ids.end(), job_.tok.ids().think_close) - close_.ids.begin());
  }
  if (job_.rules.parse_reasoning)
    think_ = job_.rules.starts_in_reasoning ? think_state::open : think_state::before;
  for (const auto& s : job_.rules.stop_strings) longest_stop_ = std::max(longest_stop_, s.size());
  if (job_.speculative.on() && engine_.where() == kernels::backend::cpu)
    drafter_.emplace(job_.speculative, job_.lookup);
  const std::size_t from = engine_.length();
  start_ = from;
  if (job_.replay_finish) {
    replay();
    if (!done_) finish(*job_.replay_finish, replayed_);
    return;
  }
  if (!job_.resume_output.empty()) {
    if (from + 1 != job_.prompt.size() + job_.resume_output.size()) {
      throw std::invalid_argument("resume: the engine holds " + std::to_string(from) +
                                  " rows, the checkpoint needs prompt + output - 1 = " +
                                  std::to_string(job_.prompt.size() + job_.resume_output.size() - 1));
    }
    replay();
    return;
  }
  if (from > job_.prompt.size()) throw std::logic_error("engine holds more rows than the prompt");
  engine_.begin_prefill({job_.prompt.begin() + static_cast<long>(from), job_.prompt.end()});
}

// The live decode loop of step() with the tokens taken from resume_output: the generator's
// choice between a forced and a sampled token, its max_tokens, and the session's bookkeeping.
void generation_session::replay() {
  maybe_close_reasoning();  // a budget of 0, as start_decoding() does
  const auto& stops = job_.gen.stop_tokens;
  for (const token_id t : job_.resume_output) {
    if (done_ || out_of_tokens()) {
      throw std::invalid_argument("resume: output ids past the end of the generation");
    }
    if (t < 0 || t >= engine_.config().vocab) {
      throw std::invalid_argument("resume: output id " + std::to_string(t) + " is outside the vocabulary");
    }
    const bool forced = !replay_.forced.empty();
    if (forced) {
      if (t != replay_.forced.front()) {
        throw std::invalid_argument("resume: output id " + std::to_string(t) + " at " +
                                    std::to_string(ids_.size()) + " where " +
                                    std::to_string(replay_.forced.front()) + " was forced");
      }
      replay_.forced.pop_front();
    } else {
      if (std::find(stops.begin(), stops.end(), t) != stops.end()) {
        throw std::invalid_argument("resume: a sampled stop token among the output ids");
      }
      ++replay_.sampled;
    }
    ++output_tokens_;
    ids_.push_back(t);
    on_token(t, forced, replayed_);
  }
  if (!done_ && out_of_tokens()) finish(run_finish::length, replayed_);
}

void generation_session::start_decoding() {
  if (job_.resume_output.empty()) {
    gen_.emplace(engine_, job_.gen);
    maybe_close_reasoning();  // a budget of 0
    return;
  }
  generation_request r = job_.gen;
  r.max_tokens -= static_cast<int>(ids_.size());  // not done: at least 1 left
  r.first_step = replay_.sampled;
  r.pending = ids_.back();
  r.forced.assign(replay_.forced.begin(), replay_.forced.end());
  gen_.emplace(engine_, std::move(r));
}

// Whether the generator (or, while replaying, the generator the live run had) is done: a live
// run only calls this between tokens, where the only way to be done is max_tokens.
bool generation_session::out_of_tokens() const {
  return gen_ ? gen_->done() : static_cast<long>(ids_.size()) >= job_.gen.max_tokens;
}

generation_session::step_result generation_session::step(int block) {
  step_result r;
  r.deltas = std::move(replayed_);
  replayed_.clear();
  if (done_) return r;
  if (cancelled_) {
    finish(run_finish::cancelled, r.deltas);
    return r;
  }
  if (prefilling()) {
    engine_.prefill_step();
    prefilled_ = static_cast<long>(engine_.length() - start_);
    r.prefill_finished = !prefilling();
    return r;
  }
  if (!gen_) start_decoding();
  while (r.tokens < block && !gen_->done() && !done_) {
    if (drafter_ && gen_->to_forward()) {
      verify_round(r);
      continue;
    }
    const auto t = gen_->step();
    if (!t) break;
    after_token(t, r);
  }
  if (!done_ && gen_->done()) finish(*gen_->reason(), r.deltas);
  return r;
}

bool generation_session::batchable() const {
  return !done_ && !cancelled_ && replayed_.empty() && !prefilling() && gen_;
}

std::optional<token_id> generation_session::batch_token() const {
  if (!batchable()) return std::nullopt;
  return gen_->to_forward();
}

generation_session::step_result generation_session::step_forwarded() {
  if (!batchable()) throw std::logic_error("generation_session: no batched step to take");
  round_ = draft_proposal{};
  round_rows_.assign(1, *gen_->pending());
  return step_rows();
}

// Drafts for a round of at most max_rows rows: none past max_tokens (a round emits one token more
// than it accepts) or past the context.
std::size_t generation_session::draft_room(std::size_t max_rows) const {
  const std::size_t ctx = static_cast<std::size_t>(engine_.config().ctx_size);
  const std::size_t rows_left = ctx > engine_.length() ? ctx - engine_.length() : 0;
  const long tokens_left = job_.gen.max_tokens - static_cast<long>(ids_.size());
  const std::size_t rows =
      std::min({max_rows, rows_left, static_cast<std::size_t>(std::max(tokens_left, 0L))});
  return rows > 0 ? rows - 1 : 0;
}

std::vector<token_id> generation_session::batch_rows(std::size_t max_rows) {
  const auto t = batch_token();
  if (!t) throw std::logic_error("generation_session: no batched step to take");
  round_ = draft_proposal{};
  if (drafter_)
    round_ = drafter_->propose(engine_, job_.prompt, ids_, gen_->queued(), job_.gen.sampling.allowed.get(),
                               draft_room(max_rows));
  round_rows_.assign(1, *t);
  round_rows_.insert(round_rows_.end(), round_.ids.begin(), round_.ids.end());
  return round_rows_;
}

generation_session::step_result generation_session::step_rows() {
  step_result r;
  if (!batchable() || round_rows_.empty())
    throw std::logic_error("generation_session: no batched step to take");
  take_rows(r);
  if (!done_ && gen_->done()) finish(*gen_->reason(), r.deltas);
  return r;
}

// A solo step's round: the drafts, the forward, the rows read.
void generation_session::verify_round(step_result& r) {
  const std::size_t grid = static_cast<std::size_t>(engine_.config().grid);
  const std::vector<token_id> rows = batch_rows(grid);
  engine_.forward(rows);
  take_rows(r);
}

// Row i of the forwarded rows gives the token after rows[i], emitted as a plain step emits it; the
// next row counts only when its draft is that token. The rows past the last one read are cut
// back, so the engine holds the prompt and every emitted id but the last, as after a plain step.
void generation_session::take_rows(step_result& r) {
  const std::vector<token_id> rows = std::move(round_rows_);
  round_rows_.clear();
  std::size_t read = 0, accepted = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto t = rows.size() == 1 ? gen_->step_forwarded() : gen_->step_forwarded(engine_.row_logits(i));
    read = i + 1;
    if (!t) break;  // a sampled stop token: pending, never forwarded
    after_token(t, r);
    if (done_ || gen_->done() || i + 1 == rows.size() || *t != rows[i + 1]) break;
    ++accepted;
  }
  if (rows.size() > 1) engine_.keep_rows(read);
  if (drafter_) drafter_->settle(round_, accepted);
  round_ = draft_proposal{};
}

// One emitted token's bookkeeping (a stop string may end the session here).
void generation_session::after_token(std::optional<token_id> t, step_result& r) {
  ++r.tokens;
  ++output_tokens_;
  ids_.push_back(*t);
  on_token(*t, gen_->last_forced(), r.deltas);
}

void generation_session::on_token(token_id t, bool forced, std::vector<output_delta>& into) {
  if (forced && hidden_left_ > 0) {  // the close phrase before </think>: not for the client
    --hidden_left_;
    const std::size_t i = ids_.size() - 1;
    if (!hidden_.empty() && hidden_.back().second == i) {
      ++hidden_.back().second;
    } else {
      hidden_.emplace_back(i, i + 1);
    }
    return;
  }
  track_reasoning(t);
  for (auto& d : parser_.feed(t)) emit(into, std::move(d));
}

void generation_session::track_reasoning(token_id t) {
  if (think_ == think_state::before) {
    if (t == job_.tok.ids().think_open) {
      think_ = think_state::open;
      maybe_close_reasoning();
    } else if (!keeps_output_undecided(job_.tok, t)) {
      think_ = think_state::none;
    }
  } else if (think_ == think_state::open) {
    if (t == job_.tok.ids().think_close) {
      think_ = think_state::closed;
      reasoning_end_ = ids_.size() - 1;
    } else {
      ++reasoning_tokens_;
      maybe_close_reasoning();
    }
  }
}

void generation_session::maybe_close_reasoning() {
  if (closing_ || think_ != think_state::open || job_.rules.reasoning_budget < 0 || close_.ids.empty() ||
      reasoning_tokens_ < job_.rules.reasoning_budget || out_of_tokens()) {
    return;
  }
  closing_ = true;
  hidden_left_ = close_.hidden;
  if (gen_) {
    gen_->force(close_.ids);
  } else {
    replay_.forced.insert(replay_.forced.end(), close_.ids.begin(), close_.ids.end());
  }
}

void generation_session::emit(std::vector<output_delta>& into, output_delta d) {
  if (d.what == output_delta::kind::reasoning) {
    out_.reasoning += d.text;
    into.push_back(std::move(d));
    return;
  }
  if (d.what == output_delta::kind::tool_call) {
    flush_held(into);
    out_.tool_calls.push_back(d.call);
    into.push_back(std::move(d));
    return;
  }
  if (longest_stop_ == 0) {
    out_.content += d.text;
    into.push_back(std::move(d));
    return;
  }
  held_ += d.text;
  std::size_t cut = std::string::npos;
  const std::string* matched = nullptr;
  for (const auto& s : job_.rules.stop_strings)
    if (const std::size_t at = held_.find(s); at < cut) {
      cut = at;
      matched = &s;
    }
  if (matched) {
    stop_string_ = *matched;
    held_.resize(cut);
    flush_held(into);
    done_ = true;
    finish_ = run_finish::stop;
    return;
  }
  // keep the last longest_stop_ - 1 bytes: they may begin a stop string
  const std::size_t keep = longest_stop_ - 1;
  if (held_.size() > keep) {
    const std::size_t n = utf8_cut(held_, held_.size() - keep);
    if (n > 0) {
      output_delta out;
      out.text = held_.substr(0, n);
      held_.erase(0, n);
      out_.content += out.text;
      into.push_back(std::move(out));
    }
  }
}

void generation_session::flush_held(std::vector<output_delta>& into) {
  if (held_.empty()) return;
  output_delta d;
  d.text = std::move(held_);
  held_.clear();
  out_.content += d.text;
  into.push_back(std::move(d));
}

void generation_session::finish(run_finish reason, std::vector<output_delta>& into) {
  for (auto& d : parser_.finish()) {
    emit(into, std::move(d));
    if (done_) return;
  }
  flush_held(into);
  done_ = true;
  finish_ = reason;
}

}  // namespace anchorage
