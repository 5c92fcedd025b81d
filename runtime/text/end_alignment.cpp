#include "runtime/text/end_alignment.hpp"

#include <algorithm>
#include <iterator>

#include "runtime/text/tokenizer.hpp"

namespace anchorage {

namespace {

// The walk of R[prompt_len, e) against C, rule by rule (see end_alignment.hpp). i indexes R,
// j indexes C; every step consumes at least one token of R or C, or fails.
class end_walk {
 public:
  end_walk(const end_record& r, const std::vector<token_id>& client, bool end_align, std::size_t from)
      : r_(r), rows_(r.rows), client_(client), tok_(r.tok), end_align_(end_align), i_(from), j_(from) {}

  // True when every token of R was matched or skipped; matched() is then C's position.
  bool run() {
    const std::size_t e = rows_.size();
    while (i_ < e) {
      if (skip_reasoning() || skip_hidden()) continue;
      if (end_align_ &&
          (tok_.is_whitespace(rows_[i_]) || (j_ < client_.size() && tok_.is_whitespace(client_[j_])))) {
        if (!align_whitespace()) return false;
        continue;
      }
      if (j_ == client_.size() || rows_[i_] != client_[j_]) return false;
      ++i_;
      ++j_;
    }
    return true;
  }

  std::size_t matched() const { return j_; }
  bool used_hidden = false;
  bool used_reasoning = false;
  bool used_whitespace = false;

 private:
  // A position of R where a whitespace run of R stops and which counts as a boundary: the end of
  // R, either end of the reasoning span, either end of a hidden span.
  bool is_boundary(std::size_t q) const {
    if (q == rows_.size()) return true;
    return at_span_end(r_.reasoning, q) || at_span_end(r_.hidden, q);
  }

  // q is the start or the end of one of `spans` (sorted, disjoint).
  static bool at_span_end(const std::vector<token_span>& spans, std::size_t q) {
    const auto starts_before = [](const token_span& s, std::size_t v) { return s.first < v; };
    const auto it = std::lower_bound(spans.begin(), spans.end(), q, starts_before);
    if (it != spans.end() && it->first == q) return true;
    return it != spans.begin() && std::prev(it)->second == q;
  }

  // If i_ lies in a hidden span, moves it past the span.
  bool skip_hidden() {
    const auto& h = r_.hidden;
    while (next_hidden_ < h.size() && h[next_hidden_].second <= i_) ++next_hidden_;
    if (next_hidden_ == h.size() || h[next_hidden_].first > i_) return false;
    i_ = h[next_hidden_].second;
    used_hidden = true;
    return true;
  }

  // The reasoning rule, decided once per span at the first position at or past its begin. If
  // the client's copy holds an empty block there (whitespace, then </think>) that is not R's
  // own remaining reasoning token for token, R skips to the span's end and C to its </think>.
  bool skip_reasoning() {
    const auto& spans = r_.reasoning;
    if (next_reasoning_ == spans.size() || i_ < spans[next_reasoning_].first) return false;
    const std::size_t end = spans[next_reasoning_].second;
    ++next_reasoning_;
    if (i_ >= end) return false;
    std::size_t k = j_;
    while (k < client_.size() && tok_.is_whitespace(client_[k])) ++k;
    if (k == client_.size() || client_[k] != tok_.ids().think_close) return false;
    if (k - j_ == end - i_ && std::equal(client_.begin() + j_, client_.begin() + k, rows_.begin() + i_)) {
      return false;  // R's reasoning is that same whitespace: plain matching takes it
    }
    i_ = end;
    j_ = k;
    used_reasoning = true;
    return true;
  }

  // The whitespace rule (end_align): the runs at i_ and j_ are equal, or unequal and next to a
  // boundary; either way both are consumed. False otherwise.
  bool align_whitespace() {
    const std::size_t e = rows_.size();
    const std::size_t n = client_.size();
    std::size_t b = i_;
    while (b < e && tok_.is_whitespace(rows_[b]) && (b == i_ || !is_boundary(b))) ++b;
    std::size_t d = j_;
    while (d < n && tok_.is_whitespace(client_[d])) ++d;
    const bool equal =
        b - i_ == d - j_ && std::equal(rows_.begin() + i_, rows_.begin() + b, client_.begin() + j_);
    if (!equal && b == e) {
      // R ends in this run: C's run may go on past what the rows hold (the pending token, the
      // new message's whitespace). C's run inside R's: all of it stands for R's. R's inside
      // C's: only that much does; the rest is new. Neither: none of C's is R's.
      const std::size_t r_len = b - i_, c_len = d - j_;
      const std::size_t common = std::min(r_len, c_len);
      const bool nested = std::equal(rows_.begin() + i_, rows_.begin() + i_ + common, client_.begin() + j_);
      if (!nested)
        d = j_;
      else if (c_len > r_len)
        d = j_ + r_len;
      used_whitespace = true;
    } else if (!equal) {
      if (!runs_next_to_boundary(b, d)) return false;
      used_whitespace = true;
    }
    i_ = b;
    j_ = d;
    return true;
  }

  // The runs are R[a, b) and C[c, d), where a and c extend back over whitespace already matched
  // (R's stopping at a boundary).
  bool runs_next_to_boundary(std::size_t b, std::size_t d) const {
    std::size_t a = i_;
    while (a > 0 && tok_.is_whitespace(rows_[a - 1]) && !is_boundary(a)) --a;
    std::size_t c = j_;
    while (c > 0 && tok_.is_whitespace(client_[c - 1])) --c;
    return is_boundary(a) || is_boundary(b) || (a > 0 && tok_.is_special(rows_[a - 1])) ||
           (b < rows_.size() && tok_.is_special(rows_[b])) || (c > 0 && tok_.is_special(client_[c - 1])) ||
           (d < client_.size() && tok_.is_special(client_[d]));
  }

  const end_record& r_;
  const std::vector<token_id>& rows_;
  const std::vector<token_id>& client_;
  const tokenizer& tok_;
  const bool end_align_;
  std::size_t i_;
  std::size_t j_;
  std::size_t next_hidden_ = 0;     // first hidden span that may still lie at or after i_
  std::size_t next_reasoning_ = 0;  // first reasoning span whose rule is not decided yet
};

alignment make_alignment(const std::vector<token_id>& rows, const std::vector<token_id>& client,
                         std::size_t matched) {
  alignment out;
  out.served.reserve(rows.size() + (client.size() - matched));
  out.served.insert(out.served.end(), rows.begin(), rows.end());
  out.served.insert(out.served.end(), client.begin() + matched, client.end());
  out.client_matched = matched;
  return out;
}

// The alignment with R[0, head) matched token for token and the rules applied from there.
std::optional<alignment> walk_from(const end_record& r, const std::vector<token_id>& client, bool end_align,
                                   std::size_t head) {
  const std::vector<token_id>& rows = r.rows;
  if (client.size() < head ||
      !std::equal(rows.begin(), rows.begin() + static_cast<long>(head), client.begin())) {
    return std::nullopt;
  }
  end_walk walk(r, client, end_align, head);
  if (!walk.run() || walk.matched() >= client.size()) return std::nullopt;
  alignment out = make_alignment(rows, client, walk.matched());
  out.used_hidden = walk.used_hidden;
  out.used_reasoning = walk.used_reasoning;
  out.used_whitespace = walk.used_whitespace;
  return out;
}

}  // namespace

std::size_t end_record::rules_from() const {
  std::size_t from = prompt_len;
  if (!reasoning.empty()) from = std::min(from, reasoning.front().first);
  if (!hidden.empty()) from = std::min(from, hidden.front().first);
  return from;
}

bool well_formed(const end_record& r) {
  const std::size_t e = r.rows.size();
  if (r.prompt_len > e) return false;
  std::size_t previous_end = 0;
  for (const auto& [begin, end] : r.reasoning) {
    if (begin < previous_end || begin > end || end > e) return false;
    if (end < e && r.rows[end] != r.tok.ids().think_close) return false;
    previous_end = end;
  }
  previous_end = 0;
  for (const auto& [first, second] : r.hidden) {
    if (first < previous_end || first >= second || second > e) return false;
    previous_end = second;
  }
  return true;
}

std::optional<alignment> align_to_end(const end_record& r, const std::vector<token_id>& client,
                                      bool end_align) {
  if (!well_formed(r)) return std::nullopt;
  const std::vector<token_id>& rows = r.rows;
  const std::size_t e = rows.size();
  // The common case: the client sends back every token of R.
  if (client.size() > e && std::equal(rows.begin(), rows.end(), client.begin())) {
    alignment out;
    out.served = client;
    out.client_matched = e;
    return out;
  }
  const std::size_t head = r.rules_from();
  if (auto a = walk_from(r, client, end_align, head)) return a;
  // A BPE tokenizer encodes the prompt's "<think>\n" and the client's empty block
  // "<think>\n\n</think>" with different whitespace tokens ("\n" against "\n\n"): retry with the
  // head ending before the prompt's trailing whitespace when the first reasoning span starts
  // right after it, so the whitespace rule takes that run.
  if (end_align && !r.reasoning.empty() && r.reasoning.front().first == head) {
    std::size_t from = head;
    while (from > 0 && r.tok.is_whitespace(rows[from - 1])) --from;
    if (from < head) return walk_from(r, client, end_align, from);
  }
  return std::nullopt;
}

}  // namespace anchorage
