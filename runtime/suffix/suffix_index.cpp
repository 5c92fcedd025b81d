#include "runtime/suffix/suffix_index.hpp"

#include <algorithm>
#include <cassert>

#include "runtime/suffix/suffix_array.hpp"

namespace anchorage {

suffix_index suffix_index::build(const token_id* ids, std::size_t n,
                                 const std::vector<std::size_t>& seg_starts) {
  suffix_index index;
  index.end_ = n;
  for (std::size_t s : seg_starts)
    if (s < n) index.seg_starts_.push_back(s);
  if (n == 0) return index;
  assert(!index.seg_starts_.empty() && index.seg_starts_.front() == 0);

  // Dense alphabet: 0 the sentinel, 1 the separator, 2.. the ids present, in id order.
  token_id max_id = 0;
  for (std::size_t i = 0; i < n; ++i) {
    assert(ids[i] >= 0);
    max_id = std::max(max_id, ids[i]);
  }
  // A table by id when the ids are a vocabulary's (dense enough); a sorted list otherwise.
  const bool by_table = static_cast<std::size_t>(max_id) < std::max<std::size_t>(4 * n, std::size_t{1} << 20);
  std::vector<std::int32_t> rank;
  std::vector<token_id> present;
  std::int32_t alphabet = 2;
  if (by_table) {
    rank.assign(static_cast<std::size_t>(max_id) + 1, 0);
    for (std::size_t i = 0; i < n; ++i) rank[static_cast<std::size_t>(ids[i])] = 1;
    for (auto& r : rank)
      if (r) r = alphabet++;
  } else {
    present.assign(ids, ids + n);
    std::sort(present.begin(), present.end());
    present.erase(std::unique(present.begin(), present.end()), present.end());
    alphabet += static_cast<std::int32_t>(present.size());
  }
  auto symbol_of = [&](token_id id) {
    if (by_table) return rank[static_cast<std::size_t>(id)];
    return 2 +
           static_cast<std::int32_t>(std::lower_bound(present.begin(), present.end(), id) - present.begin());
  };

  const std::size_t segments = index.seg_starts_.size();
  std::vector<std::int32_t> text;
  text.reserve(n + segments + 1);
  std::vector<std::uint32_t> flat_of;  // text position -> flat position, or UINT32_MAX for separators
  flat_of.reserve(n + segments + 1);
  for (std::size_t s = 0; s < segments; ++s) {
    const std::size_t b = index.seg_starts_[s], e = s + 1 < segments ? index.seg_starts_[s + 1] : n;
    for (std::size_t i = b; i < e; ++i) {
      text.push_back(symbol_of(ids[i]));
      flat_of.push_back(static_cast<std::uint32_t>(i));
    }
    text.push_back(1);
    flat_of.push_back(UINT32_MAX);
  }
  text.push_back(0);
  flat_of.push_back(UINT32_MAX);
  rank = {};
  present = {};

  const std::vector<std::int32_t> sa = build_suffix_array(text, alphabet);
  text.clear();
  text.shrink_to_fit();
  index.sa_.reserve(n);
  for (std::int32_t t : sa) {
    const std::uint32_t p = flat_of[static_cast<std::size_t>(t)];
    if (p != UINT32_MAX) index.sa_.push_back(p);
  }
  return index;
}

std::size_t suffix_index::segment_end(std::size_t p) const {
  const auto next = std::upper_bound(seg_starts_.begin(), seg_starts_.end(), p);
  return next == seg_starts_.end() ? end_ : *next;
}

namespace {
// -1, 0 or 1 as the suffix at p (ending at e) compares with pattern[0, len) cut to its length.
int compare_prefix(const token_id* ids, std::size_t p, std::size_t e, const token_id* pattern,
                   std::size_t len) {
  for (std::size_t d = 0; d < len; ++d) {
    if (p + d >= e) return -1;
    if (ids[p + d] != pattern[d]) return ids[p + d] < pattern[d] ? -1 : 1;
  }
  return 0;
}
}  // namespace

sa_range suffix_index::find(const token_id* ids, const token_id* pattern, std::size_t len) const {
  auto cmp_at = [&](std::size_t slot) {
    const std::size_t p = sa_[slot];
    return compare_prefix(ids, p, segment_end(p), pattern, len);
  };
  std::size_t lo = 0, hi = sa_.size();
  while (lo < hi) {  // first slot not below the pattern
    const std::size_t mid = lo + (hi - lo) / 2;
    if (cmp_at(mid) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  std::size_t first = lo;
  hi = sa_.size();
  while (lo < hi) {  // first slot above it
    const std::size_t mid = lo + (hi - lo) / 2;
    if (cmp_at(mid) <= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return {first, lo};
}

sa_range suffix_index::narrow(const token_id* ids, sa_range r, std::size_t d, token_id id) const {
  std::size_t lo = r.lo, hi = r.hi;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (symbol(ids, mid, d) < id)
      lo = mid + 1;
    else
      hi = mid;
  }
  const std::size_t first = lo;
  hi = r.hi;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (symbol(ids, mid, d) <= id)
      lo = mid + 1;
    else
      hi = mid;
  }
  return {first, lo};
}

}  // namespace anchorage
