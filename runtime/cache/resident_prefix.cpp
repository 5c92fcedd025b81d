#include "runtime/cache/resident_prefix.hpp"

#include <algorithm>
#include <stdexcept>

#include "runtime/core/image_end.hpp"
#include "runtime/core/token_prefix.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

resident_prefix::resident_prefix(memory_budget& budget, resident_options opts, budget_pool pool)
    : budget_(budget), opts_(opts), pool_(pool), anchors_(budget, pool_, opts.keep_newest) {}

std::optional<resume_offer> resident_prefix::offer(const std::vector<token_id>& prompt) const {
  if (prompt.empty()) return std::nullopt;
  std::optional<resume_offer> best;
  const std::size_t shared = common_prefix(tokens_, prompt);
  const std::size_t limit = std::min({shared, prompt.size() - 1, taint_});
  if (auto p = anchors_.best_at_or_below(limit); p && *p > 0) {
    resume_offer o;
    o.source = cache_source::resident;
    o.at = *p;
    o.served = prompt;
    o.exact_to = *p;
    best = std::move(o);
  }
  // The end anchor stands only while the rows still hold its tokens (begin() drops it when a
  // request rewrites them; this checks it again).
  if (end_ && opts_.end_anchor && tokens_.size() >= end_->rows.size() &&
      std::equal(end_->rows.begin(), end_->rows.end(), tokens_.begin())) {
    const std::size_t e = end_->rows.size();
    if (!best || e > best->at) {
      if (auto a = align_to_end(*end_, prompt, opts_.end_align)) {
        resume_offer o;
        o.source = cache_source::end;
        o.at = e;
        o.served = std::move(a->served);
        o.exact = false;
        o.exact_to = std::min(taint_, e);
        o.aligned = a->used_hidden || a->used_reasoning || a->used_whitespace || a->used_text;
        o.dropped = std::move(a->dropped);
        best = std::move(o);
      }
    }
  }
  // A pinned head or a parked session that shares more with the prompt than the rows in place.
  for (const auto& [kind, saved] : saved_) {
    auto o = offer_saved(saved, prompt);
    if (o && (!best || o->at > best->at)) best = std::move(o);
  }
  return best;
}

void resident_prefix::restore(state_adapter& into, kernels::backend where, const resume_offer& o) {
  if (o.via == cache_via::pin || o.via == cache_via::park) return bring_back(into, where, o);
  if (o.source == cache_source::end) {
    if (!end_ || end_->rows.size() != o.at) throw std::logic_error("resident_prefix: the end anchor is gone");
    end_copy_.restore(into, o.at);
    return;
  }
  const state_copy* c = anchors_.at(o.at);
  if (!c) throw std::logic_error("resident_prefix: no anchor at " + std::to_string(o.at));
  c->restore(into, o.at);
}

void resident_prefix::begin(const resume_offer& o) {
  const std::size_t at = o.at;
  const std::size_t shared = common_prefix(tokens_, o.served);
  if (o.rows_replaced) {
    // Rows below `at` now come from a snapshot: an anchor stays only where both the old rows and
    // the snapshot's are a cold prefill's of the same tokens, and the end anchor's rows are gone.
    drop_end();
    // An exact snapshot's prefill then rewrites the shared rows above it bit for bit too.
    anchors_.drop_above(o.exact ? std::min(shared, taint_) : std::min({shared, taint_, o.exact_to, at}));
    taint_ = o.exact ? at : std::min(at, o.exact_to);
  } else {
    // Rows from `at` up are about to be rewritten. A grid prefill from an exact state rewrites
    // the rows the new prompt shares with the old one bit for bit, so those anchors stay.
    anchors_.drop_above(o.exact ? std::max(at, std::min(shared, taint_)) : at);
    if (end_ && at < end_->rows.size()) drop_end();
    taint_ = o.exact ? at : std::min(taint_, at);
  }
  // Spans of earlier answers stay where their rows stay (a restored snapshot's are not known).
  if (o.rows_replaced) {
    reasoning_.clear();
    hidden_.clear();
    answers_.clear();
  } else {
    auto below = [at](const token_span& s) { return s.second > at; };
    // A reasoning span must end at a </think> the rows hold: one that ended unclosed where this
    // request resumes is closed by the prompt's next token, when that is </think>.
    const auto& served = o.served;
    const token_id think_close = think_close_;
    reasoning_.erase(std::remove_if(reasoning_.begin(), reasoning_.end(),
                                    [at, &served, think_close](const token_span& s) {
                                      const bool closed_here =
                                          s.second == at && at < served.size() && served[at] == think_close;
                                      return s.second > at || (s.second == at && !closed_here);
                                    }),
                     reasoning_.end());
    hidden_.erase(std::remove_if(hidden_.begin(), hidden_.end(), below), hidden_.end());
    // An answer the new prompt resumes inside keeps its part below `at`.
    answers_.erase(
        std::remove_if(answers_.begin(), answers_.end(), [at](const token_span& s) { return s.first >= at; }),
        answers_.end());
    if (!answers_.empty()) answers_.back().second = std::min(answers_.back().second, at);
    keep_hidden(o.dropped);
  }
  exact_run_ = o.exact;
  served_ = o.served;
  tokens_.assign(o.served.begin(), o.served.begin() + static_cast<long>(at));
}

void resident_prefix::keep_hidden(const std::vector<token_span>& blocks) {
  for (const token_span& d : blocks) {
    auto inside = [&d](const token_span& s) { return s.first >= d.first && s.second <= d.second; };
    reasoning_.erase(std::remove_if(reasoning_.begin(), reasoning_.end(), inside), reasoning_.end());
    hidden_.erase(std::remove_if(hidden_.begin(), hidden_.end(), inside), hidden_.end());
    hidden_.insert(std::upper_bound(hidden_.begin(), hidden_.end(), d), d);
  }
}

void resident_prefix::after_prefill_step(const state_adapter& state, kernels::backend where) {
  const std::size_t len = state.valid_length();
  if (len > served_.size()) return;  // cleared while this prefill ran: nothing to track
  tokens_.assign(served_.begin(), served_.begin() + static_cast<long>(len));
  const std::size_t grid = static_cast<std::size_t>(state.layout().grid);
  // An anchor at every line, and right after every image: the engine ends a chunk there too
  // (engine.hpp), so a prompt that parts after an image resumes after it, bit for bit.
  if (!exact_run_ || len == 0) return;
  if (len % grid != 0 && !image_ends_at(served_, len)) return;
  taint_ = len;
  anchors_.take(state, where);
}

void resident_prefix::end_generation(const state_adapter& state, kernels::backend where, end_record record) {
  const std::size_t e = state.valid_length();
  if (record.rows.size() != e)
    throw std::logic_error("resident_prefix: the end record does not match the rows");
  tokens_ = record.rows;
  taint_ = std::min(taint_, record.prompt_len);
  // The earlier answers' spans lie below the prompt's end; the record's are the output's.
  auto merged = [](std::vector<token_span> earlier, const std::vector<token_span>& output, std::size_t p) {
    earlier.erase(
        std::remove_if(earlier.begin(), earlier.end(), [p](const token_span& s) { return s.second > p; }),
        earlier.end());
    earlier.insert(earlier.end(), output.begin(), output.end());
    return earlier;
  };
  record.reasoning = merged(reasoning_, record.reasoning, record.prompt_len);
  record.hidden = merged(hidden_, record.hidden, record.prompt_len);
  record.answers = merged(answers_, record.answers, record.prompt_len);
  reasoning_ = record.reasoning;
  hidden_ = record.hidden;
  answers_ = record.answers;
  think_close_ = record.tok.ids().think_close;
  exact_run_ = false;
  served_.clear();
  drop_end();
  if (!opts_.end_anchor || e == 0) return;
  const std::size_t bytes = state_copy::bytes_for(state.layout(), 0);
  if (!anchors_.reserve_evicting(bytes)) {
    ++end_refusals_;
    return;
  }
  try {
    end_copy_ = state_copy::take(state, where, 0);
  } catch (...) {
    budget_.release(pool_, bytes);  // a failed copy holds nothing
    ++end_refusals_;
    return;
  }
  end_ = std::move(record);
}

void resident_prefix::adopt(adopted_prompt p) {
  anchors_.clear();
  drop_end();
  tokens_ = std::move(p.tokens);
  taint_ = std::min(p.taint, tokens_.size());
  reasoning_ = std::move(p.reasoning);
  hidden_ = std::move(p.hidden);
  answers_ = std::move(p.answers);
  think_close_ = p.think_close;
  served_.clear();
  exact_run_ = false;
  for (auto& [pos, copy] : p.anchors)
    if (pos <= taint_ && pos <= tokens_.size()) anchors_.adopt(pos, std::move(copy));
  if (p.end && opts_.end_anchor && !p.end_copy.empty() && p.end->rows.size() <= tokens_.size() &&
      std::equal(p.end->rows.begin(), p.end->rows.end(), tokens_.begin()) &&
      anchors_.reserve_evicting(p.end_copy.bytes())) {
    end_copy_ = std::move(p.end_copy);
    end_ = std::move(p.end);
  }
}

void resident_prefix::drop_end() {
  if (!end_copy_.empty()) budget_.release(pool_, end_copy_.bytes());
  end_copy_ = state_copy{};
  end_.reset();
}

void resident_prefix::clear() {
  clear_saved();
  anchors_.clear();
  drop_end();
  tokens_.clear();
  served_.clear();
  reasoning_.clear();
  hidden_.clear();
  answers_.clear();
  taint_ = 0;
  exact_run_ = false;
}

}  // namespace anchorage
