#include "runtime/tiers/held_record.hpp"

#include <algorithm>

#include "runtime/core/token_prefix.hpp"

namespace anchorage {

namespace {

bool is_prefix_of(const std::vector<token_id>& a, const std::vector<token_id>& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// How far `prompt` reaches into one held sequence: the depth shared (below its last token) and
// the deepest held line at or below it that a start could use.
struct reach {
  std::size_t shared = 0;
  std::size_t line = 0;
};

reach reach_of(const held_sequence& e, const std::vector<token_id>& prompt, std::size_t grid,
               bool end_align) {
  reach r;
  const std::vector<token_id>& rows = e.rows.rows;
  r.shared = std::min(common_prefix(rows, prompt), prompt.size() - 1);
  // The end anchor's alignment needs its head matched token for token: none when nothing is.
  if (e.end_anchor && r.shared > 0 && align_to_end(e.rows, prompt, end_align)) {
    r.shared = rows.size();
    r.line = rows.size();
    return r;
  }
  if (grid > 0) r.line = std::min(r.shared, e.rows.prompt_len) / grid * grid;
  return r;
}

}  // namespace

held_record::held_record(std::size_t max_entries, std::size_t max_tokens)
    : max_entries_(std::max<std::size_t>(1, max_entries)), max_tokens_(max_tokens) {}

void held_record::add(held_sequence s) {
  if (s.rows.rows.empty()) return;
  for (auto it = entries_.begin(); it != entries_.end();) {
    if ((!s.session.empty() && it->session == s.session) || is_prefix_of(it->rows.rows, s.rows.rows)) {
      tokens_ -= it->rows.rows.size();
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  tokens_ += s.rows.rows.size();
  entries_.push_back(std::move(s));
  while (entries_.size() > 1 && (entries_.size() > max_entries_ || tokens_ > max_tokens_)) {
    tokens_ -= entries_.front().rows.rows.size();
    entries_.pop_front();
  }
}

void held_record::clear() {
  entries_.clear();
  tokens_ = 0;
}

std::optional<miss> classify_miss(const held_record& held, const std::vector<token_id>& prompt,
                                  const request_start& s, std::size_t grid, bool end_align) {
  if (prompt.empty()) return std::nullopt;
  const held_sequence* best = nullptr;
  reach most;
  const held_sequence* own = nullptr;
  reach own_reach;
  for (const held_sequence& e : held.entries()) {  // oldest first: a tie goes to the newest
    const reach r = reach_of(e, prompt, grid, end_align);
    if (!best || r.shared > most.shared || (r.shared == most.shared && r.line >= most.line)) {
      best = &e;
      most = r;
    }
    if (!s.session.empty() && e.session == s.session) {
      own = &e;
      own_reach = r;
    }
  }
  miss m;
  // What the tiers below the record held count too: a disk anchor offered, or declined by the
  // cost rule, is a line the server held (after a restart the record knows nothing of it).
  m.shared = std::max({most.shared, s.foreign_at, s.declined_at, s.failed_at});
  if (m.shared == 0) {
    if (s.resumed > 0) return std::nullopt;  // from something the record does not know (a restart's)
    m.reason = miss_reason::no_shared_prefix;
    return m;
  }
  if (s.resumed >= m.shared) return std::nullopt;
  m.tokens = m.shared - s.resumed;
  if (s.failed_checks) {
    m.reason = miss_reason::verification_failed;
  } else if (s.stale) {
    m.reason = miss_reason::stale_offer;
  } else if (s.declined_at > s.resumed) {
    m.reason = miss_reason::cost_rule;
  } else if (s.foreign_at >= most.shared) {
    m.reason = miss_reason::other_fingerprint;
  } else if (s.resumed < most.line) {
    m.reason = best->refused ? miss_reason::budget_refused : miss_reason::evicted;
  } else if (own && own_reach.shared > 0 && own_reach.shared < own->rows.rows.size()) {
    m.reason = miss_reason::client_rewrote;
  } else if (most.line == 0) {
    m.reason = miss_reason::no_shared_prefix;
  } else {
    m.reason = miss_reason::between_anchors;
  }
  return m;
}

void miss_judge::expect(const std::string& session) {
  start_ = request_start{};
  start_.session = session;
  judging_ = false;
  last_.reset();
  ending_.reset();
}

void miss_judge::planned(std::size_t declined_at, std::size_t foreign_at) {
  start_.declined_at = declined_at;
  start_.foreign_at = foreign_at;
  judging_ = true;
}

void miss_judge::judged(std::size_t resumed, const std::vector<token_id>& prompt, std::size_t grid,
                        bool end_align) {
  if (!judging_) return;
  start_.resumed = resumed;
  last_ = classify_miss(*held_, prompt, start_, grid, end_align);
  if (!last_) return;
  miss_count& c = counts_[last_->reason];
  ++c.requests;
  c.tokens += static_cast<long long>(last_->tokens);
}

void miss_judge::finished(bool refused) {
  if (ending_) {
    ending_->refused = refused;
    held_->add(std::move(*ending_));
    ending_.reset();
  }
  judging_ = false;
}

}  // namespace anchorage
