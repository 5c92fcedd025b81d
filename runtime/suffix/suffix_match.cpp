#include "runtime/suffix/suffix_match.hpp"

#include <algorithm>
#include <map>

namespace anchorage {
namespace {

// Where the segment holding position p starts and ends, in the whole log.
std::size_t segment_start(const suffix_corpus& c, std::size_t p) {
  const auto next = std::upper_bound(c.seg_starts->begin(), c.seg_starts->end(), p);
  return *(next - 1);
}
std::size_t segment_end(const suffix_corpus& c, std::size_t p) {
  const auto next = std::upper_bound(c.seg_starts->begin(), c.seg_starts->end(), p);
  return next == c.seg_starts->end() ? c.n : *next;
}

// The occurrences of a pattern (its length: depth) followed by at least one id: a range of the
// index (whose occurrences end before index.end()), and the start positions of the others.
struct cursor {
  const suffix_corpus& corpus;
  std::vector<token_id> pattern;
  std::size_t depth = 0, first_depth = 0;
  sa_range range;
  std::vector<std::size_t> starts;
  bool converted = false;  // the range was moved into starts
  std::size_t explicit_limit = 1024;

  // Occurrences the index no longer sees: the one whose id at `depth` would be the first id past
  // the index's end, in a segment that continues there. Only while the range is live (once
  // converted, starts holds it).
  void take_the_one_at_the_index_end() {
    const suffix_index& index = *corpus.index;
    const std::size_t ie = index.end();
    if (converted || depth <= first_depth || ie >= corpus.n || ie < depth) return;
    if (segment_start(corpus, ie) != segment_start(corpus, ie - 1)) return;  // a new segment starts there
    const std::size_t s = ie - depth;
    if (segment_start(corpus, ie - 1) > s) return;
    for (std::size_t d = 0; d < pattern.size(); ++d)
      if (corpus.at(s + d) != pattern[d]) return;
    starts.push_back(s);
  }

  void convert_if_small() {
    if (converted || range.size() > explicit_limit) return;
    for (std::size_t slot = range.lo; slot < range.hi; ++slot)
      if (corpus.index->symbol(corpus.ids, slot, depth) >= 0) starts.push_back(corpus.index->position(slot));
    range = {};
    converted = true;
  }

  std::map<token_id, std::uint64_t> continuations() const {
    std::map<token_id, std::uint64_t> counts;
    const suffix_index& index = *corpus.index;
    std::size_t slot = index.narrow(corpus.ids, range, depth, -1).hi;  // past the ended ones
    while (slot < range.hi) {
      const token_id id = index.symbol(corpus.ids, slot, depth);
      const sa_range group = index.narrow(corpus.ids, {slot, range.hi}, depth, id);
      counts[id] += group.size();
      slot = group.hi;
    }
    for (std::size_t s : starts)
      if (s + depth < segment_end(corpus, s)) ++counts[corpus.at(s + depth)];
    return counts;
  }

  void advance(token_id id) {
    if (!range.empty()) range = corpus.index->narrow(corpus.ids, range, depth, id);
    std::vector<std::size_t> kept;
    for (std::size_t s : starts)
      if (s + depth < segment_end(corpus, s) && corpus.at(s + depth) == id) kept.push_back(s);
    starts = std::move(kept);
    pattern.push_back(id);
    ++depth;
  }
};

// Finds the longest match and returns a cursor on its occurrences (depth 0 when none).
cursor find_longest(const suffix_corpus& corpus, const token_id* recent, std::size_t n, std::size_t min_len,
                    std::size_t max_match) {
  cursor cur{corpus, {}, 0, 0, {}, {}, false, 1024};
  min_len = std::max<std::size_t>(min_len, 1);
  const std::size_t limit = std::min(n, max_match);
  if (limit < min_len || corpus.n == 0) return cur;

  // The ids appended since the index was built: for each continuation position c there, the
  // length of the suffix of `recent` that ends just before it.
  const suffix_index& index = *corpus.index;
  std::vector<std::pair<std::size_t, std::size_t>> tail;  // (c, match length)
  std::size_t best_tail = 0;
  for (std::size_t c = std::max<std::size_t>(index.end(), 1); c < corpus.n; ++c) {
    if (corpus.at(c - 1) != recent[n - 1]) continue;
    const std::size_t start = segment_start(corpus, c);
    if (start == c) continue;
    std::size_t m = 1;
    while (m < limit && c - m > start && corpus.at(c - m - 1) == recent[n - m - 1]) ++m;
    if (m >= min_len) {
      tail.emplace_back(c, m);
      best_tail = std::max(best_tail, m);
    }
  }

  // The index: the longest l for which recent's suffix of length l occurs followed by an id. It
  // holds for l if it holds for l + 1, so a binary search finds it.
  auto occurs = [&](std::size_t l) {
    const sa_range r = index.find(corpus.ids, recent + n - l, l);
    return !r.empty() && index.symbol(corpus.ids, r.hi - 1, l) >= 0;
  };
  std::size_t lo = min_len, hi = limit, best_index = 0;
  while (lo <= hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (occurs(mid)) {
      best_index = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }

  const std::size_t length = std::max(best_index, best_tail);
  if (length == 0) return cur;
  cur.pattern.assign(recent + n - length, recent + n);
  cur.depth = cur.first_depth = length;
  if (best_index == length) cur.range = index.find(corpus.ids, recent + n - length, length);
  for (const auto& [c, m] : tail)
    if (m >= length) cur.starts.push_back(c - length);
  return cur;
}

std::vector<suffix_continuation> sorted(const std::map<token_id, std::uint64_t>& counts) {
  std::vector<suffix_continuation> out;
  for (const auto& [id, count] : counts) out.push_back({id, count});
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
  return out;
}

}  // namespace

suffix_match longest_match(const suffix_corpus& corpus, const token_id* recent, std::size_t n,
                           std::size_t min_len, const suffix_query_options& options) {
  suffix_match match;
  const cursor cur = find_longest(corpus, recent, n, min_len, options.max_match);
  if (cur.depth == 0) return match;
  match.length = cur.depth;
  match.continuations = sorted(cur.continuations());
  for (const auto& c : match.continuations) match.occurrences += c.count;
  if (match.continuations.size() > options.max_continuations)
    match.continuations.resize(options.max_continuations);
  return match;
}

std::vector<token_id> propose(const suffix_corpus& corpus, const token_id* recent, std::size_t n,
                              std::size_t max_draft, const suffix_query_options& options) {
  std::vector<token_id> draft;
  cursor cur = find_longest(corpus, recent, n, options.propose_min_match, options.max_match);
  if (cur.depth == 0) return draft;
  cur.explicit_limit = options.explicit_limit;
  double probability = 1.0;
  while (draft.size() < max_draft) {
    cur.take_the_one_at_the_index_end();
    cur.convert_if_small();
    const auto counts = cur.continuations();
    std::uint64_t total = 0;
    token_id best = 0;
    std::uint64_t best_count = 0;
    for (const auto& [id, count] : counts) {  // ascending ids: the first of equal counts wins
      total += count;
      if (id < 0) continue;  // an image's row is never drafted, but counts in the total
      if (count > best_count) {
        best = id;
        best_count = count;
      }
    }
    if (best_count == 0) break;  // nothing, or only an image's rows, follows: the draft stops before them
    probability *= static_cast<double>(best_count) / static_cast<double>(total);
    if (probability < options.min_probability) break;
    draft.push_back(best);
    cur.advance(best);
  }
  return draft;
}

}  // namespace anchorage
