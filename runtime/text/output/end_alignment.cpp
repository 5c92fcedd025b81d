#include "runtime/text/output/end_alignment.hpp"

#include <algorithm>
#include <iterator>

#include "runtime/text/output/end_text_match.hpp"
#include "runtime/text/tokenizer/tokenizer.hpp"

namespace anchorage {

namespace {

constexpr std::size_t none = static_cast<std::size_t>(-1);

// The <think> that opens reasoning span `s`: the position of a <think> right before the span,
// whitespace tokens between them allowed; `none` when there is none.
std::size_t opener_of(const end_record& r, const token_span& s) {
  std::size_t q = std::min(s.first, r.rows.size());
  while (q > 0 && r.tok.is_whitespace(r.rows[q - 1])) --q;
  if (q > 0 && r.rows[q - 1] == r.tok.ids().think_open) return q - 1;
  return none;
}

// The walk of R[prompt_len, e) against C, rule by rule (see end_alignment.hpp). i indexes R,
// j indexes C; every step consumes at least one token of R or C, or fails.
class end_walk {
 public:
  end_walk(const end_record& r, const std::vector<token_id>& client, bool end_align, std::size_t from)
      : r_(r),
        rows_(r.rows),
        client_(client),
        tok_(r.tok),
        end_align_(end_align),
        i_(from),
        j_(from),
        exact_i_(from),
        exact_j_(from),
        boundaries_(boundaries_of(r)) {}

  // True when every token of R was matched or skipped; matched() is then C's position.
  bool run() {
    const std::size_t e = rows_.size();
    while (i_ < e) {
      if (skip_reasoning() || skip_hidden() || skip_dropped_block()) {
        mark();
        continue;
      }
      if (j_ < client_.size() && rows_[i_] == client_[j_]) {
        ++i_;
        ++j_;
        continue;
      }
      const bool at_whitespace =
          tok_.is_whitespace(rows_[i_]) || (j_ < client_.size() && tok_.is_whitespace(client_[j_]));
      if (!align_text() && !(end_align_ && at_whitespace && align_whitespace()) && !skip_to_last_close())
        return false;
      mark();
    }
    return true;
  }

  std::size_t matched() const { return j_; }
  const std::vector<token_id>& bridge() const { return bridge_; }
  bool used_hidden = false;
  bool used_reasoning = false;
  bool used_whitespace = false;
  bool used_text = false;
  std::vector<token_span> dropped;

 private:
  void mark() {
    exact_i_ = i_;
    exact_j_ = j_;
  }

  // A position of R where a whitespace run of R stops and which counts as a boundary: the end of
  // R, either end of a reasoning span, either end of a hidden span, the <think> that opens a
  // reasoning span.
  bool is_boundary(std::size_t q) const {
    return std::binary_search(boundaries_.begin(), boundaries_.end(), q);
  }

  // The next boundary position after i_ (e when none).
  std::size_t next_boundary() const { return *std::upper_bound(boundaries_.begin(), boundaries_.end(), i_); }

  // Every boundary position of R, sorted, e last; made once per walk.
  static std::vector<std::size_t> boundaries_of(const end_record& r) {
    std::vector<std::size_t> b;
    for (const auto* spans : {&r.reasoning, &r.hidden})
      for (const auto& [first, second] : *spans) {
        b.push_back(first);
        b.push_back(second);
      }
    for (const auto& sp : r.reasoning)
      if (const std::size_t o = opener_of(r, sp); o != none) b.push_back(o);
    b.push_back(r.rows.size());
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    return b;
  }

  // If i_ lies in a hidden span, moves it past the span.
  bool skip_hidden() {
    const auto& h = r_.hidden;
    while (next_hidden_ < h.size() && h[next_hidden_].second <= i_) ++next_hidden_;
    if (next_hidden_ == h.size() || h[next_hidden_].first > i_) return false;
    i_ = h[next_hidden_].second;
    skipped_to_ = i_;
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
    skipped_to_ = end;
    used_reasoning = true;
    return true;
  }

  // The dropped-block rule: at the <think> that opens the next reasoning span, a client's copy
  // that holds no <think> there (a template that renders an earlier answer without its block)
  // skips R's whole block: the reasoning, its </think> and the whitespace after it.
  bool skip_dropped_block() {
    const auto& spans = r_.reasoning;
    if (next_reasoning_ == spans.size() || opener_of(r_, spans[next_reasoning_]) != i_) return false;
    if (j_ < client_.size() && client_[j_] == tok_.ids().think_open) return false;
    const std::size_t e = rows_.size();
    std::size_t to = spans[next_reasoning_].second;
    ++next_reasoning_;
    if (to < e) ++to;  // its </think>
    while (to < e && tok_.is_whitespace(rows_[to]) && !is_boundary(to)) ++to;
    dropped.emplace_back(i_, to);
    i_ = to;
    skipped_to_ = to;
    used_reasoning = true;
    return true;
  }

  // The split-content rule: a template that reads a "...</think>" in an answer's content as its
  // reasoning (Qwen3's and Qwen3.5's, for a content the parser left whole, thinking off) renders
  // only what follows the last </think> (which may be the pending token). Tried when nothing else matches:
  // back to where the walk stood after the last rule, inside an answer, R skips past the answer's last
  // </think> and its whitespace. The skipped stretch is listed in `dropped`.
  bool skip_to_last_close() {
    const std::size_t from = exact_i_;
    const auto& answers = r_.answers;
    auto it = std::upper_bound(answers.begin(), answers.end(), from,
                               [](std::size_t v, const token_span& sp) { return v < sp.first; });
    if (it == answers.begin() || std::prev(it)->second <= from) return false;
    const std::size_t end = std::prev(it)->second;
    std::size_t k = end;
    // The pending token, shown but not in the rows, may be that last </think>.
    if (end != rows_.size() || r_.pending != tok_.ids().think_close) {
      while (k > from && rows_[k - 1] != tok_.ids().think_close) --k;
      if (k == from) return false;
    }
    while (k < end && tok_.is_whitespace(rows_[k]) && !is_boundary(k)) ++k;
    dropped.emplace_back(from, k);
    i_ = k;
    j_ = exact_j_;
    skipped_to_ = k;
    used_reasoning = true;
    return true;
  }

  // The text rule (end_text_match.hpp): R's tokens up to the next boundary and C's up to its next
  // special token hold the same text, as the server showed it and the client sent it back.
  // Leading whitespace may differ where R's stretch starts a text (after a special token, a
  // boundary or a skipped span), trailing whitespace where end_align allows it.
  bool align_text() {
    const std::size_t from_i = i_, from_j = j_;
    // Start where the text does: back over the tokens matched one for one since the last rule
    // (a character may have matched by its first byte alone), not past a special or a boundary.
    while (i_ > exact_i_ && j_ > exact_j_ && !tok_.is_special(rows_[i_ - 1]) &&
           !is_image_row(rows_[i_ - 1]) && !is_boundary(i_)) {
      --i_;
      --j_;
    }
    const bool starts_text = i_ == 0 || tok_.is_special(rows_[i_ - 1]) || is_image_row(rows_[i_ - 1]) ||
                             is_boundary(i_) || skipped_to_ == i_;
    end_text::query q{rows_, client_, tok_};
    q.i = i_;
    q.j = j_;
    q.limit = next_boundary();
    q.lead_trim = end_align_ && starts_text;
    q.trail_trim = end_align_;
    auto m = end_text::match_text(q);
    if (!m) {
      i_ = from_i;
      j_ = from_j;
      return false;
    }
    i_ = m->rows_end;
    j_ = m->client_end;
    bridge_ = std::move(m->bridge);
    (m->trimmed ? used_whitespace : used_text) = true;
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
    // A special token of R counts when C holds it there too (one the server never showed does not).
    const bool r_before = a > 0 && tok_.is_special(rows_[a - 1]) && c > 0 && client_[c - 1] == rows_[a - 1];
    const bool r_after =
        b < rows_.size() && tok_.is_special(rows_[b]) && d < client_.size() && client_[d] == rows_[b];
    return is_boundary(a) || is_boundary(b) || r_before || r_after ||
           (c > 0 && tok_.is_special(client_[c - 1])) || (d < client_.size() && tok_.is_special(client_[d]));
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
  std::size_t skipped_to_ = none;   // where the last skipped span ended
  // Where the walk stood after the last rule applied; R and C matched one for one since.
  std::size_t exact_i_, exact_j_;
  std::vector<token_id> bridge_;  // the text rule's bridge at R's end (end_text::match)
  const std::vector<std::size_t> boundaries_;
};

alignment make_alignment(const std::vector<token_id>& rows, const std::vector<token_id>& client,
                         std::size_t matched, const std::vector<token_id>& bridge = {}) {
  alignment out;
  out.served.reserve(rows.size() + bridge.size() + (client.size() - matched));
  out.served.insert(out.served.end(), rows.begin(), rows.end());
  out.served.insert(out.served.end(), bridge.begin(), bridge.end());
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
  if (!walk.run() || (walk.bridge().empty() && walk.matched() >= client.size())) return std::nullopt;
  alignment out = make_alignment(rows, client, walk.matched(), walk.bridge());
  out.used_hidden = walk.used_hidden;
  out.used_reasoning = walk.used_reasoning;
  out.used_whitespace = walk.used_whitespace;
  out.used_text = walk.used_text;
  out.dropped = walk.dropped;
  return out;
}

}  // namespace

std::size_t end_record::rules_from() const {
  std::size_t from = prompt_len;
  if (!reasoning.empty()) {
    from = std::min(from, reasoning.front().first);
    from = std::min(from, opener_of(*this, reasoning.front()));
  }
  if (!hidden.empty()) from = std::min(from, hidden.front().first);
  if (!answers.empty()) from = std::min(from, answers.front().first);
  // A BPE merges the whitespace before an answer with the answer's own leading whitespace when
  // the client re-tokenises the text ("assistant\n" then "\t\n" becomes one "\n\t\n"), also
  // across a block the client drops ("assistant\n<think>..." rendered as "assistant\n\t\n"):
  // the rules start at the whitespace run before.
  from = std::min(from, rows.size());
  while (from > 0 && tok.is_whitespace(rows[from - 1]) && !tok.is_special(rows[from - 1])) --from;
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
  for (const auto* spans : {&r.hidden, &r.answers}) {
    previous_end = 0;
    for (const auto& [first, second] : *spans) {
      if (first < previous_end || first >= second || second > e) return false;
      previous_end = second;
    }
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
  return walk_from(r, client, end_align, r.rules_from());
}

}  // namespace anchorage
