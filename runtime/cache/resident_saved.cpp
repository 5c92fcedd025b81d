// The resident prefix's set-aside prompts: the pinned head and the parked session (docs/CACHES.md,
// "Interruptions").
#include <algorithm>
#include <stdexcept>

#include "runtime/cache/resident_prefix.hpp"
#include "runtime/core/token_prefix.hpp"

namespace anchorage {
namespace {

// Up to `n` of `positions` (sorted), spread evenly, the last one always among them.
std::vector<std::size_t> spread(const std::vector<std::size_t>& positions, std::size_t n) {
  if (positions.size() <= n) return positions;
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(positions[(i + 1) * positions.size() / n - 1]);
  return out;
}

}  // namespace

bool resident_prefix::set_aside(const state_adapter& state, kernels::backend where, cache_via kind,
                                std::size_t from) {
  if (auto it = saved_.find(kind); it != saved_.end()) {
    release_saved(it->second);
    saved_.erase(it);
  }
  const std::size_t rows_held = tokens_.size();
  if (from >= rows_held || from > taint_) return false;
  const state_layout& l = state.layout();
  const std::size_t section_b = state_copy::bytes_for(l, 0);
  const std::size_t row_b = std::max<std::size_t>(l.row_bytes(), 1);

  // Which anchors go with the rows: a pinned head keeps up to 8 spread over it, a parked
  // session its newest 4 (the next turn resumes near its end), up to 4 more spread over its
  // older ones (a client that rewrites its prompt at a moving point, as Qwen Code moves its
  // reminders to the newest user message, parts below the newest), and its end anchor.
  std::vector<std::size_t> above;
  for (const auto& [pos, stamp] : anchors_.positions())
    if (pos > from) above.push_back(pos);
  std::vector<std::size_t> chosen;
  if (kind == cache_via::park) {
    auto by_age = anchors_.positions();
    std::vector<std::pair<std::uint64_t, std::size_t>> newest;
    for (std::size_t p : above) newest.emplace_back(by_age[p], p);
    std::sort(newest.begin(), newest.end(), std::greater<>());
    std::vector<std::size_t> older;
    for (std::size_t i = 0; i < newest.size(); ++i) (i < 4 ? chosen : older).push_back(newest[i].second);
    std::sort(older.begin(), older.end());
    const std::vector<std::size_t> spread_older = spread(older, 4);
    chosen.insert(chosen.end(), spread_older.begin(), spread_older.end());
    std::sort(chosen.begin(), chosen.end());
  } else {
    chosen = spread(above, 8);
  }
  const bool with_end =
      kind == cache_via::park && end_ && end_->rows.size() <= rows_held && end_->rows.size() > from;

  // As many rows from `from` as the pool holds beside the anchors that stand on them.
  const std::size_t avail = budget_.free(pool_of(kind));
  const std::size_t extras = chosen.size() * section_b + (with_end ? section_b : 0);
  std::size_t end = avail > extras ? std::min(rows_held, from + (avail - extras) / row_b) : from;
  chosen.erase(std::remove_if(chosen.begin(), chosen.end(), [end](std::size_t p) { return p > end; }),
               chosen.end());
  const bool keep_end = with_end && end_->rows.size() <= end;
  // The anchors that did not fit leave room for more rows.
  const std::size_t kept_extras = chosen.size() * section_b + (keep_end ? section_b : 0);
  if (avail > kept_extras) end = std::min(rows_held, from + (avail - kept_extras) / row_b);
  if (end <= from || (chosen.empty() && !keep_end)) {
    ++set_aside_refusals;
    return false;
  }
  saved_prompt s;
  s.kind = kind;
  s.bytes = row_copy::bytes_for(l, from, end) + chosen.size() * section_b + (keep_end ? section_b : 0);
  if (!budget_.reserve(pool_of(kind), s.bytes)) {
    ++set_aside_refusals;
    return false;
  }
  try {
    s.rows = row_copy::take(state, where, from, end);
  } catch (...) {
    budget_.release(pool_of(kind), s.bytes);
    ++set_aside_refusals;
    return false;
  }
  for (std::size_t p : chosen)
    if (auto c = anchors_.extract(p)) s.anchors.emplace(p, std::move(*c));
  // Anchors that could not be extracted were not there: give back what they were counted for.
  const std::size_t missing = (chosen.size() - s.anchors.size()) * section_b;
  budget_.release(pool_of(kind), missing);
  s.bytes -= missing;
  if (keep_end) {
    s.end = std::move(end_);
    s.end_copy = std::move(end_copy_);
    budget_.release(pool_, s.end_copy.bytes());
    end_copy_ = state_copy{};
    end_.reset();
  }
  s.tokens.assign(tokens_.begin(), tokens_.begin() + static_cast<long>(end));
  s.taint = std::min(taint_, end);
  for (const auto& r : reasoning_)
    if (r.second < end) s.reasoning.push_back(r);
  for (const auto& h : hidden_)
    if (h.second <= end) s.hidden.push_back(h);
  for (const auto& a : answers_)
    if (a.second <= end) s.answers.push_back(a);
  saved_[kind] = std::move(s);
  return true;
}

const saved_prompt* resident_prefix::saved(cache_via kind) const {
  auto it = saved_.find(kind);
  return it == saved_.end() ? nullptr : &it->second;
}

std::optional<resume_offer> resident_prefix::offer_saved(const saved_prompt& s,
                                                         const std::vector<token_id>& prompt) const {
  const std::size_t from = s.rows.first();
  // The rows below `from` are not in the copy: they must still be in place, with the same tokens
  // and a cold prefill's bits.
  if (prompt.empty() || from > taint_ || common_prefix(tokens_, s.tokens) < from) return std::nullopt;
  std::optional<resume_offer> best;
  const std::size_t shared = common_prefix(s.tokens, prompt);
  const std::size_t limit = std::min({shared, prompt.size() - 1, s.taint});
  auto it = s.anchors.upper_bound(limit);
  if (it != s.anchors.begin()) {
    resume_offer o;
    o.source = cache_source::resident;
    o.at = std::prev(it)->first;
    o.served = prompt;
    o.exact_to = o.at;
    o.via = s.kind;
    best = std::move(o);
  }
  if (s.end && opts_.end_anchor) {
    const std::size_t e = s.end->rows.size();
    if (!best || e > best->at) {
      if (auto a = align_to_end(*s.end, prompt, opts_.end_align)) {
        resume_offer o;
        o.source = cache_source::end;
        o.at = e;
        o.served = std::move(a->served);
        o.exact = false;
        o.exact_to = std::min(s.taint, e);
        o.aligned = a->used_hidden || a->used_reasoning || a->used_whitespace || a->used_text;
        o.dropped = std::move(a->dropped);
        o.via = s.kind;
        best = std::move(o);
      }
    }
  }
  return best;
}

void resident_prefix::bring_back(state_adapter& into, kernels::backend where, const resume_offer& o) {
  auto it = saved_.find(o.via);
  if (it == saved_.end())
    throw std::logic_error(std::string("resident_prefix: no ") + to_string(o.via) + " to bring back");
  saved_prompt s = std::move(it->second);
  saved_.erase(it);
  // Its bytes leave the pool as it comes back. For a moment the copy and the parked rows in
  // place are both held (the seed swaps a block at a time instead).
  budget_.release(pool_of(s.kind), s.bytes);
  const std::size_t from = s.rows.first();
  // A parked session comes back by swapping: the other session's rows it overwrites are parked.
  if (s.kind == cache_via::park) set_aside(into, where, cache_via::park, from);
  anchors_.drop_above(from);
  drop_end();
  s.rows.restore(into);
  tokens_ = s.tokens;
  taint_ = s.taint;
  reasoning_ = s.reasoning;
  hidden_ = s.hidden;
  answers_ = s.answers;
  for (auto& [pos, copy] : s.anchors) anchors_.adopt(pos, std::move(copy));
  if (s.end && anchors_.reserve_evicting(s.end_copy.bytes())) {
    end_copy_ = std::move(s.end_copy);
    end_ = std::move(s.end);
  }
  if (o.source == cache_source::end) {
    if (!end_ || end_->rows.size() != o.at)
      throw std::logic_error("resident_prefix: the parked end anchor did not fit");
    end_copy_.restore(into, o.at);
    return;
  }
  const state_copy* c = anchors_.at(o.at);
  if (!c)
    throw std::logic_error(std::string("resident_prefix: the ") + to_string(o.via) + " anchor at " +
                           std::to_string(o.at) + " did not fit");
  c->restore(into, o.at);
}

void resident_prefix::release_saved(saved_prompt& s) {
  budget_.release(pool_of(s.kind), s.bytes);
  s.bytes = 0;
}

void resident_prefix::clear_saved() {
  for (auto& [kind, s] : saved_) release_saved(s);
  saved_.clear();
}

}  // namespace anchorage
